/* SPDX-License-Identifier: MIT */
/*
 * Nodes are interned by (parent, name): the id of a node is the
 * stacktab's id of that pair, so a frame under a parent is one lookup.
 * The levels are written by a walk with an explicit stack (depth is the
 * input's, not the C stack's).
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "folded.h"
#include "intern.h"
#include "log.h"
#include "protobuf.h"

struct fnode {
	uint32_t name;		/* in names: 1.. */
	uint32_t first, next;	/* first child, next sibling (0: none) */
	int64_t self, total;
};

struct flame {
	struct cpa_strtab *names;
	struct cpa_stacktab *pairs;	/* (parent, name) -> node id */
	struct fnode *n;		/* [0] is the root, "total" */
	size_t cap;
	uint32_t count;			/* nodes, the root included */
};

struct flame *flame_new(void)
{
	struct flame *f = cpa_calloc(1, sizeof(*f));

	f->names = cpa_strtab_new();
	f->pairs = cpa_stacktab_new();
	CPA_GROW(f->n, f->cap, 1);
	memset(&f->n[0], 0, sizeof(f->n[0]));
	f->count = 1;
	return f;
}

void flame_free(struct flame *f)
{
	if (!f)
		return;
	cpa_strtab_free(f->names);
	cpa_stacktab_free(f->pairs);
	free(f->n);
	free(f);
}

int64_t flame_total(const struct flame *f)
{
	return f->n[0].total;
}

static uint32_t child(struct flame *f, uint32_t parent, const char *s,
		      size_t len)
{
	uint32_t key[2], id;
	bool is_new;

	key[0] = parent;
	key[1] = cpa_strtab_intern(f->names, s, len, NULL);
	id = cpa_stacktab_intern(f->pairs, key, 2, &is_new);
	if (is_new) {
		CPA_GROW(f->n, f->cap, (size_t)id + 1);
		memset(&f->n[id], 0, sizeof(f->n[id]));
		f->n[id].name = key[1];
		f->n[id].next = f->n[parent].first;
		f->n[parent].first = id;
		f->count++;
	}
	return id;
}

int flame_add_folded(struct flame *f, const char *text, size_t len,
		     uint64_t scale, char *const *prefix, size_t n,
		     char *err, size_t errlen)
{
	const char *line = text, *end = text + len;
	size_t lineno = 0;

	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t ll = (size_t)((nl ? nl : end) - line);
		struct cpa_folded_line fl;
		const char *p, *fr;
		size_t frl, depth = 0;
		uint32_t at = 0, path[1];
		char why[200];
		int rc;
		int64_t v;

		(void)path;
		lineno++;
		rc = cpa_folded_parse(line, ll, &fl, why, sizeof(why));
		line = nl ? nl + 1 : end;
		if (rc == 0)
			continue;
		if (rc < 0)
			return cpa_fail(err, errlen, "line %zu: %s", lineno, why);
		/* the call site: the stack's first frames */
		p = fl.stack;
		for (size_t i = 0; i < n; i++) {
			if (!cpa_folded_frame(&p, fl.stack + fl.stack_len, &fr,
					      &frl) ||
			    frl != strlen(prefix[i]) ||
			    memcmp(fr, prefix[i], frl))
				goto next;
		}
		v = (int64_t)(fl.count * scale);
		f->n[0].total += v;
		p = fl.stack;
		while (cpa_folded_frame(&p, fl.stack + fl.stack_len, &fr,
					&frl)) {
			if (!frl) {
				fr = "[unknown]";
				frl = strlen(fr);
			}
			at = child(f, at, fr, frl);
			f->n[at].total += v;
			depth++;
		}
		f->n[at].self += v;
next:
		;
	}
	return 0;
}

/* Children of a node in name order, into kids (a scratch array). */
static int by_name(const void *a, const void *b, void *arg)
{
	const struct flame *f = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t xl, yl;
	const char *xs = cpa_strtab_get(f->names, f->n[x].name, &xl);
	const char *ys = cpa_strtab_get(f->names, f->n[y].name, &yl);
	int c = memcmp(xs, ys, xl < yl ? xl : yl);

	return c ? c : (xl > yl) - (xl < yl);
}

struct level {
	int64_t *v;
	size_t n, cap;
	int64_t end;	/* where the last node of the level ends */
};

void flame_encode(const struct flame *f, struct cpa_buf *out)
{
	struct { uint32_t id; int64_t x; size_t depth; } *stack = NULL;
	size_t top = 0, cap_stack = 0, n_levels = 0, cap_levels = 0;
	struct level *lv = NULL;
	uint32_t *kids = NULL, *name_ix;
	size_t cap_kids = 0;
	int64_t max_self = 0;
	uint32_t n_names = 1;
	struct cpa_buf level = { 0 };

	/* name index in the answer: "total" first, then in walk order */
	name_ix = cpa_calloc((size_t)cpa_strtab_count(f->names) + 1,
			     sizeof(*name_ix));
	CPA_GROW(stack, cap_stack, 1);
	stack[top].id = 0;
	stack[top].x = 0;
	stack[top].depth = 0;
	top++;
	cpa_pb_string(out, 1, "total");
	while (top) {
		uint32_t id = stack[--top].id, nk = 0, c;
		int64_t x = stack[top].x;
		size_t depth = stack[top].depth;
		const struct fnode *nd = &f->n[id];
		struct level *l;
		int64_t ix = 0;

		if (depth == n_levels) {
			CPA_GROW(lv, cap_levels, n_levels + 1);
			memset(&lv[n_levels], 0, sizeof(lv[0]));
			n_levels++;
		}
		if (id) {
			uint32_t nl;
			const char *s;

			if (!name_ix[nd->name]) {
				name_ix[nd->name] = n_names++;
				s = cpa_strtab_get(f->names, nd->name, &nl);
				cpa_pb_bytes(out, 1, s, nl);
			}
			ix = name_ix[nd->name];
		}
		l = &lv[depth];
		CPA_GROW(l->v, l->cap, l->n + 4);
		l->v[l->n++] = x - l->end;	/* from the previous node */
		l->v[l->n++] = nd->total;
		l->v[l->n++] = nd->self;
		l->v[l->n++] = ix;
		l->end = x + nd->total;
		if (nd->self > max_self)
			max_self = nd->self;
		for (c = nd->first; c; c = f->n[c].next) {
			CPA_GROW(kids, cap_kids, (size_t)nk + 1);
			kids[nk++] = c;
		}
		qsort_r(kids, nk, sizeof(*kids), by_name, (void *)f);
		/* pushed right to left: the leftmost is walked first */
		x += nd->self;
		{
			int64_t cx = x;

			for (uint32_t k = 0; k < nk; k++)
				cx += f->n[kids[k]].total;
			CPA_GROW(stack, cap_stack, top + nk);
			for (uint32_t k = nk; k-- > 0;) {
				cx -= f->n[kids[k]].total;
				stack[top].id = kids[k];
				stack[top].x = cx;
				stack[top].depth = depth + 1;
				top++;
			}
		}
	}
	for (size_t i = 0; i < n_levels; i++) {
		level.len = 0;
		cpa_pb_packed(&level, 1, lv[i].v, lv[i].n);
		cpa_pb_bytes(out, 2, level.p ? level.p : (uint8_t *)"",
			     level.len);
		free(lv[i].v);
	}
	cpa_pb_varint(out, 3, (uint64_t)f->n[0].total);
	cpa_pb_varint(out, 4, (uint64_t)max_self);
	cpa_buf_free(&level);
	free(lv);
	free(kids);
	free(stack);
	free(name_ix);
}
