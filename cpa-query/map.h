/* SPDX-License-Identifier: MIT */
/* A hash map from a pair of u64 to a u64 sum, iterable in insertion
 * order: the aggregation tables of cpa-query. */
#ifndef CPA_QUERY_MAP_H
#define CPA_QUERY_MAP_H

#include <stddef.h>
#include <stdint.h>

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

#endif
