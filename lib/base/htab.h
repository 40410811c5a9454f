/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * The one hash table: open addressing with linear probing over ids that
 * index the caller's own dense array of entries. The table holds only
 * (id, hash) pairs; keys and values live with the caller, so interning
 * byte strings, u64-keyed maps and aggregation maps share it, and adding
 * an entry allocates nothing but the occasional doubling of the slots.
 *
 *	struct cpa_htab_probe pr;
 *	uint64_t h = cpa_hash(key, len, seed);
 *	for (uint32_t id = cpa_htab_first(t, h, &pr); id;
 *	     id = cpa_htab_next(t, &pr))
 *		if (equal(&entries[id], key))
 *			return id;
 *	id = new_entry(key);
 *	cpa_htab_add(t, &pr, id);
 *
 * Ids are the caller's, never 0. The load stays at most one half, and a
 * slot keeps 32 bits of its key's hash, so a probe compares keys only on
 * a full 32-bit match: long runs of colliding slots cost integer compares,
 * not key compares. Keys from untrusted input must be hashed with
 * cpa_hash (seeded, well mixed), never used raw.
 */
#ifndef CPA_HTAB_H
#define CPA_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct cpa_htab_slot {
	uint32_t id;		/* 0: empty */
	uint32_t hash;		/* low 32 bits of the key's hash */
};

struct cpa_htab {
	struct cpa_htab_slot *slots;
	uint32_t mask;		/* slots - 1, a power of two less one */
	uint32_t count;
};

/* Where a lookup is: the slot it looks at, and the hash it looks for. */
struct cpa_htab_probe {
	uint32_t i, hash;
};

/* An empty table with room for about min_entries before it grows. */
void cpa_htab_init(struct cpa_htab *t, uint32_t min_entries);
void cpa_htab_free(struct cpa_htab *t);
/* Forgets every entry, keeping the slots' memory. */
void cpa_htab_clear(struct cpa_htab *t);
size_t cpa_htab_bytes(const struct cpa_htab *t);

/* Candidate ids for hash h, one by one, then 0: then pr names the empty
 * slot where cpa_htab_add puts a new id of that hash. */
static inline uint32_t cpa_htab_next(const struct cpa_htab *t,
				     struct cpa_htab_probe *pr)
{
	for (;;) {
		const struct cpa_htab_slot *s = &t->slots[pr->i];
		if (!s->id)
			return 0;
		pr->i = (pr->i + 1) & t->mask;
		if (s->hash == pr->hash)
			return s->id;
	}
}

static inline uint32_t cpa_htab_first(const struct cpa_htab *t, uint64_t h,
				      struct cpa_htab_probe *pr)
{
	pr->hash = (uint32_t)h;
	pr->i = pr->hash & t->mask;
	return cpa_htab_next(t, pr);
}

/* Adds id at the slot where the lookup in pr ended with 0 (no other
 * change to t in between). May grow the table. */
void cpa_htab_add(struct cpa_htab *t, const struct cpa_htab_probe *pr,
		  uint32_t id);
/* Removes the id the lookup in pr just returned (no other change to t in
 * between). The ids after it in its run move back, so no tombstone is
 * left and lookups stay as short as if it had never been added. */
void cpa_htab_remove(struct cpa_htab *t, const struct cpa_htab_probe *pr);

#endif
