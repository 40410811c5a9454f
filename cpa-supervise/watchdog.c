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
#include "statsfile.h"
#include "timeparse.h"
#include "watchdog.h"

/* The file is written by the stage, which may run as another user
 * (statsfile.h reads it bounded). */
int stats_read(const char *path, struct stats_report *r)
{
	static struct stats_file f;
	uint64_t pid = 0, samples, in = 0, out = 0;
	bool has_in, has_out;

	memset(r, 0, sizeof(*r));
	if (stats_load(path, &f) < 0 || !stats_get_u64(&f, "pid", &pid) ||
	    !stats_get_u64(&f, "time_ns", &r->time_ns) || !pid ||
	    pid > 0x7fffffff || !r->time_ns)
		return -1;
	r->pid = (pid_t)pid;
	has_in = stats_get_u64(&f, "samples_in", &in);
	has_out = stats_get_u64(&f, "samples_out", &out);
	/* both only grow: their sum changes when either moves */
	if (has_in || has_out) {
		r->moved = in + out;
		r->has_moved = true;
	} else if (stats_get_u64(&f, "samples", &samples)) {
		r->moved = samples;
		r->has_moved = true;
	}
	return 0;
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
