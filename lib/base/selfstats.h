/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Self-statistics, the same in every tool: named counters, reported as one
 * line on stderr on SIGUSR1 and every --stats-interval, and rewritten into
 * --stats-file (key=value lines, replaced atomically) for `cpa status`.
 * Each report carries the tool's CPU time, its share of one core since the
 * last report, its RSS, and every counter with its rate.
 */
#ifndef CPA_SELFSTATS_H
#define CPA_SELFSTATS_H

#include <argp.h>
#include <stdint.h>

/* --stats-file FILE and --stats-interval DURATION, the same in every tool:
 * add cpa_selfstats_argp as an argp child and hand it a struct
 * cpa_selfstats_opts in ARGP_KEY_INIT (state->child_inputs[i]). */
struct cpa_selfstats_opts {
	const char *file;	/* NULL: no file */
	uint64_t interval_ns;	/* 0: only on SIGUSR1 */
};
extern const struct argp cpa_selfstats_argp;

/* Installs the SIGUSR1 handler and the interval timer (0: none). file may
 * be NULL. Call once, after option parsing. */
void cpa_selfstats_init(const char *file, uint64_t interval_ns);
/* A counter slot for name, created at 0 on first use. Keep the pointer:
 * incrementing it is the whole cost on the hot path. */
uint64_t *cpa_stat(const char *name);
/* A gauge slot: a level (bytes cached, processes known, a percentile),
 * reported as is, without a rate. */
uint64_t *cpa_gauge(const char *name);
/* Reports if SIGUSR1 arrived or the interval passed; one flag test
 * otherwise. Call from the main loop. */
void cpa_selfstats_poll(void);
/* Reports now (e.g. at exit with --stats). */
void cpa_selfstats_report(void);
/* Frees the counters and removes nothing: the last file stays for
 * post-mortems. */
void cpa_selfstats_fini(void);

#endif
