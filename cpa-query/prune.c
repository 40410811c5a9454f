/* SPDX-License-Identifier: MIT */
/*
 * --prune N: a group of stream sums cut to the flame graph a screen of N
 * columns can draw. A day of a busy host has millions of distinct paths,
 * almost all of them far narrower than a column; writing them costs the
 * reader seconds and hundreds of MiB for nothing it can show. A frame
 * whose total in the group is under 1/N of its kind's total is dropped
 * with everything below it, and its weight goes to one "[other]" frame
 * under its caller, so every node drawn keeps its true total.
 *
 * The tree is walked one depth at a time: each level's table holds only
 * the children of the nodes kept at the level above, and a path leaves
 * the walk at its first narrow frame, so the work is the frames of each
 * path down to where it is cut, never the whole tree at once. Root
 * labels are never cut (a label set is a row the reader may filter on).
 * With --callee the tree is the callee view's, walked from the leaf
 * across label sets (the labels are at its far end), and a cut stack
 * keeps its leaf end, "[other]" standing for its callers. Kinds whose
 * frees net against their allocations pass whole: their frees must meet
 * their allocations' stacks.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "output.h"

#define OTHER "[other]"

/* One path of the group on its way down the tree. */
struct cut {
	uint32_t ls, path;	/* output label set, id in s->paths */
	const uint32_t *f;	/* the path's frames, len of them */
	uint32_t len;
	uint16_t kind;
	uint64_t w;
	uint64_t node;		/* its node at the depth reached: the
				 * level in the high word */
	size_t slot;		/* its next frame in the level's table */
};

/* Where paths were cut: one [other] per node, written once. */
struct cut_at {
	uint32_t ls, path, depth;	/* one path cut there */
};

struct pruner {
	struct stream_sink *s;
	uint64_t group;
	uint32_t other;		/* string id of "[other]" */
	uint32_t *frames;
	size_t cap;
	struct qmap cuts;	/* (node, label set) -> weight cut below */
	struct cut_at *at;	/* by index in cuts */
	size_t n_at, cap_at;
};

static void emit(struct pruner *p, uint32_t ls, uint32_t path, uint32_t keep,
		 bool other, uint64_t w)
{
	uint32_t n, o = other && p->s->callee;
	const uint32_t *f = cpa_stacktab_get(p->s->paths, path, &n);
	CPA_GROW(p->frames, p->cap, (size_t)keep + 1);
	/* the callers' end, or with callee the leaf's */
	memcpy(p->frames + o, p->s->callee ? f + n - keep : f,
	       keep * sizeof(*f));
	if (o)
		p->frames[0] = p->other;
	else if (other)
		p->frames[keep] = p->other;
	uint32_t stack = cpa_symw_stack(&p->s->w, p->frames, keep + other);
	qmap_add(&p->s->pruned, p->group, (uint64_t)ls << 32 | stack, w);
}

static void cut(struct pruner *p, const struct cut *c, uint32_t depth)
{
	size_t j = qmap_slot(&p->cuts, c->node, c->ls);
	p->cuts.e[j].v += c->w;
	/* the first path cut there names it: those after share its
	 * frames down to the cut */
	if (j >= p->n_at) {
		CPA_GROW(p->at, p->cap_at, j + 1);
		p->at[j] = (struct cut_at){ c->ls, c->path, depth };
		p->n_at = j + 1;
	}
}

/* The paths c[0..n) kept down to depth: a whole one is written, the
 * others summed by their frame at depth under their node into level.
 * The number left in c, in order. */
static size_t descend(struct pruner *p, struct cut *c, size_t n,
		      uint32_t depth, struct qmap *level)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const uint32_t *f = c[i].f;
		uint32_t len = c[i].len;
		if (len == depth) {	/* whole and wide enough */
			emit(p, c[i].ls, c[i].path, len, false, c[i].w);
			continue;
		}
		uint32_t fr = p->s->callee ? f[len - 1 - depth] : f[depth];
		c[i].slot = qmap_slot(level, c[i].node, fr);
		level->e[c[i].slot].v += c[i].w;
		if (k != i)
			c[k] = c[i];
		k++;
	}
	return k;
}

static uint16_t kind_of(const struct stream_sink *s, uint32_t ls)
{
	uint32_t n;
	return (uint16_t)cpa_stacktab_get(s->out_ls, ls, &n)[LW_KIND];
}

void prune_group(struct stream_sink *s)
{
	struct pruner p = { .s = s, .other = cpa_symw_cstr(&s->w, OTHER) };
	uint64_t total[CPA_KIND_COUNT] = {0};
	struct cut *c = cpa_malloc((s->agg.n + 1) * sizeof(*c));
	size_t n = 0;

	for (size_t i = 0; i < s->agg.n; i++) {
		const struct qmap_entry *e = &s->agg.e[i];
		uint32_t ls = (uint32_t)(e->b >> 32), path = (uint32_t)e->b;
		uint16_t kind = kind_of(s, ls);
		p.group = e->a;
		if (kind >= CPA_KIND_COUNT || cpa_kind_nets(kind)) {
			uint32_t len;
			cpa_stacktab_get(s->paths, path, &len);
			emit(&p, ls, path, len, false, e->v);
			continue;
		}
		total[kind] += e->v;
		/* the callee view has the root labels at the leaves: its
		 * tree starts at the kind, across label sets */
		uint32_t len;
		const uint32_t *f = cpa_stacktab_get(s->paths, path, &len);
		c[n++] = (struct cut){ ls, path, f, len, kind, e->v,
				       s->callee ? (uint64_t)kind : ls, 0 };
	}

	/* One pass a depth over the paths still walked: each is tested
	 * against the level above, whose sums are whole, and what is kept
	 * goes on into the next level's table, so the tables alternate.
	 * Emits and cuts come in the order a pass per test and a pass per
	 * sum would make them. */
	struct qmap level[2];
	qmap_init(&level[0]);
	qmap_init(&level[1]);
	qmap_init(&p.cuts);
	n = descend(&p, c, n, 0, &level[0]);
	for (uint32_t depth = 0; n; depth++) {
		struct qmap *at = &level[depth & 1], *next = &level[~depth & 1];
		size_t k = 0;
		qmap_clear(next);
		for (size_t i = 0; i < n; i++) {
			uint64_t t = total[c[i].kind];
			if ((double)at->e[c[i].slot].v * s->prune < (double)t) {
				cut(&p, &c[i], depth);
				continue;
			}
			c[i].node = (uint64_t)(depth + 1) << 32 | c[i].slot;
			if (k != i)
				c[k] = c[i];
			k++;
		}
		n = descend(&p, c, k, depth + 1, next);
	}
	for (size_t j = 0; j < p.cuts.n; j++)
		emit(&p, p.at[j].ls, p.at[j].path, p.at[j].depth, true,
		     p.cuts.e[j].v);
	qmap_free(&level[0]);
	qmap_free(&level[1]);
	qmap_free(&p.cuts);
	free(p.at);
	free(c);
	free(p.frames);
}

void stream_sink_prune(struct stream_sink *s, uint32_t n, bool callee)
{
	s->prune = n;
	s->callee = callee;
	s->paths = cpa_stacktab_new();
	qmap_init(&s->pruned);
	/* pairs found by id (agg_window), but with CPA_QUERY_ENTRYWISE=1
	 * (no window sink): the hashed adds entry by entry they must give */
	if (s->k.window)
		s->rows = cpa_calloc(1, sizeof(*s->rows));
}
