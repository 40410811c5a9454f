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
/* A high-water gauge: the largest level since the last report (the
 * caller raises it), reported as a gauge and set to 0 after each report,
 * so a level that a reader drains between reports still shows. */
uint64_t *cpa_peak(const char *name);
/* A histogram of n log2 buckets (at most CPA_HIST_MAX): slot b counts
 * the values v with 2^b <= v < 2^(b+1), slot 0 also 0; the caller keeps
 * them, counts since start. It goes into FILE as one line,
 * "name=c0,c1,...", and not on the stderr line (which the quantiles the
 * tool reports as gauges summarize). */
#define CPA_HIST_MAX 64
uint64_t *cpa_histogram(const char *name, unsigned n);
/* The process's CPU time (user and system) in seconds and its resident
 * memory in bytes, as every report gives them. */
void cpa_self_usage(double *cpu_s, uint64_t *rss_bytes);
/* Reports if SIGUSR1 arrived or the interval passed; one flag test
 * otherwise. Call from the main loop. */
void cpa_selfstats_poll(void);
/* Reports now (e.g. at exit with --stats). */
void cpa_selfstats_report(void);
/* Frees the counters and removes nothing: the last file stays for
 * post-mortems. */
void cpa_selfstats_fini(void);

#endif
