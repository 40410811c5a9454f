/* SPDX-License-Identifier: MIT */
/*
 * fork and exec with bounds. posix_spawn cannot set rlimits in the child,
 * and setting them from the parent after the start (prlimit) leaves the
 * child unbounded for as long as it takes; so the child sets its own,
 * with plain system calls, which is all a child of a threaded parent may
 * do. The parent waits on a pidfd, so a deadline costs no polling.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child.h"

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

static _Noreturn void child(const struct cpa_spawn *s, int null_fd)
{
	const struct cpa_limits *l = s->limits;
	sigset_t none;

	for (int i = 0; i < 3; i++) {
		int fd = s->fd[i] >= 0 ? s->fd[i] : null_fd;

		if (fd < 0 || dup2(fd, i) < 0)
			_exit(127);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setpgid(0, s->pgid);
	if (l) {
		set_limit(RLIMIT_AS, l->mem, l->mem);
		set_limit(RLIMIT_DATA, l->data, l->data);
		/* SIGXCPU at the soft limit says why; the hard one is the
		 * kernel's SIGKILL for a child that ignores it */
		set_limit(RLIMIT_CPU, l->cpu_s, l->cpu_s + 1);
		set_limit(RLIMIT_FSIZE, l->fsize, l->fsize);
	}
	if (s->in_child)
		s->in_child(s->arg);
	execv(s->path, s->argv);
	{
		static const char msg[] = ": cannot execute\n";

		if (write(2, s->path, strlen(s->path)) < 0 ||
		    write(2, msg, sizeof(msg) - 1) < 0)
			_exit(127);
	}
	_exit(127);
}

pid_t cpa_spawn(const struct cpa_spawn *s)
{
	int null_fd = -1;
	pid_t pid;

	if (s->fd[0] < 0 || s->fd[1] < 0 || s->fd[2] < 0) {
		null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null_fd < 0)
			return -1;
	}
	pid = fork();
	if (pid == 0)
		child(s, null_fd);
	if (pid > 0)	/* the child does it too: whichever runs first */
		setpgid(pid, s->pgid ? s->pgid : pid);
	if (null_fd >= 0) {
		int e = errno;

		close(null_fd);
		errno = e;
	}
	return pid;
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
