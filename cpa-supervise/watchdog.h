/* SPDX-License-Identifier: MIT */
/*
 * The watchdog's view of one stage: is it alive, and does it move
 * samples? A stage rewrites its statistics file every --stats-interval,
 * idle or not (lib/selfstats.h); a stage that stops doing so is silent.
 * A stage that keeps reporting while the samples it moved stand still
 * and its input waits unread is stuck: its counters advance, its work
 * does not. Samples moved are the report's samples_in and samples_out
 * (either moving is progress), or its samples where a tool reports
 * neither.
 */
#ifndef CPA_SUPERVISE_WATCHDOG_H
#define CPA_SUPERVISE_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"

/* A stage that has not reported yet gets this much more, for loading BPF
 * programs and symbols. */
#define WATCH_STARTUP_GRACE_NS (30 * CPA_NSEC_PER_SEC)

struct watch {
	bool has_moved;
	uint64_t moved;		/* samples moved at the last change */
	uint64_t moved_ns;	/* when they last changed (monotonic) */
	uint64_t waiting_ns;	/* input waiting at every check since */
	bool reported;		/* the current process has reported */
};

enum verdict { WATCH_OK, WATCH_SILENT, WATCH_STUCK };

struct stats_report {
	pid_t pid;
	uint64_t time_ns;	/* CLOCK_REALTIME of the report */
	bool has_moved;
	uint64_t moved;
};

/* Reads a statistics file: 0, or -1 when it is missing or malformed. */
int stats_read(const char *path, struct stats_report *r);

/* Bytes waiting unread in the standard input of pid, a pipe; -1 when
 * it cannot be told. */
long input_waiting(pid_t pid);

void watch_start(struct watch *w, uint64_t now_ns);

/* Looks at the stage once (a check per --stats-interval): its verdict,
 * and for how long it has been so in *for_ns. has_input: its input is a
 * pipe from the stage before it. */
enum verdict watch_check(struct watch *w, pid_t pid, const char *stats_path,
			 bool has_input, uint64_t started_ns,
			 uint64_t limit_ns, uint64_t *for_ns);

/* Whether its input was waiting at the last check. */
bool watch_input_waiting(const struct watch *w);

#endif
