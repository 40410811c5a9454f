/* SPDX-License-Identifier: MIT */
/*
 * A run: the stages given on the command line, in chains. A stage whose
 * row reads its input from the one before it is piped to it; one that
 * reads nothing starts a new chain (capture | unwind | store is one
 * chain, a push stage would be another). A chain starts, stops and
 * restarts as one, since a pipe cannot be joined again; chains are
 * independent of each other.
 */
#ifndef CPA_SUPERVISE_SUPERVISE_H
#define CPA_SUPERVISE_SUPERVISE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "child.h"
#include "stages.h"
#include "watchdog.h"

struct run_opts {
	bool once;		/* no restarts: the run ends with its chains */
	bool check;		/* preflight every stage with --check */
	uint64_t duration_ns;	/* 0: until stopped */
	uint64_t grace_ns;	/* stages still running this past it stop */
	const char *duration;	/* as given, for the log */
	uint64_t stats_ns;
	const char *stats_interval;	/* as given, for the stages */
	unsigned watchdog;	/* intervals; 0: off */
	const char *run_dir;
	const char *user;	/* the service user's name */
	const char *output;	/* the last stage's stdout, written whole */
	const char *metrics_file;	/* resident runs: the Prometheus
					 * textfile (metrics.h); NULL: none */
	int report_fd;		/* each stage's wait status at the end; -1 */
};

struct proc {
	const struct stage *st;
	char **args;		/* the stage's own arguments */
	size_t n_args;
	char path[4096];	/* the tool */
	char stats_path[4400];	/* "" without statistics */
	pid_t pid;		/* 0 when not running */
	int status;		/* wait status of its last end */
	uint64_t started_ns;
	struct watch watch;
	struct cpa_limits limits;	/* --stage=NAME,data=SIZE,... */
	bool has_limits;
};

struct chain {
	struct proc *procs;
	size_t n;
	bool running;		/* some proc runs */
	bool stopping;		/* asked to stop; restart after when set */
	bool restart;
	uint64_t stop_ns;	/* when the stop was asked */
	uint64_t grace_ns;	/* then killed this long after */
	uint64_t started_ns;
	uint64_t restart_at_ns;	/* 0: no restart pending */
	unsigned backoff_s;
};

/* Runs the chains to their end: the exit status of the run. */
int supervise(struct chain *chains, size_t n_chains,
	      const struct run_opts *o);

#endif
