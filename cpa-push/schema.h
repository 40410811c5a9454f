/* SPDX-License-Identifier: MIT */
/*
 * The fleet's tables in ClickHouse: their SQL (docs/fleet.md shows what
 * --print-schema prints), their creation when missing, the check of those
 * that exist, retention by day partitions, and what ClickHouse holds of a
 * host. Written for ClickHouse 18.16 (Debian bookworm) and current
 * releases alike: no TTL, no Map, no LowCardinality, no codecs.
 *
 *   DB.samples   one row per (window, label set, stack), MergeTree,
 *                PARTITION BY day, ORDER BY (kind, comm, host, time)
 *   DB.stacks    frames per stack hash, ReplacingMergeTree ORDER BY hash
 *   DB.publications  a profiling job's publication marker, once all its
 *                windows are in (cpa-push --job), ReplacingMergeTree
 *                ORDER BY request_id
 *
 * With --cluster NAME, those two are Distributed tables over NAME, the
 * samples sharded by host (a host's batch lands on one shard, whole), the
 * stacks by hash, over DB.samples_local and DB.stacks_local on each shard.
 */
#ifndef CPA_PUSH_SCHEMA_H
#define CPA_PUSH_SCHEMA_H

#include <stdint.h>

#include "buf.h"
#include "clickhouse.h"
#include "opts.h"

/* The insert's column lists, in RowBinary order. */
extern const char schema_samples_columns[];
extern const char schema_stacks_columns[];
extern const char schema_publications_columns[];

/* The statements of --init, each ending in ";\n". */
void schema_sql(const struct push_opts *o, struct cpa_buf *out);

enum { SCHEMA_OK = 0, SCHEMA_RETRY = -1, SCHEMA_BAD = -2 };
/*
 * Creates what is missing (create) and checks what exists: columns and
 * types, engines, the cluster and, with one, every shard's local tables.
 * SCHEMA_RETRY: the server failed (ch->err says how); SCHEMA_BAD: the
 * tables are not what cpa-push writes (err says what), retrying will not
 * help. With create_only (--init), other shards without their tables are
 * warned about, not an error: --init makes one shard's at a time.
 */
int schema_ensure(struct cpa_ch *ch, const struct push_opts *o, bool create,
		  bool create_only, char *err, size_t errlen);

/* Drops the day partitions of the samples (the local ones on this server
 * with a cluster) that end before cutoff_ns. The days dropped go to
 * *dropped. 0 or -1 (ch->err). */
int schema_retain(struct cpa_ch *ch, const struct push_opts *o,
		  uint64_t cutoff_ns, unsigned *dropped);

/* The largest position of host's rows (0: none). 0 or -1 (ch->err). */
int schema_max_pos(struct cpa_ch *ch, const struct push_opts *o,
		   const char *host, uint64_t *pos);

/* The publication marker of job o->job: its windows, window_ns long,
 * are all in. 0 or -1 (ch->err). */
int schema_publish(struct cpa_ch *ch, const struct push_opts *o,
		   const char *host, uint64_t window_ns, uint64_t now_ns);

#endif
