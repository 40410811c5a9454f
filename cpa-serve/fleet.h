/* SPDX-License-Identifier: MIT */
/*
 * The apiserver role (cpa-serve --fleet): each active job has a
 * supervisor of its own, a thread that drives the job's node through
 * the Operation API (nodeapi.h) and moves the job as HUATUO's decision
 * table says (docs/api.md, "The apiserver"): a first pass starts the
 * Operation, later passes read it, a stop intent stops it; the node's
 * snapshot or error, and the pending, execution and stop deadlines,
 * decide the job's status and its terminal outcome. A slow or silent
 * node holds its own jobs' supervisors only, each call bounded by
 * --node-timeout.
 *
 * Supervisors hold the job table's lock (jobs.h) only to read and move
 * their job, never across a call to a node. A job's state is on disk
 * before a node is asked anything, so a restarted apiserver recovers
 * every active job and goes on where it was; node Operations outlive an
 * apiserver's restart.
 */
#ifndef CPA_SERVE_FLEET_H
#define CPA_SERVE_FLEET_H

#include <stdbool.h>

struct fleet_config {
	const char *node_token;		/* the nodes' bearer token */
	unsigned poll_ms;		/* between passes (5 s) */
	unsigned pending_s;		/* start to running, at most (30 s) */
	unsigned unavailable_s;		/* a node failing this long fails */
	unsigned stop_s;		/* stop to terminal, at most (60 s) */
	unsigned grace_s;		/* running past the duration (60 s) */
	unsigned call_ms;		/* one node call, at most (10 s) */
	const char *clickhouse;		/* where the nodes publish */
	unsigned max_windows;		/* a flame graph's, at most */
};

void fleet_init(const struct fleet_config *c);
/* Starts the supervisor of job id (recovered: after an apiserver
 * restart, first pass after a jitter under the poll interval). */
void fleet_watch(const char *id, bool recovered);
/* Its next pass now (a stop intent was recorded). */
void fleet_wake(void);
/* Shutting down: every supervisor ends after its current call. */
void fleet_stop(void);
const struct fleet_config *fleet_config(void);

#endif
