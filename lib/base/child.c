/* SPDX-License-Identifier: MIT */
/*
 * fork and exec with bounds. posix_spawn cannot set rlimits, capabilities
 * or a user in the child, and setting them from the parent after the
 * start (prlimit) leaves the child unbounded for as long as it takes; so
 * the child sets its own, with plain system calls, which is all a child
 * of a threaded parent may do. The parent waits on a pidfd, so a deadline
 * costs no polling.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "log.h"
#include "child.h"

#define C(x) [CAP_##x] = #x
static const char *const cap_names[] = {
	C(CHOWN), C(DAC_OVERRIDE), C(DAC_READ_SEARCH), C(FOWNER),
	C(FSETID), C(KILL), C(SETGID), C(SETUID), C(SETPCAP),
	C(LINUX_IMMUTABLE), C(NET_BIND_SERVICE), C(NET_BROADCAST),
	C(NET_ADMIN), C(NET_RAW), C(IPC_LOCK), C(IPC_OWNER), C(SYS_MODULE),
	C(SYS_RAWIO), C(SYS_CHROOT), C(SYS_PTRACE), C(SYS_PACCT),
	C(SYS_ADMIN), C(SYS_BOOT), C(SYS_NICE), C(SYS_RESOURCE),
	C(SYS_TIME), C(SYS_TTY_CONFIG), C(MKNOD), C(LEASE), C(AUDIT_WRITE),
	C(AUDIT_CONTROL), C(SETFCAP), C(MAC_OVERRIDE), C(MAC_ADMIN),
	C(SYSLOG), C(WAKE_ALARM), C(BLOCK_SUSPEND), C(AUDIT_READ),
	C(PERFMON), C(BPF), C(CHECKPOINT_RESTORE),
};
#undef C
#define N_CAPS (int)(sizeof(cap_names) / sizeof(cap_names[0]))

const char *cpa_cap_name(int cap)
{
	static char lower[N_CAPS][24];

	if (cap < 0 || cap >= N_CAPS || !cap_names[cap])
		return NULL;
	if (!lower[cap][0])
		for (size_t i = 0; cap_names[cap][i] && i < 23; i++)
			lower[cap][i] = (char)tolower(
				(unsigned char)cap_names[cap][i]);
	return lower[cap];
}

int cpa_spawn_user(const char *name, struct cpa_spawn_user *u)
{
	struct passwd *pw = getpwnam(name);
	int n = CPA_SPAWN_MAX_GROUPS;

	if (!pw) {
		errno = ENOENT;
		return -1;
	}
	memset(u, 0, sizeof(*u));
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	if (getgrouplist(name, pw->pw_gid, u->groups, &n) < 0)
		n = CPA_SPAWN_MAX_GROUPS;	/* the first 64 are enough */
	u->n_groups = (size_t)n;
	return 0;
}

static bool executable(const char *p)
{
	return access(p, X_OK) == 0;
}

void cpa_find_tool(const char *name, char *out, size_t outlen)
{
	char self[PATH_MAX], *slash, *path, *save = NULL, *dir;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			/* installed side by side, or the build tree's
			 * TOOL/TOOL next to the running tool's own */
			if ((size_t)snprintf(out, outlen, "%s/%s", self,
					     name) < outlen && executable(out))
				return;
			if ((size_t)snprintf(out, outlen, "%s/../%s/%s", self,
					     name, name) < outlen &&
			    executable(out))
				return;
		}
	}
	path = cpa_strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	for (dir = strtok_r(path, ":", &save); dir;
	     dir = strtok_r(NULL, ":", &save)) {
		if ((size_t)snprintf(out, outlen, "%s/%s", dir, name) <
			    outlen && executable(out)) {
			free(path);
			return;
		}
	}
	free(path);
	snprintf(out, outlen, "%s", name);
}

/* ---- in the child: system calls only ---------------------------------- */

static bool kept(const int *caps, int cap)
{
	for (const int *k = caps; *k >= 0; k++)
		if (*k == cap)
			return true;
	return false;
}

/* Bounding set and inheritable set down to caps, ambient set empty: at
 * exec, root's permitted set becomes exactly what is kept. With own, the
 * permitted and effective sets too. */
static int limit_caps(const int *caps, bool own)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	for (int cap = 0; cap < 64; cap++) {
		if (kept(caps, cap))
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)) {
			if (errno == EINVAL)
				break;	/* past the kernel's last one */
			return -1;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) &&
	    errno != EINVAL)
		return -1;
	if (syscall(SYS_capget, &h, d))
		return -1;
	for (int i = 0; i < 2; i++) {
		uint32_t mask = 0;

		for (int b = 0; b < 32; b++)
			if (kept(caps, i * 32 + b))
				mask |= 1u << b;
		d[i].inheritable &= mask;
		if (own) {
			d[i].permitted &= mask;
			d[i].effective &= mask;
		}
	}
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

static int set_user(const struct cpa_spawn_user *u)
{
	if (setgroups(u->n_groups, u->groups) ||
	    setresgid(u->gid, u->gid, u->gid) ||
	    setresuid(u->uid, u->uid, u->uid))
		return -1;
	return 0;
}

/* A program built with AddressSanitizer (the whole tree is, for the
 * sanitized run of the suite) reserves terabytes of shadow memory at its
 * start, which no address-space or data limit admits: there the children
 * run without them, their CPU and file size bounds kept. */
#if defined(__SANITIZE_ADDRESS__)
#define CPA_NO_MEMORY_LIMITS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CPA_NO_MEMORY_LIMITS 1
#endif
#endif

static void set_limit(int resource, uint64_t soft, uint64_t hard)
{
	struct rlimit rl;

	if (!soft)
		return;
	/* never above a hard limit the parent already has */
	if (getrlimit(resource, &rl) == 0 && rl.rlim_max != RLIM_INFINITY) {
		if (hard > rl.rlim_max)
			hard = rl.rlim_max;
		if (soft > hard)
			soft = hard;
	}
	rl.rlim_cur = soft;
	rl.rlim_max = hard;
	setrlimit(resource, &rl);
}

/* Everything but the exec: 0, or -1 with errno and *what set. */
static int apply(const struct cpa_spawn *s, int null_fd, const char **what)
{
	const struct cpa_limits *l = s->limits;
	sigset_t none;
	int fd[3];

	/* a descriptor already at 0..2 must survive the dup2 of another
	 * onto it: each goes out of the way first */
	*what = "dup";
	for (int i = 0; i < 3; i++) {
		fd[i] = s->fd[i] >= 0 ? s->fd[i] : null_fd;
		if (fd[i] < 0) {
			errno = EBADF;
			return -1;
		}
		if (fd[i] < 3 && (fd[i] = fcntl(fd[i], F_DUPFD_CLOEXEC, 3)) < 0)
			return -1;
	}
	for (int i = 0; i < 3; i++)
		if (dup2(fd[i], i) < 0)
			return -1;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	*what = "setpgid";
	if (s->pgid >= 0 && setpgid(0, s->pgid))
		return -1;
	if (l) {
#ifndef CPA_NO_MEMORY_LIMITS
		set_limit(RLIMIT_AS, l->mem, l->mem);
		set_limit(RLIMIT_DATA, l->data, l->data);
#endif
		/* SIGXCPU at the soft limit says why; the hard one is the
		 * kernel's SIGKILL for a child that ignores it */
		set_limit(RLIMIT_CPU, l->cpu_s, l->cpu_s + 1);
		set_limit(RLIMIT_FSIZE, l->fsize, l->fsize);
	}
	if (geteuid() == 0) {
		static const int none_kept[] = { -1 };

		*what = "capabilities";
		if ((s->user || s->caps) &&
		    limit_caps(s->user ? none_kept : s->caps, false))
			return -1;
		*what = "switching user";
		if (s->user && set_user(s->user))
			return -1;
	}
	/* after the user change, which clears it */
	*what = "pdeathsig";
	if (s->death_sig && prctl(PR_SET_PDEATHSIG, s->death_sig, 0, 0, 0))
		return -1;
	*what = "no_new_privs";
	if (s->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	if (s->in_child)
		s->in_child(s->arg);
	*what = "exec";
	return 0;
}

/* In the child: execs, or reports errno to the parent and exits. */
static _Noreturn void child(const struct cpa_spawn *s, int null_fd,
			    int report)
{
	const char *what;
	int e;

	if (apply(s, null_fd, &what) == 0)
		execv(s->path, s->argv);
	e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int cpa_spawn_exec(const struct cpa_spawn *s, const char **what)
{
	if (apply(s, -1, what) == 0)
		execvp(s->path, s->argv);
	return -1;
}

int cpa_caps_keep(const int *caps)
{
	if (geteuid() != 0)
		return 0;
	return limit_caps(caps, true);
}

pid_t cpa_spawn(const struct cpa_spawn *s)
{
	int p[2], e = 0, null_fd = -1;
	ssize_t n;
	pid_t pid;

	if (s->fd[0] < 0 || s->fd[1] < 0 || s->fd[2] < 0) {
		null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null_fd < 0)
			return -1;
	}
	if (pipe2(p, O_CLOEXEC)) {
		e = errno;
		goto fail;
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(s, null_fd, p[1]);
	}
	e = errno;
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		goto fail;
	}
	/* set from both sides: whichever runs first, a signal to the group
	 * right after this reaches the child */
	if (s->pgid >= 0)
		setpgid(pid, s->pgid ? s->pgid : pid);
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (null_fd >= 0)
		close(null_fd);
	if (n <= 0)
		return pid;	/* the exec closed the pipe */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	errno = n == (ssize_t)sizeof(e) ? e : ECHILD;
	return -1;
fail:
	if (null_fd >= 0)
		close(null_fd);
	errno = e;
	return -1;
}

const char *cpa_limit_name(enum cpa_limit_hit hit)
{
	switch (hit) {
	case CPA_LIMIT_WALL:
		return "wall time";
	case CPA_LIMIT_CPU:
		return "CPU time";
	case CPA_LIMIT_MEM:
		return "memory";
	case CPA_LIMIT_FSIZE:
		return "file size";
	default:
		return NULL;
	}
}

enum cpa_limit_hit cpa_limit_of(int status, const struct cpa_limits *lim,
				const char *last_line)
{
	if (!lim)
		return CPA_LIMIT_NONE;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);

		if (sig == SIGXCPU && lim->cpu_s)
			return CPA_LIMIT_CPU;
		if (sig == SIGXFSZ && lim->fsize)
			return CPA_LIMIT_FSIZE;
	}
	if ((lim->mem || lim->data) && status && last_line &&
	    (strstr(last_line, "out of memory") ||
	     strstr(last_line, "Cannot allocate memory") ||
	     strstr(last_line, "Memory exhausted")))
		return CPA_LIMIT_MEM;
	return CPA_LIMIT_NONE;
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

int cpa_wait_until(pid_t pid, int64_t deadline_ms, int *status,
		   bool *killed)
{
	int pfd = deadline_ms >= 0 ? pidfd_of(pid) : -1;

	*killed = false;
	for (;;) {
		pid_t r = waitpid(pid, status, deadline_ms >= 0 ? WNOHANG : 0);
		int64_t left;

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			int e = errno;

			if (pfd >= 0)
				close(pfd);
			errno = e;
			return -1;
		}
		if (r < 0)
			continue;
		left = deadline_ms - cpa_mono_ms();
		if (left <= 0 && !*killed) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			*killed = true;
			deadline_ms = -1;	/* now a plain wait */
			continue;
		}
		if (pfd >= 0) {
			struct pollfd p = { pfd, POLLIN, 0 };

			poll(&p, 1, left > 60000 ? 60000 : (int)left);
		} else {
			struct timespec t = { 0, 10 * 1000 * 1000 };

			nanosleep(&t, NULL);
		}
	}
	if (pfd >= 0)
		close(pfd);
	return 0;
}
