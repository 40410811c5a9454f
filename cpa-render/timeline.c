/* SPDX-License-Identifier: MIT */
/*
 * Samples kept with their times (render.h's struct timeline), for the
 * formats that draw time: the html heat map, speedscope's profiles and
 * the svg flame chart.
 */
#include <stdlib.h>

#include "buf.h"
#include "log.h"
#include "render.h"

void timeline_add(struct timeline *tl, uint64_t time_ns, uint64_t weight,
		  uint32_t leaf, uint32_t group)
{
	CPA_GROW(tl->t, tl->cap, tl->n + 1);
	tl->t[tl->n++] = (struct timed){ time_ns, weight, leaf, group };
}

void timeline_free(struct timeline *tl)
{
	free(tl->t);
	tl->t = NULL;
	tl->n = tl->cap = 0;
}

struct order {
	uint64_t time_ns;
	size_t index;
};

static int by_time(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	/* equal times keep arrival order (qsort alone is not stable) */
	return x->index < y->index ? -1 : x->index > y->index;
}

void timeline_sort(struct timeline *tl)
{
	struct order *ord = cpa_malloc(tl->n * sizeof(*ord) + 1);
	struct timed *sorted = cpa_malloc(tl->n * sizeof(*sorted) + 1);

	for (size_t i = 0; i < tl->n; i++)
		ord[i] = (struct order){ tl->t[i].time_ns, i };
	qsort(ord, tl->n, sizeof(*ord), by_time);
	for (size_t i = 0; i < tl->n; i++)
		sorted[i] = tl->t[ord[i].index];
	free(ord);
	free(tl->t);
	tl->t = sorted;
	tl->cap = tl->n;
}
