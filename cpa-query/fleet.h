/* SPDX-License-Identifier: MIT */
/*
 * --clickhouse: the range and filters of a query answered by the fleet's
 * tables (docs/fleet.md, written by cpa-push). ClickHouse aggregates:
 * one row per label set and stack over the range (per window, or per
 * --split-every group, for the stream), never one per window and host.
 * The answer becomes a dictionary and entries like one segment of a
 * store's, which go to the same sinks, so every output is the one a
 * store query writes.
 *
 * What the fleet does not keep (pid, tid, thread, CPU, cgroup ids) is
 * refused when asked for. --labels host writes "[host NAME]" as the first
 * frame of each stack, after the other root labels: the stream has no
 * host field, and a frame is drawn by every reader as it is.
 */
#ifndef CPA_QUERY_FLEET_H
#define CPA_QUERY_FLEET_H

#include <stdio.h>

#include "clickhouse.h"
#include "opts.h"
#include "scan.h"

struct fleet {
	struct cpa_ch ch;
	const struct query_opts *o;
};

/* Connects lazily; dies on a bad URL. */
void fleet_open(struct fleet *f, const struct query_opts *o);
void fleet_close(struct fleet *f);

/*
 * Sends the windows overlapping [from, to) that pass the filters to k
 * as column, summed by label set, stack and (every_ns: per group of
 * every_ns from origin; 1: per window; 0: the whole range) time. held:
 * with the older windows of the kinds that net frees, as scan_held adds
 * them. Dies with ClickHouse's one-line error when the query fails.
 */
void fleet_read(struct fleet *f, uint64_t from, uint64_t to, unsigned column,
		uint64_t every_ns, uint64_t origin, bool held, struct sink *k,
		struct scan_stats *st);
/* --max-windows: dies when more than max windows (a host's or a job's
 * 10 s) pass the filters in [from, to). */
void fleet_check_windows(struct fleet *f, uint64_t from, uint64_t to,
			 uint64_t max);
/* The longest window length of the range (for the stream's meta). */
uint64_t fleet_interval(struct fleet *f, uint64_t from, uint64_t to);
/* --list: one line per host, then the range ("range A .. B (D, N rows)"). */
void fleet_list(struct fleet *f, FILE *out);

#endif
