/* SPDX-License-Identifier: MIT */
/*
 * Rows waiting to be inserted. Samples of one block are summed by window
 * and the labels the fleet keeps (pid, thread and CPU stay on the host);
 * when the block's position arrives, its rows are encoded as RowBinary
 * into the batch, with the frames of each stack the batch is the first
 * to name. A batch remembers where each block's rows begin, so after an
 * insert that may have been cut short, the blocks ClickHouse holds are
 * left out of the retry.
 */
#ifndef CPA_PUSH_BATCH_H
#define CPA_PUSH_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "htab.h"
#include "symstream.h"

/* One summed row of the open block, its strings as dictionary ids. */
struct brow {
	uint64_t time, value;
	uint32_t comm, container, env, stack;
	uint16_t kind, flags;
};

struct bblock {
	uint64_t pos;		/* packed position */
	size_t off;		/* first byte of its rows in rows */
	uint64_t nrows;
	uint64_t end_ns;	/* end of its newest window */
};

struct batch {
	const char *host;
	const char *job;	/* --job's request_id, or "" */
	uint64_t duration_ns;	/* window length (meta interval_ns) */
	/* the open block */
	struct brow *open;
	uint32_t n_open, cap_open;
	struct cpa_htab open_index;
	/* per dictionary generation: stack id -> hash, owners per string */
	uint64_t *hash;
	size_t hash_cap;
	struct owner_ids { uint32_t container, pod; bool done; } *owner;
	size_t owner_cap;
	struct cpa_strtab *owner_strs;	/* container and pod strings */
	/* sealed blocks */
	struct cpa_buf rows, stacks;
	struct bblock *blocks;
	size_t n_blocks, cap_blocks;
	uint64_t nrows, nstacks;
	uint64_t first_ns;	/* when the oldest sealed block came */
	/* stack hashes ClickHouse has (or this batch carries) */
	uint64_t *known;
	uint32_t n_known, cap_known;
	struct cpa_htab known_index;
	uint64_t *pending;	/* hashes of this batch's stacks */
	size_t n_pending, cap_pending;
};

void batch_init(struct batch *b, const char *host);
void batch_free(struct batch *b);
/* The dictionary started over (a RESET record): ids of it are gone. The
 * open block must be empty. */
void batch_dict_reset(struct batch *b);
/* Adds a symbolized sample of the open block. */
void batch_add(struct batch *b, const struct cpa_dict *d,
	       const struct cpa_sample *s);
/* Seals the open block under position pos (packed): encodes its rows. */
void batch_seal(struct batch *b, const struct cpa_dict *d, uint64_t pos,
		uint64_t now_ns);
/* Drops the open block's samples (a block ClickHouse already holds). */
void batch_drop_open(struct batch *b);
/* The sealed blocks at and after the first whose position is past pos,
 * for a retry after ClickHouse was found to hold up to pos. */
void batch_skip_to(struct batch *b, uint64_t pos);
/* The insert went in: forget the sealed blocks, keep their stacks as
 * known. */
void batch_done(struct batch *b);

#endif
