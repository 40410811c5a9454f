/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "log.h"
#include "map.h"

void qmap_init(struct qmap *m)
{
	memset(m, 0, sizeof(*m));
	m->mask = 255;
	m->slots = cpa_calloc(m->mask + 1, sizeof(*m->slots));
}

static size_t slot_of(const struct qmap *m, uint64_t a, uint64_t b)
{
	return (size_t)cpa_hash_u64(a * 0x9e3779b97f4a7c15ull ^ b) & m->mask;
}

static void grow(struct qmap *m)
{
	free(m->slots);
	m->mask = m->mask * 2 + 1;
	m->slots = cpa_calloc(m->mask + 1, sizeof(*m->slots));
	for (size_t k = 0; k < m->n; k++) {
		size_t i = slot_of(m, m->e[k].a, m->e[k].b);
		while (m->slots[i])
			i = (i + 1) & m->mask;
		m->slots[i] = (uint32_t)k + 1;
	}
}

void qmap_add(struct qmap *m, uint64_t a, uint64_t b, uint64_t v)
{
	size_t i = slot_of(m, a, b);
	for (; m->slots[i]; i = (i + 1) & m->mask) {
		struct qmap_entry *e = &m->e[m->slots[i] - 1];
		if (e->a == a && e->b == b) {
			e->v += v;
			return;
		}
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 256;
		m->e = cpa_realloc(m->e, m->cap * sizeof(*m->e));
	}
	m->e[m->n] = (struct qmap_entry){a, b, v};
	m->slots[i] = (uint32_t)++m->n;
	if (m->n * 2 > m->mask)
		grow(m);
}

uint64_t qmap_get(const struct qmap *m, uint64_t a, uint64_t b)
{
	for (size_t i = slot_of(m, a, b); m->slots[i]; i = (i + 1) & m->mask) {
		const struct qmap_entry *e = &m->e[m->slots[i] - 1];
		if (e->a == a && e->b == b)
			return e->v;
	}
	return 0;
}

void qmap_clear(struct qmap *m)
{
	memset(m->slots, 0, (m->mask + 1) * sizeof(*m->slots));
	m->n = 0;
}

void qmap_free(struct qmap *m)
{
	free(m->e);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}
