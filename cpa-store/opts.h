/* SPDX-License-Identifier: MIT */
/* Command line of cpa-store. */
#ifndef CPA_STORE_OPTS_H
#define CPA_STORE_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "selfstats.h"

struct store_opts {
	const char *dir;
	uint64_t interval_ns;	/* window length */
	uint64_t segment_ns;	/* rotation period */
	uint64_t flush_ns;	/* longest time a closed window waits */
	uint64_t grace_ns;	/* a window stays open this long for late ones */
	uint64_t retain_ns;	/* 0: keep forever */
	uint64_t max_size;	/* bytes; 0: no limit */
	uint64_t backlog_max;	/* bytes held while writes fail */
	uint64_t max_dict;	/* a segment's dictionaries; past it, a new one */
	uint64_t max_proc_stacks;	/* one process in one window; 0: any */
	uint64_t max_proc_bytes;	/* new names it adds there; 0: any */
	uint64_t folded_time_ns;	/* time stamp of folded input lines */
	bool stats;		/* report at exit */
	struct cpa_selfstats_opts selfstats;	/* lib/base/selfstats.h */
};

/* Parses argv; exits 2 on a bad option. */
void store_opts_parse(struct store_opts *o, int argc, char **argv);
/* The wall clock, or CPA_STORE_NOW when the environment sets it. */
uint64_t store_now_ns(void);

#endif
