/* SPDX-License-Identifier: MIT */
/*
 * Open-addressing hash tables from content to dense ids. Contents live in
 * one growing arena per table, so interning allocates only when the arena
 * or the slot array doubles.
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "intern.h"
#include "log.h"

struct slots {
	uint32_t *ids;		/* 0 = empty */
	uint32_t mask;
};

static void slots_init(struct slots *s, uint32_t size)
{
	s->ids = cpa_calloc(size, sizeof(uint32_t));
	s->mask = size - 1;
}

struct cpa_strtab {
	struct slots slots;
	char *arena;
	size_t arena_len, arena_cap;
	uint64_t *off;		/* off[id]: start in arena */
	uint32_t *len;
	uint64_t *hash;
	uint32_t count, cap;	/* ids 1..count */
};

struct cpa_strtab *cpa_strtab_new(void)
{
	struct cpa_strtab *t = cpa_calloc(1, sizeof(*t));
	slots_init(&t->slots, 1024);
	t->cap = 512;
	t->off = cpa_malloc(t->cap * sizeof(*t->off));
	t->len = cpa_malloc(t->cap * sizeof(*t->len));
	t->hash = cpa_malloc(t->cap * sizeof(*t->hash));
	t->arena_cap = 64 * 1024;
	t->arena = cpa_malloc(t->arena_cap);
	return t;
}

void cpa_strtab_free(struct cpa_strtab *t)
{
	if (!t)
		return;
	free(t->slots.ids);
	free(t->arena);
	free(t->off);
	free(t->len);
	free(t->hash);
	free(t);
}

static void grow_slots(struct slots *s, const uint64_t *hashes,
		       uint32_t count)
{
	uint32_t size = (s->mask + 1) * 2;
	free(s->ids);
	slots_init(s, size);
	for (uint32_t id = 1; id <= count; id++) {
		uint32_t i = (uint32_t)hashes[id] & s->mask;
		while (s->ids[i])
			i = (i + 1) & s->mask;
		s->ids[i] = id;
	}
}

uint32_t cpa_strtab_intern(struct cpa_strtab *t, const char *str, size_t len,
			   bool *is_new)
{
	uint64_t h = cpa_hash(str, len, 0);
	uint32_t i = (uint32_t)h & t->slots.mask;
	for (uint32_t id; (id = t->slots.ids[i]); i = (i + 1) & t->slots.mask) {
		if (t->hash[id] == h && t->len[id] == len &&
		    !memcmp(t->arena + t->off[id], str, len)) {
			if (is_new)
				*is_new = false;
			return id;
		}
	}
	uint32_t id = ++t->count;
	if (id >= t->cap) {
		t->cap *= 2;
		t->off = cpa_realloc(t->off, t->cap * sizeof(*t->off));
		t->len = cpa_realloc(t->len, t->cap * sizeof(*t->len));
		t->hash = cpa_realloc(t->hash, t->cap * sizeof(*t->hash));
	}
	if (t->arena_len + len + 1 > t->arena_cap) {
		while (t->arena_len + len + 1 > t->arena_cap)
			t->arena_cap *= 2;
		t->arena = cpa_realloc(t->arena, t->arena_cap);
	}
	memcpy(t->arena + t->arena_len, str, len);
	t->arena[t->arena_len + len] = '\0';
	t->off[id] = t->arena_len;
	t->len[id] = (uint32_t)len;
	t->hash[id] = h;
	t->arena_len += len + 1;
	t->slots.ids[i] = id;
	if ((uint64_t)t->count * 2 > t->slots.mask)
		grow_slots(&t->slots, t->hash, t->count);
	if (is_new)
		*is_new = true;
	return id;
}

const char *cpa_strtab_get(const struct cpa_strtab *t, uint32_t id,
			   uint32_t *len)
{
	if (id == 0 || id > t->count)
		return NULL;
	if (len)
		*len = t->len[id];
	return t->arena + t->off[id];
}

uint32_t cpa_strtab_count(const struct cpa_strtab *t)
{
	return t->count;
}

size_t cpa_strtab_bytes(const struct cpa_strtab *t)
{
	return t->arena_cap + (size_t)t->cap * 20 +
	       (size_t)(t->slots.mask + 1) * 4;
}

struct cpa_stacktab {
	struct slots slots;
	uint32_t *arena;
	size_t arena_len, arena_cap;	/* in frames */
	uint64_t *off;
	uint32_t *n;
	uint64_t *hash;
	uint32_t count, cap;
};

struct cpa_stacktab *cpa_stacktab_new(void)
{
	struct cpa_stacktab *t = cpa_calloc(1, sizeof(*t));
	slots_init(&t->slots, 1024);
	t->cap = 512;
	t->off = cpa_malloc(t->cap * sizeof(*t->off));
	t->n = cpa_malloc(t->cap * sizeof(*t->n));
	t->hash = cpa_malloc(t->cap * sizeof(*t->hash));
	t->arena_cap = 16 * 1024;
	t->arena = cpa_malloc(t->arena_cap * sizeof(uint32_t));
	return t;
}

void cpa_stacktab_free(struct cpa_stacktab *t)
{
	if (!t)
		return;
	free(t->slots.ids);
	free(t->arena);
	free(t->off);
	free(t->n);
	free(t->hash);
	free(t);
}

uint32_t cpa_stacktab_intern(struct cpa_stacktab *t, const uint32_t *frames,
			     uint32_t n, bool *is_new)
{
	size_t bytes = (size_t)n * sizeof(uint32_t);
	uint64_t h = cpa_hash(frames, bytes, 1);
	uint32_t i = (uint32_t)h & t->slots.mask;
	for (uint32_t id; (id = t->slots.ids[i]); i = (i + 1) & t->slots.mask) {
		if (t->hash[id] == h && t->n[id] == n &&
		    !memcmp(t->arena + t->off[id], frames, bytes)) {
			if (is_new)
				*is_new = false;
			return id;
		}
	}
	uint32_t id = ++t->count;
	if (id >= t->cap) {
		t->cap *= 2;
		t->off = cpa_realloc(t->off, t->cap * sizeof(*t->off));
		t->n = cpa_realloc(t->n, t->cap * sizeof(*t->n));
		t->hash = cpa_realloc(t->hash, t->cap * sizeof(*t->hash));
	}
	if (t->arena_len + n > t->arena_cap) {
		while (t->arena_len + n > t->arena_cap)
			t->arena_cap *= 2;
		t->arena = cpa_realloc(t->arena,
				       t->arena_cap * sizeof(uint32_t));
	}
	if (n)
		memcpy(t->arena + t->arena_len, frames, bytes);
	t->off[id] = t->arena_len;
	t->n[id] = n;
	t->hash[id] = h;
	t->arena_len += n;
	t->slots.ids[i] = id;
	if ((uint64_t)t->count * 2 > t->slots.mask)
		grow_slots(&t->slots, t->hash, t->count);
	if (is_new)
		*is_new = true;
	return id;
}

const uint32_t *cpa_stacktab_get(const struct cpa_stacktab *t, uint32_t id,
				 uint32_t *n)
{
	if (id == 0 || id > t->count)
		return NULL;
	*n = t->n[id];
	return t->arena + t->off[id];
}

uint32_t cpa_stacktab_count(const struct cpa_stacktab *t)
{
	return t->count;
}

size_t cpa_stacktab_bytes(const struct cpa_stacktab *t)
{
	return t->arena_cap * sizeof(uint32_t) + (size_t)t->cap * 20 +
	       (size_t)(t->slots.mask + 1) * 4;
}
