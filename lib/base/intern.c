/* SPDX-License-Identifier: MIT */
/*
 * Interning: an open-addressing hash table from byte content to dense ids,
 * the content kept in one growing arena, so interning allocates only when
 * the arena or the slot array doubles. Strings and stacks are both blobs;
 * a string's blob ends with a NUL so that lookups can return C strings.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hash.h"
#include "htab.h"
#include "intern.h"
#include "log.h"

struct blobtab {
	struct cpa_htab index;	/* content hash -> id */
	char *arena;
	size_t arena_len, arena_cap;
	uint64_t *off;		/* off[id]: start in arena */
	uint32_t *len;		/* len[id]: content bytes (not the NUL) */
	uint32_t count, cap;	/* ids 1..count */
};

static void blob_init(struct blobtab *t, size_t arena_cap)
{
	memset(t, 0, sizeof(*t));
	cpa_htab_init(&t->index, 512);
	t->cap = 512;
	t->off = cpa_malloc(t->cap * sizeof(*t->off));
	t->len = cpa_malloc(t->cap * sizeof(*t->len));
	t->arena_cap = arena_cap;
	t->arena = cpa_malloc(t->arena_cap);
}

static void blob_free(struct blobtab *t)
{
	cpa_htab_free(&t->index);
	free(t->arena);
	free(t->off);
	free(t->len);
}

/* Interns len bytes of data; with nul, a NUL is stored after them. Content
 * starts 4-byte aligned in the arena, so stacks can be read as uint32_t. */
/* Id of the blob of len bytes of data, 0 when absent; *pr is left where
 * an absent blob would be added. */
static uint32_t blob_find(const struct blobtab *t, const void *data, size_t len,
			  uint64_t seed, struct cpa_htab_probe *pr)
{
	uint64_t h = cpa_hash(data, len, seed);
	for (uint32_t id = cpa_htab_first(&t->index, h, pr); id;
	     id = cpa_htab_next(&t->index, pr))
		if (t->len[id] == len &&
		    !memcmp(t->arena + t->off[id], data, len))
			return id;
	return 0;
}

static uint32_t blob_intern(struct blobtab *t, const void *data, size_t len,
			    bool nul, uint64_t seed, bool *is_new)
{
	struct cpa_htab_probe pr;
	uint32_t found = blob_find(t, data, len, seed, &pr);
	if (is_new)
		*is_new = !found;
	if (found)
		return found;
	if (len > UINT32_MAX || t->count == UINT32_MAX - 1)
		cpa_die("out of memory (interning %zu bytes)", len);
	uint32_t id = ++t->count;
	if (id >= t->cap) {
		uint32_t cap = t->cap;
		CPA_GROW(t->off, t->cap, (size_t)id + 1);
		CPA_GROW(t->len, cap, (size_t)id + 1);
	}
	size_t start = (t->arena_len + 3) & ~(size_t)3;
	size_t need = start + len + (nul ? 1 : 0);
	CPA_GROW(t->arena, t->arena_cap, need);
	if (len)
		memcpy(t->arena + start, data, len);
	if (nul)
		t->arena[start + len] = '\0';
	t->off[id] = start;
	t->len[id] = (uint32_t)len;
	t->arena_len = need;
	cpa_htab_add(&t->index, &pr, id);
	return id;
}

static const char *blob_get(const struct blobtab *t, uint32_t id,
			    uint32_t *len)
{
	if (id == 0 || id > t->count)
		return NULL;
	if (len)
		*len = t->len[id];
	return t->arena + t->off[id];
}

static size_t blob_bytes(const struct blobtab *t)
{
	return t->arena_cap + (size_t)t->cap * 12 + cpa_htab_bytes(&t->index);
}

struct cpa_strtab {
	struct blobtab b;
};

struct cpa_strtab *cpa_strtab_new(void)
{
	struct cpa_strtab *t = cpa_malloc(sizeof(*t));
	blob_init(&t->b, 64 * 1024);
	return t;
}

void cpa_strtab_free(struct cpa_strtab *t)
{
	if (!t)
		return;
	blob_free(&t->b);
	free(t);
}

uint32_t cpa_strtab_intern(struct cpa_strtab *t, const char *s, size_t len,
			   bool *is_new)
{
	return blob_intern(&t->b, s, len, true, 0, is_new);
}

uint32_t cpa_strtab_find(const struct cpa_strtab *t, const char *s, size_t len)
{
	struct cpa_htab_probe pr;
	return blob_find(&t->b, s, len, 0, &pr);
}

const char *cpa_strtab_get(const struct cpa_strtab *t, uint32_t id,
			   uint32_t *len)
{
	return blob_get(&t->b, id, len);
}

uint32_t cpa_strtab_count(const struct cpa_strtab *t)
{
	return t->b.count;
}

size_t cpa_strtab_bytes(const struct cpa_strtab *t)
{
	return blob_bytes(&t->b);
}

struct cpa_stacktab {
	struct blobtab b;
};

struct cpa_stacktab *cpa_stacktab_new(void)
{
	struct cpa_stacktab *t = cpa_malloc(sizeof(*t));
	blob_init(&t->b, 64 * 1024);
	return t;
}

void cpa_stacktab_free(struct cpa_stacktab *t)
{
	if (!t)
		return;
	blob_free(&t->b);
	free(t);
}

uint32_t cpa_stacktab_intern(struct cpa_stacktab *t, const uint32_t *frames,
			     uint32_t n, bool *is_new)
{
	return blob_intern(&t->b, frames, (size_t)n * sizeof(uint32_t), false,
			   1, is_new);
}

uint32_t cpa_stacktab_find(const struct cpa_stacktab *t,
			   const uint32_t *frames, uint32_t n)
{
	struct cpa_htab_probe pr;
	return blob_find(&t->b, frames, (size_t)n * sizeof(uint32_t), 1, &pr);
}

const uint32_t *cpa_stacktab_get(const struct cpa_stacktab *t, uint32_t id,
				 uint32_t *n)
{
	uint32_t len;
	const char *p = blob_get(&t->b, id, &len);
	if (!p)
		return NULL;
	*n = len / (uint32_t)sizeof(uint32_t);
	return (const uint32_t *)(const void *)p;
}

uint32_t cpa_stacktab_count(const struct cpa_stacktab *t)
{
	return t->b.count;
}

size_t cpa_stacktab_bytes(const struct cpa_stacktab *t)
{
	return blob_bytes(&t->b);
}
