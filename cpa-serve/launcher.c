/* SPDX-License-Identifier: MIT */
/*
 * The launcher: the only part of cpa-serve that keeps privileges. It runs
 * each job as `cpa-capture ... | cpa-unwind > stream file`, each stage
 * with the bounding set `cpa monitor` gives it (docs/security.md), and
 * reports when both have ended. When the server goes away, so do its
 * jobs: their captures are stopped and the launcher exits.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "buf.h"
#include "child.h"
#include "launcher.h"
#include "log.h"

/* Capabilities per stage, as scripts/cpa's stage_prefix gives them. */
static const int capture_caps[] = {
	CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, CAP_SYS_RESOURCE,
	CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, -1,
};
static const int unwind_caps[] = {
	CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_SYSLOG,
	CAP_KILL, CAP_DAC_OVERRIDE, CAP_CHOWN,	/* attaching to JVMs */
	-1,
};

struct running {
	char id[JOB_ID_LEN + 1];
	pid_t pid[2];		/* capture, unwind; 0 once reaped */
	int status[2];
	int64_t stop_at, kill_at;	/* cpa_mono_ms deadlines */
	bool timed_out;
};

static struct running *jobs;
static size_t n_jobs, cap_jobs;
static const char *capture_path, *unwind_path;
static uint64_t max_stream;

int launcher_send(int sock, const struct launch_msg *m, int out_fd,
		  int log_fd)
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (out_fd >= 0) {
		struct cmsghdr *c;
		int fds[2] = { out_fd, log_fd };

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(c), fds, sizeof(fds));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0
									 : -1;
}

/* Reads a message and the descriptors that came with it, if any. */
static int recv_with_fds(int sock, struct launch_msg *m, int fds[2])
{
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;
	ssize_t n;

	fds[0] = fds[1] = -1;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(2 * sizeof(int)))
			memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
	if (n != (ssize_t)sizeof(*m) || (msg.msg_flags & MSG_TRUNC)) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return -1;
	}
	m->id[JOB_ID_LEN] = 0;
	return 1;
}

int launcher_recv(int sock, struct launch_msg *m)
{
	int fds[2], rc = recv_with_fds(sock, m, fds);

	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rc;
}

/* In the child, before exec: only the stage's capabilities survive the
 * exec, as `setpriv --bounding-set` leaves them. */
static void limit_caps(const int *keep)
{
	if (geteuid() != 0)
		return;
	for (int cap = 0; cap < 64; cap++) {
		bool kept = false;

		for (const int *k = keep; *k >= 0; k++)
			kept |= *k == cap;
		if (!kept && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) &&
		    errno == EINVAL)
			break;	/* past the kernel's last capability */
	}
}

/* In the child, before exec (system calls only): the stage's bounding
 * set. */
static void stage_caps(void *arg)
{
	limit_caps(arg);
}

static pid_t start_stage(const char *path, char **argv, int in, int out,
			 int err, const int *caps, pid_t pgid,
			 const struct cpa_limits *lim)
{
	struct cpa_spawn s = { .path = path, .argv = argv,
			       .fd = { in, out, err }, .pgid = pgid,
			       .limits = lim, .in_child = stage_caps,
			       .arg = (void *)caps };

	return cpa_spawn(&s);
}

static int start_job(const struct launch_msg *m, int out_fd, int log_fd)
{
	const struct job_spec *s = &m->spec;
	const struct job_mode *jm;
	char duration[32], freq[32], target[96];
	char *cargv[16], *uargv[2];
	int n = 0, p[2], devnull;
	struct running *r;
	pid_t cap_pid, unw_pid;

	if (s->mode >= n_job_modes || out_fd < 0 || log_fd < 0)
		return -1;
	jm = &job_modes[s->mode];
	cargv[n++] = (char *)capture_path;
	snprintf(duration, sizeof(duration), "--duration=%us", s->duration_s);
	cargv[n++] = duration;
	if (jm->has_freq) {
		snprintf(freq, sizeof(freq), "--freq=%u", s->freq);
		cargv[n++] = freq;
	}
	for (int i = 0; jm->capture_args[i]; i++)
		cargv[n++] = (char *)jm->capture_args[i];
	if (s->scope == SCOPE_PID) {
		snprintf(target, sizeof(target), "--pid=%u", s->pid);
		cargv[n++] = target;
	} else if (s->scope == SCOPE_CONTAINER) {
		snprintf(target, sizeof(target), "--container=%.64s",
			 s->container_id);
		cargv[n++] = target;
	}
	cargv[n] = NULL;
	uargv[0] = (char *)unwind_path;
	uargv[1] = NULL;

	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || pipe2(p, O_CLOEXEC)) {
		if (devnull >= 0)
			close(devnull);
		return -1;
	}
	/* a stage's CPU time is bounded by what its duration can take
	 * (unwind has a loader thread beside its sample thread), its heap
	 * by what its caches are allowed many times over, the stream by
	 * --max-job-size */
	struct cpa_limits cap_lim = {
		.data = 512u << 20, .cpu_s = s->duration_s + LAUNCH_GRACE_S,
	}, unw_lim = {
		.data = 1u << 30, .cpu_s = 2 * s->duration_s + LAUNCH_GRACE_S,
		.fsize = max_stream,
	};

	cap_pid = start_stage(capture_path, cargv, devnull, p[1], log_fd,
			      capture_caps, 0, &cap_lim);
	if (cap_pid > 0) {
		unw_pid = start_stage(unwind_path, uargv, p[0], out_fd, log_fd,
				      unwind_caps, cap_pid, &unw_lim);
		if (unw_pid < 0)
			kill(cap_pid, SIGKILL);
	} else {
		unw_pid = -1;
	}
	close(p[0]);
	close(p[1]);
	close(devnull);
	if (cap_pid < 0 || unw_pid < 0)
		return -1;
	CPA_GROW(jobs, cap_jobs, n_jobs + 1);
	r = &jobs[n_jobs++];
	memset(r, 0, sizeof(*r));
	memcpy(r->id, m->id, sizeof(r->id));
	r->pid[0] = cap_pid;
	r->pid[1] = unw_pid;
	r->stop_at = cpa_mono_ms() +
		     ((int64_t)s->duration_s + LAUNCH_GRACE_S) * 1000;
	r->kill_at = r->stop_at + LAUNCH_KILL_S * 1000;
	return 0;
}

static struct running *find_job(const char *id)
{
	for (size_t i = 0; i < n_jobs; i++)
		if (!strcmp(jobs[i].id, id))
			return &jobs[i];
	return NULL;
}

static void report_end(int sock, struct running *r)
{
	struct launch_msg m;

	memset(&m, 0, sizeof(m));
	m.op = LAUNCH_ENDED;
	memcpy(m.id, r->id, sizeof(m.id));
	m.status[0] = r->status[0];
	m.status[1] = r->status[1];
	m.timed_out = r->timed_out;
	launcher_send(sock, &m, -1, -1);
	*r = jobs[--n_jobs];
}

static void reap(int sock)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (size_t i = 0; i < n_jobs; i++) {
			struct running *r = &jobs[i];

			for (int k = 0; k < 2; k++)
				if (r->pid[k] == pid) {
					r->pid[k] = 0;
					r->status[k] = st;
				}
			if (!r->pid[0] && !r->pid[1]) {
				report_end(sock, r);
				break;
			}
		}
	}
}

/* The server is gone: captures are stopped as at --duration's end, and
 * what does not end within 5 s is killed. */
static void stop_all(void)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };

	for (size_t i = 0; i < n_jobs; i++)
		if (jobs[i].pid[0])
			kill(jobs[i].pid[0], SIGINT);
	for (int t = 0; t < 100 && n_jobs; t++) {
		pid_t pid;
		int st;

		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			for (size_t i = 0; i < n_jobs; i++)
				for (int k = 0; k < 2; k++)
					if (jobs[i].pid[k] == pid)
						jobs[i].pid[k] = 0;
		for (size_t i = 0; i < n_jobs;)
			if (!jobs[i].pid[0] && !jobs[i].pid[1])
				jobs[i] = jobs[--n_jobs];
			else
				i++;
		nanosleep(&tick, NULL);
	}
	for (size_t i = 0; i < n_jobs; i++)
		for (int k = 0; k < 2; k++)
			if (jobs[i].pid[k])
				kill(jobs[i].pid[k], SIGKILL);
}

/* A job past its duration and grace is stopped as a stop request
 * would, and killed if that does not end it. Returns the poll timeout
 * to the next deadline. */
static int enforce_deadlines(void)
{
	int64_t now = cpa_mono_ms(), next = -1;

	for (size_t i = 0; i < n_jobs; i++) {
		struct running *r = &jobs[i];
		int64_t at;

		if (r->pid[0] && now >= r->stop_at && !r->timed_out) {
			kill(r->pid[0], SIGINT);
			r->timed_out = true;
		}
		if (now >= r->kill_at && (r->pid[0] || r->pid[1])) {
			kill(-(r->pid[0] ? r->pid[0] : r->pid[1]), SIGKILL);
			for (int k = 0; k < 2; k++)
				if (r->pid[k])
					kill(r->pid[k], SIGKILL);
			r->kill_at = now + 1000;
		}
		at = r->timed_out ? r->kill_at : r->stop_at;
		if (next < 0 || at < next)
			next = at;
	}
	if (next < 0)
		return -1;
	return next - now > 60000 ? 60000 : (int)(next - now);
}

static void launcher_loop(int sock)
{
	sigset_t set;
	int sfd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		cpa_die("launcher: signalfd: %s", strerror(errno));
	for (;;) {
		struct pollfd pf[2] = { { sock, POLLIN, 0 },
					{ sfd, POLLIN, 0 } };

		if (poll(pf, 2, enforce_deadlines()) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == sizeof(si) &&
			    si.ssi_signo != SIGCHLD)
				break;	/* SIGINT reaches the whole group */
			reap(sock);
		}
		if (pf[0].revents) {
			struct launch_msg m;
			int fds[2], rc = recv_with_fds(sock, &m, fds);
			struct running *r;

			if (rc == 0 || (rc < 0 && errno != EINTR &&
					errno != EAGAIN && fds[0] < 0 &&
					(pf[0].revents & (POLLHUP | POLLERR))))
				break;
			if (rc > 0 && m.op == LAUNCH_START &&
			    start_job(&m, fds[0], fds[1]) < 0) {
				struct launch_msg e = m;

				e.op = LAUNCH_ENDED;
				e.status[0] = e.status[1] = 127 << 8;
				launcher_send(sock, &e, -1, -1);
			}
			if (rc > 0 && m.op == LAUNCH_STOP &&
			    (r = find_job(m.id)) && r->pid[0])
				kill(r->pid[0], SIGINT);
			for (int i = 0; i < 2; i++)
				if (fds[i] >= 0)
					close(fds[i]);
		}
	}
	stop_all();
}

int launcher_start(const char *capture, const char *unwind,
		   uint64_t max_stream_bytes)
{
	int sv[2];
	pid_t parent = getpid(), pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		/* a server killed outright takes its launcher along */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(0);
		prctl(PR_SET_NAME, "cpa-serve-jobs");
		capture_path = capture;
		unwind_path = unwind;
		max_stream = max_stream_bytes;
		launcher_loop(sv[1]);
		free(jobs);
		_exit(0);
	}
	close(sv[1]);
	return sv[0];
}
