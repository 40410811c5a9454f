/* SPDX-License-Identifier: MIT */
/*
 * The allocations of usage-like kinds (mem-usage, heap-inuse) still held:
 * cpa-capture sends a free with its allocation's id and no stack, so the
 * allocation's symbolized sample (stack and labels) is kept here under
 * (kind, id) until its free comes. Bounded by --max-allocs: when full,
 * an older allocation is evicted in turn (clock order), and its free, if
 * it ever comes, is not known.
 */
#ifndef CPA_UNWIND_ALLOCS_H
#define CPA_UNWIND_ALLOCS_H

#include <stdbool.h>
#include <stdint.h>

#include "output.h"
#include "stream.h"

struct allocs;

struct allocs *allocs_new(uint32_t max);
void allocs_free(struct allocs *a);
/* Keeps s (its ids are the output's) as allocation id of s->kind.
 * Returns the number of allocations evicted to make room (0 or 1). */
unsigned allocs_add(struct allocs *a, uint64_t id, const struct cpa_sample *s);
/* Takes allocation id of kind out into *s; false when it is not held. */
bool allocs_take(struct allocs *a, uint64_t id, uint16_t kind,
		 struct cpa_sample *s);
uint32_t allocs_count(const struct allocs *a);
/* The output's dictionaries are about to start over: every id an
 * allocation holds is read back as text before, and interned again in
 * the new dictionaries after (allocs_after_reset). */
void allocs_before_reset(struct allocs *a, struct output *o);
void allocs_after_reset(struct allocs *a, struct output *o);

#endif
