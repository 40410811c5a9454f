/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hash.h"
#include "map.h"

void qmap_init(struct qmap *m)
{
	memset(m, 0, sizeof(*m));
	cpa_htab_init(&m->index, 256);
}

/* The entry of (a, b) of hash h, or NULL with pr where to add it. */
static struct qmap_entry *find(const struct qmap *m, uint64_t a, uint64_t b,
			       uint64_t h, struct cpa_htab_probe *pr)
{
	for (uint32_t id = cpa_htab_first(&m->index, h, pr); id;
	     id = cpa_htab_next(&m->index, pr)) {
		struct qmap_entry *e = &m->e[id - 1];
		if (e->a == a && e->b == b)
			return e;
	}
	return NULL;
}

static size_t slot_hashed(struct qmap *m, uint64_t a, uint64_t b, uint64_t h)
{
	struct cpa_htab_probe pr;
	struct qmap_entry *e = find(m, a, b, h, &pr);

	if (e)
		return (size_t)(e - m->e);
	CPA_GROW(m->e, m->cap, m->n + 1);
	m->e[m->n++] = (struct qmap_entry){a, b, 0};
	cpa_htab_add(&m->index, &pr, (uint32_t)m->n);
	return m->n - 1;
}

size_t qmap_slot(struct qmap *m, uint64_t a, uint64_t b)
{
	return slot_hashed(m, a, b, qmap_hash(a, b));
}

void qmap_add_hashed(struct qmap *m, uint64_t a, uint64_t b, uint64_t h,
		     uint64_t v)
{
	size_t i = slot_hashed(m, a, b, h);	/* may move m->e */
	m->e[i].v += v;
}

void qmap_add(struct qmap *m, uint64_t a, uint64_t b, uint64_t v)
{
	size_t i = qmap_slot(m, a, b);	/* may move m->e */
	m->e[i].v += v;
}

size_t qmap_push(struct qmap *m, uint64_t a, uint64_t b)
{
	CPA_GROW(m->e, m->cap, m->n + 1);
	m->e[m->n++] = (struct qmap_entry){a, b, 0};
	return m->n - 1;
}

void qmap_reindex(struct qmap *m)
{
	cpa_htab_clear(&m->index);
	for (size_t i = 0; i < m->n; i++) {
		struct cpa_htab_probe pr;
		const struct qmap_entry *e = &m->e[i];
		if (!find(m, e->a, e->b, qmap_hash(e->a, e->b), &pr))
			cpa_htab_add(&m->index, &pr, (uint32_t)i + 1);
	}
}

uint64_t qmap_get(const struct qmap *m, uint64_t a, uint64_t b)
{
	struct cpa_htab_probe pr;
	const struct qmap_entry *e = find(m, a, b, qmap_hash(a, b), &pr);

	return e ? e->v : 0;
}

void qmap_clear(struct qmap *m)
{
	cpa_htab_clear(&m->index);
	m->n = 0;
}

void qmap_free(struct qmap *m)
{
	free(m->e);
	cpa_htab_free(&m->index);
	memset(m, 0, sizeof(*m));
}
