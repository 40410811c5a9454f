/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "topfuncs.h"

void cpa_topfuncs_init(struct cpa_topfuncs *t)
{
	memset(t, 0, sizeof(*t));
}

void cpa_topfuncs_free(struct cpa_topfuncs *t)
{
	free(t->self);
	free(t->total);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}

void cpa_topfuncs_add(struct cpa_topfuncs *t, const uint32_t *names,
		      uint32_t n, uint64_t weight)
{
	uint64_t stamp = ++t->stacks;

	t->sum += weight;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = names[i];
		if (id >= t->cap) {
			size_t cap = t->cap, c2 = t->cap;
			CPA_GROW_ZERO(t->self, t->cap, (size_t)id + 1);
			CPA_GROW_ZERO(t->total, cap, t->cap);
			CPA_GROW_ZERO(t->seen, c2, t->cap);
		}
		if (t->seen[id] != stamp) {
			t->seen[id] = stamp;
			t->total[id] += weight;
		}
	}
	if (n)
		t->self[names[n - 1]] += weight;
}

struct order_ctx {
	const struct cpa_topfuncs *t;
	const struct cpa_strtab *names;
	enum cpa_top_order by;
};

/* qsort has no context argument: the one sort in progress */
static const struct order_ctx *sorting;

static int cmp_u64(uint64_t x, uint64_t y)
{
	return x < y ? -1 : x > y;
}

static int by_order(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct cpa_topfuncs *t = sorting->t;
	int c;

	if (sorting->by == CPA_TOP_SELF) {
		c = cmp_u64(t->self[y], t->self[x]);
		if (!c)
			c = cmp_u64(t->total[y], t->total[x]);
	} else {
		c = cmp_u64(t->total[y], t->total[x]);
		if (!c)
			c = cmp_u64(t->self[x], t->self[y]);
	}
	if (c)
		return c;
	uint32_t lx, ly;
	const char *sx = cpa_strtab_get(sorting->names, x, &lx);
	const char *sy = cpa_strtab_get(sorting->names, y, &ly);
	c = memcmp(sx, sy, lx < ly ? lx : ly);
	return c ? c : cmp_u64(lx, ly);
}

static double pct(uint64_t v, uint64_t sum)
{
	return sum ? 100.0 * (double)v / (double)sum : 0;
}

void cpa_topfuncs_write(FILE *f, const struct cpa_topfuncs *t,
			const struct cpa_strtab *names, unsigned rows,
			enum cpa_top_order by, cpa_top_value_fn value,
			const void *ctx)
{
	/* only names some stack had: a name table may hold more */
	uint32_t count = 0, limit = cpa_strtab_count(names);
	uint32_t *ids = cpa_malloc(((size_t)limit + 1) * sizeof(*ids));
	struct order_ctx oc = { t, names, by };
	char a[64], b[64];

	for (uint32_t id = 1; id <= limit && id < t->cap; id++)
		if (t->seen[id])
			ids[count++] = id;
	sorting = &oc;
	qsort(ids, count, sizeof(*ids), by_order);
	sorting = NULL;
	fprintf(f, "%14s %8s %14s %8s  %s\n", "self", "self%", "total",
		"total%", "function");
	for (uint32_t i = 0; i < count && i < rows; i++) {
		uint32_t id = ids[i], len;
		const char *name = cpa_strtab_get(names, id, &len);
		if (value) {
			value(a, sizeof(a), t->self[id], ctx);
			value(b, sizeof(b), t->total[id], ctx);
		} else {
			snprintf(a, sizeof(a), "%" PRIu64, t->self[id]);
			snprintf(b, sizeof(b), "%" PRIu64, t->total[id]);
		}
		fprintf(f, "%14s %7.2f%% %14s %7.2f%%  %.*s\n", a,
			pct(t->self[id], t->sum), b, pct(t->total[id], t->sum),
			(int)len, name);
	}
	free(ids);
}
