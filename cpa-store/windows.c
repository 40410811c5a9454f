/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hash.h"
#include "log.h"
#include "windows.h"

void windows_init(struct windows *ws, uint64_t interval_ns, uint64_t grace_ns)
{
	memset(ws, 0, sizeof(*ws));
	ws->interval_ns = interval_ns;
	ws->grace_ns = grace_ns;
}

size_t window_bytes(const struct window *w)
{
	return sizeof(*w) + w->cap * sizeof(*w->e) + cpa_htab_bytes(&w->index);
}

static struct window *window_new(uint64_t start)
{
	struct window *w = cpa_calloc(1, sizeof(*w));
	w->start_ns = start;
	w->cap = 16;
	w->e = cpa_malloc(w->cap * sizeof(*w->e));
	cpa_htab_init(&w->index, w->cap);
	return w;
}

void window_free(struct window *w)
{
	if (!w)
		return;
	free(w->e);
	cpa_htab_free(&w->index);
	free(w);
}

static uint64_t entry_hash(const struct cpa_store_labelset *ls,
			   uint32_t stack)
{
	return cpa_hash(ls, sizeof(*ls), stack);
}

/* Returns the change in memory held. */
static size_t window_add(struct window *w, const struct in_sample *s)
{
	size_t before = window_bytes(w);
	struct cpa_htab_probe pr;
	for (uint32_t id = cpa_htab_first(&w->index,
					  entry_hash(&s->ls, s->stack), &pr);
	     id; id = cpa_htab_next(&w->index, &pr)) {
		struct wentry *e = &w->e[id - 1];
		if (e->stack == s->stack && !memcmp(&e->ls, &s->ls,
						    sizeof(e->ls))) {
			e->weight += s->weight;
			w->samples++;
			return 0;
		}
	}
	CPA_GROW(w->e, w->cap, (size_t)w->n + 1);
	w->e[w->n] = (struct wentry){s->ls, s->stack, s->weight};
	cpa_htab_add(&w->index, &pr, ++w->n);
	w->samples++;
	return window_bytes(w) - before;
}

static bool due(const struct windows *ws, const struct window *w)
{
	return w->start_ns + ws->interval_ns + ws->grace_ns <= ws->high_ns;
}

void windows_add(struct windows *ws, const struct in_sample *s)
{
	uint64_t start = s->time_ns - s->time_ns % ws->interval_ns;
	/* Binary search: few windows are open, but a backlog may not be. */
	size_t lo = 0, hi = ws->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ws->w[mid]->start_ns < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct window *w;
	if (lo < ws->n && ws->w[lo]->start_ns == start) {
		w = ws->w[lo];
	} else {
		CPA_GROW(ws->w, ws->cap, ws->n + 1);
		memmove(ws->w + lo + 1, ws->w + lo,
			(ws->n - lo) * sizeof(*ws->w));
		w = ws->w[lo] = window_new(start);
		ws->n++;
		ws->bytes += window_bytes(w);
	}
	ws->bytes += window_add(w, s);
	if (s->time_ns > ws->high_ns) {
		ws->high_ns = s->time_ns;
		for (size_t i = 0; i < ws->n && due(ws, ws->w[i]); i++)
			ws->w[i]->closed = true;
	}
	if (due(ws, w))
		w->closed = true;
}

void windows_close_all(struct windows *ws)
{
	for (size_t i = 0; i < ws->n; i++)
		ws->w[i]->closed = true;
}

size_t windows_closed_count(const struct windows *ws)
{
	size_t c = 0;
	for (size_t i = 0; i < ws->n; i++)
		c += ws->w[i]->closed;
	return c;
}

size_t windows_take_closed(struct windows *ws, struct window ***out,
			   size_t *n, size_t *cap)
{
	size_t taken = 0, keep = 0;
	for (size_t i = 0; i < ws->n; i++) {
		struct window *w = ws->w[i];
		if (!w->closed) {
			ws->w[keep++] = w;
			continue;
		}
		*out = cpa_grow(*out, cap, *n + 1, sizeof(**out));
		(*out)[(*n)++] = w;
		ws->bytes -= window_bytes(w);
		taken++;
	}
	ws->n = keep;
	return taken;
}

void windows_free(struct windows *ws)
{
	for (size_t i = 0; i < ws->n; i++)
		window_free(ws->w[i]);
	free(ws->w);
	memset(ws, 0, sizeof(*ws));
}
