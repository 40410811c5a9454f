/* SPDX-License-Identifier: MIT */
/* Command line of cpa-push. */
#ifndef CPA_PUSH_OPTS_H
#define CPA_PUSH_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "selfstats.h"

struct push_opts {
	const char *url;		/* --clickhouse */
	const char *dir;		/* --dir: run cpa-query --follow on it */
	const char *cursor;		/* --cursor FILE */
	const char *host;		/* --host, else the hostname */
	const char *database;		/* --database (cpa) */
	const char *cluster;		/* --cluster: Distributed tables */
	const char *from;		/* --from: where a new cursor starts */
	const char *job;		/* --job: a profiling job's windows */
	const char *region;		/* --region: its publication's */
	bool init;			/* --init: the schema, then exit */
	bool print_schema;		/* --print-schema: the SQL, then exit */
	bool once;			/* --once: what the store holds now */
	bool check;			/* --check: the options, then exit */
	uint64_t retain_ns;		/* --retain: drop older day partitions */
	uint64_t batch_rows;		/* --batch-rows */
	uint64_t batch_wait_ns;		/* --batch-wait */
	uint64_t backoff_max_ns;	/* --backoff-max */
	uint64_t timeout_ns;		/* --timeout: per statement */
	struct cpa_selfstats_opts selfstats;
};

/* Parses argv; exits 2 on a bad option. */
void push_opts_parse(struct push_opts *o, int argc, char **argv);

#endif
