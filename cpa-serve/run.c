/* SPDX-License-Identifier: MIT */
/*
 * Child processes of the server. Threads start them, so they are
 * spawned by lib's cpa_spawn (system calls only between fork and exec),
 * each pipeline in one process group under the caller's bounds, and
 * waited for by pid, never by wait(-1), which would take the launcher's
 * or another thread's child.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "child.h"
#include "run.h"

#define N_TOOLS 8
static struct {
	const char *name;
	char path[PATH_MAX];
} tools[N_TOOLS];
static pthread_mutex_t tools_lock = PTHREAD_MUTEX_INITIALIZER;

const char *run_tool(const char *name)
{
	const char *found = name;

	pthread_mutex_lock(&tools_lock);
	for (int i = 0; i < N_TOOLS; i++) {
		if (!tools[i].name) {
			tools[i].name = name;
			cpa_find_tool(name, tools[i].path, sizeof(tools[i].path));
		}
		if (!strcmp(tools[i].name, name)) {
			found = tools[i].path;
			break;
		}
	}
	pthread_mutex_unlock(&tools_lock);
	return found;
}

/* Keeps the last non-empty line of what the stages said. */
static void keep_last_line(struct run_result *r, const char *p, size_t n,
			   char *line, size_t *line_len)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			if (*line_len) {
				memcpy(r->err, line, *line_len);
				r->err[*line_len] = 0;
			}
			*line_len = 0;
		} else if (*line_len < sizeof(r->err) - 1) {
			line[(*line_len)++] = p[i];
		}
	}
}

static pid_t start(char *const *argv, int in, int out, int err,
		   pid_t pgid, const struct cpa_limits *lim)
{
	struct cpa_spawn s = { .path = argv[0], .argv = argv,
			       .fd = { in, out, err }, .pgid = pgid,
			       .limits = lim };

	return cpa_spawn(&s);
}

int run_pipeline(char *const *argv1, char *const *argv2, int in_fd,
		 int out_fd, size_t max, const struct cpa_limits *lim,
		 struct run_result *r)
{
	int opipe[2] = { -1, -1 }, epipe[2], mid[2] = { -1, -1 };
	pid_t pid[2] = { -1, -1 };
	char line[sizeof(r->err)];
	size_t line_len = 0;
	int64_t deadline = lim && lim->wall_ms
		? cpa_mono_ms() + (int64_t)lim->wall_ms : -1;
	bool killed = false;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (pipe2(epipe, O_CLOEXEC) ||
	    (out_fd < 0 && pipe2(opipe, O_CLOEXEC)) ||
	    (argv2 && pipe2(mid, O_CLOEXEC))) {
		snprintf(r->err, sizeof(r->err), "pipe: %s", strerror(errno));
		return -1;	/* only at descriptor exhaustion */
	}
	int last_out = out_fd >= 0 ? out_fd : opipe[1];

	pid[0] = start(argv1, in_fd, argv2 ? mid[1] : last_out, epipe[1], 0,
		       lim);
	if (pid[0] > 0 && argv2)
		pid[1] = start(argv2, mid[0], last_out, epipe[1], pid[0], lim);
	if (pid[0] < 0 || (argv2 && pid[1] < 0)) {
		rc = errno;
		snprintf(r->err, sizeof(r->err), "%s: %s",
			 pid[0] < 0 ? argv1[0] : argv2[0], strerror(rc));
	}
	close(epipe[1]);
	if (argv2) {
		close(mid[0]);
		close(mid[1]);
	}
	if (opipe[1] >= 0)
		close(opipe[1]);

	for (bool eof_out = opipe[0] < 0, eof_err = false; !eof_out || !eof_err;) {
		struct pollfd pf[2] = { { eof_out ? -1 : opipe[0], POLLIN, 0 },
					{ eof_err ? -1 : epipe[0], POLLIN, 0 } };
		int64_t left = deadline < 0 ? -1 : deadline - cpa_mono_ms();
		char buf[65536];
		ssize_t n;

		if (deadline >= 0 && left <= 0 && !killed) {
			/* past its time: the group goes, and with it the
			 * pipes' writers */
			if (pid[0] > 0)
				kill(-pid[0], SIGKILL);
			killed = true;
			r->hit = CPA_LIMIT_WALL;
			deadline = -1;
			continue;
		}
		if (poll(pf, 2, left > INT_MAX ? INT_MAX : (int)left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents) {
			n = read(opipe[0], buf, sizeof(buf));
			if (n <= 0) {
				eof_out = true;
			} else if (r->out.len + (size_t)n > max) {
				if (!r->over && pid[0] > 0)
					kill(-pid[0], SIGKILL);
				r->over = true;
			} else {
				cpa_buf_add(&r->out, buf, (size_t)n);
			}
		}
		if (pf[1].revents) {
			n = read(epipe[0], buf, sizeof(buf));
			if (n <= 0)
				eof_err = true;
			else
				keep_last_line(r, buf, (size_t)n, line,
					       &line_len);
		}
	}
	if (line_len) {
		memcpy(r->err, line, line_len);
		r->err[line_len] = 0;
	}
	if (opipe[0] >= 0)
		close(opipe[0]);
	close(epipe[0]);
	for (int i = 0; i < 2; i++) {
		bool k = false;

		r->status[i] = 0;
		if (pid[i] <= 0)
			continue;
		/* a stage that closed its pipes may still run: the same
		 * deadline holds */
		if (cpa_wait_until(pid[i], deadline, &r->status[i], &k) == 0 &&
		    k)
			r->hit = CPA_LIMIT_WALL;
		if (r->status[i] && !rc)
			rc = -1;
		if (!r->hit)
			r->hit = cpa_limit_of(r->status[i], lim, r->err);
	}
	if (r->hit) {
		char why[sizeof(r->err)];

		snprintf(why, sizeof(why), "%s", r->err);
		snprintf(r->err, sizeof(r->err), "%s past its %s limit%s%.400s",
			 argv1[0], cpa_limit_name(r->hit), why[0] ? ": " : "",
			 why);
		rc = -1;
	} else if (r->over) {
		snprintf(r->err, sizeof(r->err), "output over %zu bytes", max);
		rc = -1;
	}
	if (rc && !r->err[0])
		snprintf(r->err, sizeof(r->err), "%s failed",
			 r->status[0] ? argv1[0] : argv2[0]);
	return rc ? -1 : 0;
}

void run_result_free(struct run_result *r)
{
	cpa_buf_free(&r->out);
}
