/* SPDX-License-Identifier: MIT */
/* A hash map from a pair of u64 to a u64 sum, iterable in insertion
 * order: the aggregation tables of cpa-query. */
#ifndef CPA_QUERY_MAP_H
#define CPA_QUERY_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "hash.h"
#include "htab.h"

struct qmap_entry {
	uint64_t a, b;
	uint64_t v;
};

struct qmap {
	struct qmap_entry *e;
	size_t n, cap;
	struct cpa_htab index;	/* (a, b) -> entry index + 1 */
};

void qmap_init(struct qmap *m);
/* Adds v to the sum of (a, b). */
void qmap_add(struct qmap *m, uint64_t a, uint64_t b, uint64_t v);
/* The index in m->e of (a, b), added with a sum of 0 when absent. */
size_t qmap_slot(struct qmap *m, uint64_t a, uint64_t b);
/* The sum of (a, b), 0 when absent. */
uint64_t qmap_get(const struct qmap *m, uint64_t a, uint64_t b);
void qmap_clear(struct qmap *m);
void qmap_free(struct qmap *m);

/*
 * Batched adds, for tables far larger than the caches: a caller with many
 * adds at hand hashes them first and hints each one's slot, then its
 * entry, some adds ahead of the one it makes, so the misses of a batch
 * overlap instead of following one another.
 */
static inline uint64_t qmap_hash(uint64_t a, uint64_t b)
{
	return cpa_hash_u64(a * 0x9e3779b97f4a7c15ull ^ b);
}
static inline void qmap_prefetch_slot(const struct qmap *m, uint64_t h)
{
	__builtin_prefetch(&m->index.slots[(uint32_t)h & m->index.mask]);
}
/* Once its slot is fetched: the entry its first candidate names. */
static inline void qmap_prefetch_entry(const struct qmap *m, uint64_t h)
{
	uint32_t id = m->index.slots[(uint32_t)h & m->index.mask].id;
	if (id)
		__builtin_prefetch(&m->e[id - 1]);
}
/* qmap_add with h = qmap_hash(a, b). */
void qmap_add_hashed(struct qmap *m, uint64_t a, uint64_t b, uint64_t h,
		     uint64_t v);

/*
 * For a caller that finds its pairs itself (cpa-query's cells of a
 * group): qmap_push appends (a, b), not held, with a sum of 0 and returns
 * its index in m->e, leaving it out of the index; qmap_reindex indexes
 * them all, after which the map may be used as any other.
 */
size_t qmap_push(struct qmap *m, uint64_t a, uint64_t b);
void qmap_reindex(struct qmap *m);

#endif
