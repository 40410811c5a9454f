/* SPDX-License-Identifier: MIT */
/*
 * The launcher: the only part of cpa-serve that keeps privileges. It runs
 * each job as `cpa-capture ... | cpa-unwind > stream file` through
 * cpa-supervise, which gives each stage the privileges of its row in the
 * stage table (the same rows as `cpa monitor`'s, docs/security.md), and
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


#include "buf.h"
#include "launcher.h"
#include "log.h"
#include "child.h"
#include "targets.h"

struct running {
	char id[SPEC_ID_MAX + 1];
	pid_t pid;		/* its cpa-supervise; 0 once reaped */
	int report;		/* cpa-supervise --report-fd, read end */
	int64_t kill_at;	/* cpa_mono_ms: a supervisor still there */
};

static struct running *jobs;
static size_t n_jobs, cap_jobs;
static const char *supervise_path;
static uint64_t max_stream;
static unsigned grace_s;

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
	m->id[SPEC_ID_MAX] = 0;
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

/* A job is `cpa-supervise --once ... --stage=capture ... --stage=unwind`:
 * the supervisor gives each stage the privileges of its row in the stage
 * table and the bounds below, stops the job grace_s past its duration
 * (killing it LAUNCH_KILL_S later), and reports each stage's wait
 * status on a pipe when it ends. A job naming no pid but JVMs or a
 * binary (targets.h) is given the pids found now. */
static int start_job(const struct launch_msg *m, int out_fd, int log_fd)
{
	const struct job_spec *s = &m->spec;
	const struct job_mode *jm;
	char duration[32], freq[32], target[96], report[32], grace[32];
	char cap_stage[96], unw_stage[128], pids[4096 + 32], why[200];
	char *argv[24];
	int n = 0, p[2], devnull;
	struct running *r;
	struct cpa_spawn sp;
	pid_t pid;

	if (s->mode >= n_job_modes || out_fd < 0 || log_fd < 0)
		return -1;
	jm = &job_modes[s->mode];
	if (targets_needed(s)) {
		/* JVMs, or the processes running the binary: by pid */
		size_t len = (size_t)snprintf(pids, sizeof(pids), "%s=",
			jm->how == HOW_JAVA ? jm->capture_args[0] : "--pid");

		if (!targets_resolve(s, pids + len, sizeof(pids) - len, why,
				     sizeof(why))) {
			dprintf(log_fd, "cpa-serve: %s\n", why);
			return -1;
		}
	}
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull < 0 || pipe2(p, O_CLOEXEC)) {
		if (devnull >= 0)
			close(devnull);
		return -1;
	}
	argv[n++] = (char *)supervise_path;
	argv[n++] = "--once";
	snprintf(report, sizeof(report), "--report-fd=%d", p[1]);
	argv[n++] = report;
	snprintf(duration, sizeof(duration), "--duration=%llus",
		 (unsigned long long)s->duration_s);
	argv[n++] = duration;
	snprintf(grace, sizeof(grace), "--grace=%us", grace_s);
	argv[n++] = grace;
	/* a stage's CPU time is bounded by what its duration can take
	 * (unwind has a loader thread beside its sample thread), its heap
	 * by what its caches are allowed many times over, the stream by
	 * --max-job-size */
	snprintf(cap_stage, sizeof(cap_stage),
		 "--stage=capture,data=512M,cpu=%llus",
		 (unsigned long long)s->duration_s + 60);
	argv[n++] = cap_stage;
	if (jm->how == HOW_ONCPU) {
		snprintf(freq, sizeof(freq), "--freq=%u", s->freq);
		argv[n++] = freq;
	}
	if (jm->how == HOW_ARGS)
		for (int i = 0; jm->capture_args[i]; i++)
			argv[n++] = (char *)jm->capture_args[i];
	if (targets_needed(s)) {
		argv[n++] = pids;
		if (jm->how == HOW_JAVA)
			argv[n++] = (char *)jm->capture_args[1];
	} else if (s->scope == SCOPE_PID) {
		snprintf(target, sizeof(target), "--pid=%u", s->pid);
		argv[n++] = target;
	} else if (s->scope == SCOPE_CONTAINER) {
		snprintf(target, sizeof(target), "--container=%.64s",
			 s->container_id);
		argv[n++] = target;
	}
	snprintf(unw_stage, sizeof(unw_stage), "--stage=unwind,data=1G,cpu=%llus",
		 2 * (unsigned long long)s->duration_s + 60);
	if (max_stream)
		snprintf(unw_stage + strlen(unw_stage),
			 sizeof(unw_stage) - strlen(unw_stage), ",fsize=%llu",
			 (unsigned long long)max_stream);
	argv[n++] = unw_stage;
	argv[n] = NULL;

	memset(&sp, 0, sizeof(sp));
	sp.path = supervise_path;
	sp.argv = argv;
	sp.fd[0] = devnull;
	sp.fd[1] = out_fd;
	sp.fd[2] = log_fd;
	sp.pgid = 0;
	/* the launcher gone, the job ends as at its duration's end */
	sp.death_sig = SIGINT;
	fcntl(p[1], F_SETFD, 0);	/* the one descriptor it inherits */
	pid = cpa_spawn(&sp);
	close(p[1]);
	close(devnull);
	if (pid < 0) {
		dprintf(log_fd, "cpa-serve: %s: %s\n", supervise_path,
			strerror(errno));
		close(p[0]);
		return -1;
	}
	CPA_GROW(jobs, cap_jobs, n_jobs + 1);
	r = &jobs[n_jobs++];
	memset(r, 0, sizeof(*r));
	memcpy(r->id, m->id, sizeof(r->id));
	r->pid = pid;
	r->report = p[0];
	/* cpa-supervise bounds its stages; this bounds cpa-supervise */
	r->kill_at = cpa_mono_ms() + ((int64_t)s->duration_s + grace_s +
				      2 * LAUNCH_KILL_S) * 1000;
	return 0;
}

static struct running *find_job(const char *id)
{
	for (size_t i = 0; i < n_jobs; i++)
		if (!strcmp(jobs[i].id, id))
			return &jobs[i];
	return NULL;
}

/* The stages' wait statuses from the supervisor's report; its own status
 * stands for capture's when it reported nothing (it could not start, or
 * refused the job's options before starting any stage). */
static void read_report(struct running *r, int sup_status, int32_t st[2],
			int32_t *timed_out)
{
	char buf[256], *line, *save = NULL;
	ssize_t n = read(r->report, buf, sizeof(buf) - 1);
	bool any = false;

	st[0] = sup_status;
	st[1] = 0;
	buf[n > 0 ? n : 0] = 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		int v;

		if (sscanf(line, "capture %d", &v) == 1) {
			st[0] = v;
			any = true;
		} else if (sscanf(line, "unwind %d", &v) == 1) {
			st[1] = v;
		} else if (sscanf(line, "timed_out %d", &v) == 1) {
			*timed_out = v;
		}
	}
	if (!any)
		st[0] = sup_status ? sup_status : 127 << 8;
}

static void report_end(int sock, struct running *r, int sup_status)
{
	struct launch_msg m;

	memset(&m, 0, sizeof(m));
	m.op = LAUNCH_ENDED;
	memcpy(m.id, r->id, sizeof(m.id));
	read_report(r, sup_status, m.status, &m.timed_out);
	close(r->report);
	launcher_send(sock, &m, -1, -1);
	*r = jobs[--n_jobs];
}

static void reap(int sock)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		for (size_t i = 0; i < n_jobs; i++)
			if (jobs[i].pid == pid) {
				report_end(sock, &jobs[i], st);
				break;
			}
}

/* The server is gone: each job is stopped as at its duration's end, and
 * a supervisor that has not ended when its own grace for its stages is
 * over is killed (its capture has SIGINT as its parent-death signal). */
static void stop_all(void)
{
	struct timespec tick = { 0, 50 * 1000 * 1000 };

	for (size_t i = 0; i < n_jobs; i++)
		kill(jobs[i].pid, SIGINT);
	for (int t = 0; t < 240 && n_jobs; t++) {
		pid_t pid;
		int st;

		while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
			for (size_t i = 0; i < n_jobs; i++)
				if (jobs[i].pid == pid) {
					close(jobs[i].report);
					jobs[i] = jobs[--n_jobs];
					break;
				}
		if (n_jobs)
			nanosleep(&tick, NULL);
	}
	for (size_t i = 0; i < n_jobs; i++)
		kill(jobs[i].pid, SIGKILL);
}

/* A supervisor still there past its job's every bound is killed (its
 * capture has SIGINT as its parent-death signal); the poll timeout to
 * the next such deadline. */
static int enforce_deadlines(void)
{
	int64_t now = cpa_mono_ms(), next = -1;

	for (size_t i = 0; i < n_jobs; i++) {
		if (now >= jobs[i].kill_at) {
			kill(jobs[i].pid, SIGKILL);
			jobs[i].kill_at = now + 1000;
		}
		if (next < 0 || jobs[i].kill_at < next)
			next = jobs[i].kill_at;
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
			if (rc > 0 && m.op == LAUNCH_START) {
				struct launch_msg e = m;

				if (start_job(&m, fds[0], fds[1]) < 0) {
					e.op = LAUNCH_ENDED;
					e.status[0] = e.status[1] = 127 << 8;
				} else {
					e.op = LAUNCH_STARTED;
				}
				launcher_send(sock, &e, -1, -1);
			}
			if (rc > 0 && m.op == LAUNCH_STOP &&
			    (r = find_job(m.id)) && r->pid)
				kill(r->pid, SIGINT);
			for (int i = 0; i < 2; i++)
				if (fds[i] >= 0)
					close(fds[i]);
		}
	}
	stop_all();
}

int launcher_start(const char *supervise, uint64_t max_stream_bytes,
		   unsigned grace)
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
		supervise_path = supervise;
		max_stream = max_stream_bytes;
		grace_s = grace;
		launcher_loop(sv[1]);
		free(jobs);
		_exit(0);
	}
	close(sv[1]);
	return sv[0];
}
