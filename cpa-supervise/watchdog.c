/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "timeparse.h"
#include "watchdog.h"

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && (*end == '\n' || !*end);
}

/* The file is written by a stage, which may run as another user: read
 * at most what a report can hold, and take only the keys used here. */
int stats_read(const char *path, struct stats_report *r)
{
	char buf[16384], *line, *save = NULL;
	uint64_t v, samples = 0, in = 0, out = 0;
	bool has_samples = false, has_io = false;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	memset(r, 0, sizeof(*r));
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = 0;
		if (!parse_u64(eq + 1, &v))
			continue;
		if (!strcmp(line, "pid"))
			r->pid = (pid_t)v;
		else if (!strcmp(line, "time_ns"))
			r->time_ns = v;
		else if (!strcmp(line, "samples_in")) {
			in = v;
			has_io = true;
		} else if (!strcmp(line, "samples_out")) {
			out = v;
			has_io = true;
		} else if (!strcmp(line, "samples")) {
			samples = v;
			has_samples = true;
		}
	}
	/* both only grow: their sum changes when either moves */
	r->has_moved = has_io || has_samples;
	r->moved = has_io ? in + out : samples;
	return r->pid > 0 && r->time_ns ? 0 : -1;
}

long input_waiting(pid_t pid)
{
	char path[64];
	int fd, n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int)pid);
	/* a second reader for an instant: non-blocking, so opening a pipe
	 * cannot wait for a writer */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ioctl(fd, FIONREAD, &n) < 0)
		n = -1;
	close(fd);
	return n;
}

void watch_start(struct watch *w, uint64_t now_ns)
{
	memset(w, 0, sizeof(*w));
	w->moved_ns = now_ns;
}

bool watch_input_waiting(const struct watch *w)
{
	return w->waiting_ns != 0;
}

enum verdict watch_check(struct watch *w, pid_t pid, const char *stats_path,
			 bool has_input, uint64_t started_ns,
			 uint64_t limit_ns, uint64_t *for_ns)
{
	struct stats_report r;
	uint64_t now = cpa_mono_ns(), silent_ns;

	if (has_input) {
		if (input_waiting(pid) > 0) {
			if (!w->waiting_ns)
				w->waiting_ns = now;
		} else {
			w->waiting_ns = 0;
		}
	}
	if (stats_read(stats_path, &r) == 0 && r.pid == pid) {
		uint64_t real = cpa_now_ns();

		w->reported = true;
		silent_ns = real > r.time_ns ? real - r.time_ns : 0;
		if (r.has_moved && (!w->has_moved || r.moved != w->moved)) {
			w->moved = r.moved;
			w->has_moved = true;
			w->moved_ns = now;
		}
	} else {
		/* no report of its own yet, or one of an earlier process */
		silent_ns = now - started_ns;
		silent_ns = silent_ns > WATCH_STARTUP_GRACE_NS
				    ? silent_ns - WATCH_STARTUP_GRACE_NS
				    : 0;
	}
	if (silent_ns > limit_ns) {
		*for_ns = silent_ns;
		return WATCH_SILENT;
	}
	/* reports, but nothing it moves while work waits for it */
	if (w->reported && w->waiting_ns && now - w->waiting_ns >= limit_ns &&
	    now - w->moved_ns >= limit_ns) {
		*for_ns = now - (w->moved_ns > w->waiting_ns ? w->moved_ns
							     : w->waiting_ns);
		return WATCH_STUCK;
	}
	return WATCH_OK;
}
