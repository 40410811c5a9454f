/* SPDX-License-Identifier: MIT */
/*
 * cpa monitor's metrics in Prometheus's text format, as a textfile: the
 * supervisor rewrites it (whole, by rename) every --stats-interval from
 * its stages' statistics files and from what only it sees (restarts, the
 * pipes between the stages), and removes it when the run ends, so its
 * series go stale with the monitor. node_exporter's textfile collector
 * (--collector.textfile.directory) serves it to Prometheus.
 *
 * Why a file and no listening socket: the supervisor holds every stage's
 * capabilities to hand them down, and an HTTP parser facing the network
 * does not belong in that process; a file costs one write per interval,
 * needs no port, and is how Prometheus collects from a daemon that is
 * not a server. cpa-serve, the host's HTTP face, serves its own /metrics.
 */
#ifndef CPA_SUPERVISE_METRICS_H
#define CPA_SUPERVISE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "statsfile.h"
#include "supervise.h"

/* One stage as the exposition sees it. */
struct metrics_stage {
	const char *name;		/* the stage table's */
	bool running;
	const struct stats_file *stats;	/* its current process's, or NULL */
	long pipe_waiting;		/* bytes unread in its input pipe; -1 */
	long pipe_capacity;		/* that pipe's size; -1 */
};

/* The exposition of n stages and the run's counts, into out. */
void metrics_print(FILE *out, const struct metrics_stage *s, size_t n,
		   unsigned restarts, unsigned hung);

/* Gathers the chains' stages and rewrites path: 0, or -1 (errno) when
 * it cannot be written. */
int metrics_write(const char *path, const struct chain *chains,
		  size_t n_chains, unsigned restarts, unsigned hung);

#endif
