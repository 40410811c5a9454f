/* SPDX-License-Identifier: MIT */
/* Command line of cpa-query. */
#ifndef CPA_QUERY_OPTS_H
#define CPA_QUERY_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "filter.h"
#include "labels.h"

enum query_format { FORMAT_FOLDED, FORMAT_STREAM, FORMAT_PPROF };

struct query_opts {
	const char **dirs;
	size_t n_dirs;
	uint64_t from, to;		/* [from, to) in UTC ns */
	const char *from_arg, *to_arg;	/* as typed, NULL when not */
	uint64_t windows;		/* --windows N: to is the Nth window's
					 * end (CPA's --output_num), 0 */
	bool diff;
	uint64_t diff_from, diff_to;
	bool list;
	struct cpa_labels labels;
	enum query_format format;
	const char *split_dir;
	uint64_t split_ns;		/* 0: one file per window; with
					 * --format stream, sum per split_ns */
	bool side;			/* stream: stacks as their side */
	bool kernel;			/* stream: kernel frames alone */
	bool callee;			/* --prune the callee view's tree */
	uint32_t prune;			/* stream sums: frames under 1/prune
					 * of their kind's total summed, 0 all */
	unsigned top;
	bool growth;			/* netting kinds: the range alone */
	const char *output;
	struct filter filter;
	const char *clickhouse;		/* --clickhouse URL: the fleet */
	const char *database;		/* --database (cpa) */
	const char **hosts;		/* --host GLOB, any of them */
	size_t n_hosts;
	const char *job;		/* --job ID: a job's windows */
	uint64_t max_windows;		/* --max-windows: refuse past it */
	bool host_label;		/* --labels host: a first frame */
	bool follow;			/* --follow: committed blocks, forever */
	const char *cursor;		/* --follow: start after this position */
	uint64_t poll_ns;		/* --follow: how often to look */
	bool once;			/* --follow: what is there now, then end */
};

/* Parses argv; exits 2 on a bad option. */
void query_opts_parse(struct query_opts *o, int argc, char **argv);
void query_opts_free(struct query_opts *o);

#endif
