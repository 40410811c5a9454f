// SPDX-License-Identifier: MIT
/*
 * Allocation id -> the allocating sample, for frees that come without a
 * stack (allocs.h). Entries live in one array indexed by slot; the hash
 * table (lib/base/htab.h) maps (kind, id) to a slot, and removal shifts its
 * run back, so a table that sees millions of allocations and frees stays
 * as large as the most it ever held at once.
 */
#include <stdlib.h>
#include <string.h>

#include "allocs.h"
#include "buf.h"
#include "hash.h"
#include "htab.h"
#include "log.h"

struct alloc {
	uint64_t id;		/* 0: slot free */
	struct cpa_sample s;
};

struct allocs {
	struct cpa_htab t;
	struct alloc *e;	/* [1..max]; 0 is no slot */
	size_t cap;
	uint32_t max, used;	/* slots ever handed out, at most max */
	uint32_t *free_slots;	/* slots emptied by frees */
	uint32_t n_free;
	size_t cap_free;
	uint32_t hand;		/* next slot to evict when full */
	/* the text of every id held, across a dictionary reset */
	struct cpa_buf saved;
};

static uint64_t key_hash(uint64_t id, uint16_t kind)
{
	return cpa_hash_u64(id ^ (uint64_t)kind << 56);
}

struct allocs *allocs_new(uint32_t max)
{
	struct allocs *a = cpa_calloc(1, sizeof(*a));

	a->max = max;
	cpa_htab_init(&a->t, 1024);
	return a;
}

void allocs_free(struct allocs *a)
{
	if (!a)
		return;
	cpa_htab_free(&a->t);
	free(a->e);
	free(a->free_slots);
	cpa_buf_free(&a->saved);
	free(a);
}

uint32_t allocs_count(const struct allocs *a)
{
	return a->t.count;
}

/* The slot holding (id, kind), with pr at it for a removal; 0 if none. */
static uint32_t find(struct allocs *a, uint64_t id, uint16_t kind,
		     struct cpa_htab_probe *pr)
{
	for (uint32_t slot = cpa_htab_first(&a->t, key_hash(id, kind), pr);
	     slot; slot = cpa_htab_next(&a->t, pr))
		if (a->e[slot].id == id && a->e[slot].s.kind == kind)
			return slot;
	return 0;
}

static void drop(struct allocs *a, uint32_t slot)
{
	struct cpa_htab_probe pr;

	if (find(a, a->e[slot].id, a->e[slot].s.kind, &pr) != slot)
		cpa_die("internal error: allocation table out of step");
	cpa_htab_remove(&a->t, &pr);
	a->e[slot].id = 0;
}

unsigned allocs_add(struct allocs *a, uint64_t id, const struct cpa_sample *s)
{
	struct cpa_htab_probe pr;
	unsigned evicted = 0;
	uint32_t slot = find(a, id, s->kind, &pr);

	if (slot) {		/* the same id again: the newer one counts */
		a->e[slot].s = *s;
		return 0;
	}
	if (!a->max)
		return 1;	/* no room at all: as if evicted at once */
	if (a->n_free) {
		slot = a->free_slots[--a->n_free];
	} else if (a->used < a->max) {
		slot = ++a->used;
		CPA_GROW(a->e, a->cap, (size_t)slot + 1);
	} else {
		a->hand = a->hand % a->max + 1;
		slot = a->hand;
		drop(a, slot);
		evicted = 1;
	}
	a->e[slot].id = id;
	a->e[slot].s = *s;
	/* the eviction may have moved the run pr ended in */
	find(a, id, s->kind, &pr);
	cpa_htab_add(&a->t, &pr, slot);
	return evicted;
}

bool allocs_take(struct allocs *a, uint64_t id, uint16_t kind,
		 struct cpa_sample *s)
{
	struct cpa_htab_probe pr;
	uint32_t slot = find(a, id, kind, &pr);

	if (!slot)
		return false;
	*s = a->e[slot].s;
	cpa_htab_remove(&a->t, &pr);
	a->e[slot].id = 0;
	CPA_GROW(a->free_slots, a->cap_free, (size_t)a->n_free + 1);
	a->free_slots[a->n_free++] = slot;
	return true;
}

/* ---- across a dictionary reset ----------------------------------------
 * Each string is saved as its length and bytes, each stack as its frame
 * count and then its strings, in slot order: comm, thread, container,
 * env, stack. Id 0 (no label) is saved as length 0. */

static void save_string(struct cpa_buf *b, struct output *o, uint32_t id)
{
	uint32_t len = 0;
	const char *s = id ? output_get_string(o, id, &len) : NULL;

	if (!s)
		len = 0;
	cpa_buf_add(b, &len, sizeof(len));
	cpa_buf_add(b, s, len);
}

static uint32_t load_string(struct output *o, const uint8_t **p)
{
	uint32_t len;

	memcpy(&len, *p, sizeof(len));
	*p += sizeof(len);
	uint32_t id = len ? output_string(o, (const char *)*p, len) : 0;
	*p += len;
	return id;
}

void allocs_before_reset(struct allocs *a, struct output *o)
{
	a->saved.len = 0;
	for (uint32_t slot = 1; slot <= a->used; slot++) {
		const struct cpa_sample *s = &a->e[slot].s;
		uint32_t n = 0;

		if (!a->e[slot].id)
			continue;
		save_string(&a->saved, o, s->comm_id);
		save_string(&a->saved, o, s->thread_id);
		save_string(&a->saved, o, s->container_id);
		save_string(&a->saved, o, s->env_id);
		const uint32_t *frames = output_get_stack(o, s->stack_id, &n);
		if (!frames)
			n = 0;
		cpa_buf_add(&a->saved, &n, sizeof(n));
		for (uint32_t i = 0; i < n; i++)
			save_string(&a->saved, o, frames[i]);
	}
}

void allocs_after_reset(struct allocs *a, struct output *o)
{
	const uint8_t *p = a->saved.p;
	uint32_t *frames = NULL;
	size_t cap = 0;

	for (uint32_t slot = 1; slot <= a->used; slot++) {
		struct cpa_sample *s = &a->e[slot].s;
		uint32_t n;

		if (!a->e[slot].id)
			continue;
		s->comm_id = load_string(o, &p);
		s->thread_id = load_string(o, &p);
		s->container_id = load_string(o, &p);
		s->env_id = load_string(o, &p);
		memcpy(&n, p, sizeof(n));
		p += sizeof(n);
		CPA_GROW(frames, cap, (size_t)n + 1);
		for (uint32_t i = 0; i < n; i++)
			frames[i] = load_string(o, &p);
		s->stack_id = output_stack(o, frames, n);
	}
	free(frames);
	cpa_buf_free(&a->saved);
}
