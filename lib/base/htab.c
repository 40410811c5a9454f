/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "htab.h"
#include "log.h"

/* Most slots a table takes: ids are 32-bit and the load is at most 1/2. */
#define HTAB_MAX_SLOTS (UINT32_C(1) << 31)

static void alloc_slots(struct cpa_htab *t, uint64_t nslots)
{
	t->slots = cpa_calloc(nslots, sizeof(*t->slots));
	/* probes land at random: big tables want huge pages */
	cpa_want_huge_pages(t->slots, nslots * sizeof(*t->slots));
	t->mask = (uint32_t)(nslots - 1);
}

void cpa_htab_init(struct cpa_htab *t, uint32_t min_entries)
{
	uint64_t n = 16;
	while (n < (uint64_t)min_entries * 2 && n < HTAB_MAX_SLOTS)
		n *= 2;
	t->count = 0;
	alloc_slots(t, n);
}

void cpa_htab_free(struct cpa_htab *t)
{
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

void cpa_htab_clear(struct cpa_htab *t)
{
	memset(t->slots, 0, ((size_t)t->mask + 1) * sizeof(*t->slots));
	t->count = 0;
}

size_t cpa_htab_bytes(const struct cpa_htab *t)
{
	return ((size_t)t->mask + 1) * sizeof(*t->slots);
}

/* Doubles the slots; the stored hash bits place every id again without
 * looking at the keys. */
static void grow(struct cpa_htab *t)
{
	uint64_t nslots = (uint64_t)t->mask + 1;
	if (nslots >= HTAB_MAX_SLOTS)
		cpa_die("out of memory (hash table of %llu entries)",
			(unsigned long long)t->count);
	struct cpa_htab_slot *old = t->slots;
	alloc_slots(t, nslots * 2);
	for (uint64_t k = 0; k < nslots; k++) {
		if (!old[k].id)
			continue;
		uint32_t i = old[k].hash & t->mask;
		while (t->slots[i].id)
			i = (i + 1) & t->mask;
		t->slots[i] = old[k];
	}
	free(old);
}

void cpa_htab_add(struct cpa_htab *t, const struct cpa_htab_probe *pr,
		  uint32_t id)
{
	t->slots[pr->i] = (struct cpa_htab_slot){id, pr->hash};
	if ((uint64_t)++t->count * 2 > t->mask)
		grow(t);
}

void cpa_htab_remove(struct cpa_htab *t, const struct cpa_htab_probe *pr)
{
	uint32_t hole = (pr->i - 1) & t->mask, i = hole;

	t->slots[hole].id = 0;
	t->count--;
	for (;;) {
		i = (i + 1) & t->mask;
		if (!t->slots[i].id)
			return;
		uint32_t home = t->slots[i].hash & t->mask;
		/* an id whose home lies after the hole, up to it, stays */
		if (((i - home) & t->mask) < ((i - hole) & t->mask))
			continue;
		t->slots[hole] = t->slots[i];
		t->slots[i].id = 0;
		hole = i;
	}
}
