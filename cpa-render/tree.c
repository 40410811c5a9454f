/* SPDX-License-Identifier: MIT */
/*
 * Prefix tree of stacks. Nodes live in one array and ids are indexes; a
 * node's id is always greater than its parent's, which lets tree_finish()
 * sum totals and count depths in single passes over the array.
 *
 * The node array and the child index (lib/base/htab.c) are hundreds of
 * megabytes read at random for a large profile: both ask for huge pages.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hash.h"
#include "log.h"
#include "name.h"
#include "tree.h"

static inline uint64_t child_hash(uint32_t parent, uint32_t name)
{
	return cpa_hash_u64((uint64_t)parent << 32 | name);
}

static uint32_t node_new(struct tree *t, uint32_t parent, uint32_t name)
{
	if (t->n == t->cap) {
		if (t->cap >= UINT32_MAX / 2)
			cpa_die("too many distinct stack frames (over 2^31)");
		CPA_GROW(t->nodes, t->cap, (size_t)t->n + 1);
		cpa_want_huge_pages(t->nodes, (size_t)t->cap * sizeof(*t->nodes));
		/* the per-node arrays follow the nodes' capacity */
		if (t->adjacent)
			t->last = cpa_realloc(t->last, (size_t)t->cap *
					      sizeof(*t->last));
		if (t->self1)
			t->self1 = cpa_realloc(t->self1, (size_t)t->cap *
					       sizeof(*t->self1));
	}
	uint32_t id = t->n++;

	t->nodes[id] = (struct node){ name, parent, 0 };
	if (t->self1)
		t->self1[id] = 0;
	if (t->adjacent) {
		t->last[id] = TREE_NONE;
		if (parent != TREE_NONE)
			t->last[parent] = id;
	}
	return id;
}

void tree_init(struct tree *t, bool adjacent)
{
	memset(t, 0, sizeof(*t));
	t->adjacent = adjacent;
	t->names = cpa_strtab_new();
	if (!adjacent)
		cpa_htab_init(&t->index, 4096);
	node_new(t, TREE_NONE, 0);
}

void tree_reserve(struct tree *t, uint32_t nodes)
{
	if (t->adjacent || nodes <= t->cap || t->n > 1)
		return;
	CPA_GROW(t->nodes, t->cap, (size_t)nodes);
	cpa_htab_free(&t->index);
	cpa_htab_init(&t->index, nodes);
}

void tree_free(struct tree *t)
{
	free(t->nodes);
	free(t->self1);
	free(t->last);
	cpa_htab_free(&t->index);
	free(t->total);
	free(t->kid_off);
	free(t->kids);
	cpa_strtab_free(t->names);
	memset(t, 0, sizeof(*t));
}

uint32_t tree_name(struct tree *t, const char *s, size_t len)
{
	bool is_new;
	char *copy;
	/* folded text from anywhere: names drawn and printed are clean
	 * (lib/base/name.h), as cpa-unwind makes them */
	uint32_t id = cpa_strtab_intern(t->names, cpa_name_safe(s, len, &copy),
					len, &is_new);
	free(copy);
	return id;
}

const char *tree_name_str(const struct tree *t, uint32_t name, uint32_t *len)
{
	if (name == 0) {
		if (len)
			*len = 3;
		return "all";
	}
	return cpa_strtab_get(t->names, name, len);
}

uint32_t tree_child(struct tree *t, uint32_t parent, uint32_t name)
{
	if (t->adjacent) {
		/* A flame chart keeps time order: a frame merges only with
		 * the one drawn just before it at the same depth. */
		uint32_t last = t->last[parent];
		if (last != TREE_NONE && t->nodes[last].name == name)
			return last;
		return node_new(t, parent, name);
	}

	struct cpa_htab_probe pr;
	uint32_t id;

	for (id = cpa_htab_first(&t->index, child_hash(parent, name), &pr); id;
	     id = cpa_htab_next(&t->index, &pr))
		if (t->nodes[id].parent == parent && t->nodes[id].name == name)
			return id;
	id = node_new(t, parent, name);
	cpa_htab_add(&t->index, &pr, id);
	return id;
}

bool tree_add(struct tree *t, uint32_t leaf, uint64_t weight, uint64_t self1)
{
	struct node *nd = &t->nodes[leaf];

	if (self1 && !t->self1) {
		t->self1 = cpa_calloc(t->cap, sizeof(*t->self1));
		t->diff = true;
	}
	if (nd->self > UINT64_MAX - weight ||
	    (t->self1 && t->self1[leaf] > UINT64_MAX - self1))
		return false;
	nd->self += weight;
	if (t->self1)
		t->self1[leaf] += self1;
	return true;
}

uint32_t tree_path(const struct tree *t, uint32_t node, uint32_t *path)
{
	uint32_t n = 0;

	for (uint32_t id = node; id != TREE_ROOT; id = t->nodes[id].parent)
		path[n++] = id;
	for (uint32_t i = 0; i < n / 2; i++) {
		uint32_t tmp = path[i];
		path[i] = path[n - 1 - i];
		path[n - 1 - i] = tmp;
	}
	return n;
}

struct ranked {
	uint32_t rank, id;
};

static int by_rank(const void *a, const void *b)
{
	uint32_t x = ((const struct ranked *)a)->rank;
	uint32_t y = ((const struct ranked *)b)->rank;

	return x < y ? -1 : x > y;
}

/* Sorts one node's children by name rank: insertion sort for the few
 * children most nodes have, qsort beyond. */
static void sort_kids(uint32_t *kids, uint32_t n, const struct node *nodes,
		      const uint32_t *rank, struct ranked *r)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ranked v = { rank[nodes[kids[i]].name], kids[i] };
		uint32_t j = i;
		if (n <= 16)
			for (; j > 0 && r[j - 1].rank > v.rank; j--)
				r[j] = r[j - 1];
		r[j] = v;
	}
	if (n > 16)
		qsort(r, n, sizeof(*r), by_rank);
	for (uint32_t i = 0; i < n; i++)
		kids[i] = r[i].id;
}

static const struct cpa_strtab *sort_names;

static int by_name(const void *a, const void *b)
{
	uint32_t la, lb;
	const char *sa = cpa_strtab_get(sort_names, *(const uint32_t *)a, &la);
	const char *sb = cpa_strtab_get(sort_names, *(const uint32_t *)b, &lb);
	int c = memcmp(sa, sb, la < lb ? la : lb);

	if (c || la == lb)
		return c;
	/* one is a prefix of the other: compare as if each name were
	 * followed by ';', so that frames come in the order a sort of the
	 * folded lines gives (flamegraph.pl's order): "proc10" < "proc1" */
	if (la < lb)
		return ';' < (unsigned char)sb[la] ? -1 : 1;
	return (unsigned char)sa[lb] < ';' ? -1 : 1;
}

/* rank[name]: position of the name in byte order, so that sorting the
 * children of every node compares integers, not strings */
static uint32_t *name_ranks(const struct tree *t)
{
	uint32_t nn = cpa_strtab_count(t->names);
	uint32_t *ids = cpa_malloc(((size_t)nn + 1) * sizeof(*ids));
	uint32_t *rank = cpa_malloc(((size_t)nn + 1) * sizeof(*rank));

	for (uint32_t i = 0; i < nn; i++)
		ids[i] = i + 1;
	sort_names = t->names;
	qsort(ids, nn, sizeof(*ids), by_name);
	rank[0] = 0;
	for (uint32_t i = 0; i < nn; i++)
		rank[ids[i]] = i + 1;
	free(ids);
	return rank;
}

bool tree_finish(struct tree *t)
{
	uint32_t n = t->n;
	bool ok = true;

	cpa_htab_free(&t->index);
	free(t->last);
	t->last = NULL;

	/* totals bottom-up: every child has a larger id than its parent */
	t->total = cpa_malloc((size_t)n * sizeof(*t->total));
	cpa_want_huge_pages(t->total, (size_t)n * sizeof(*t->total));
	for (uint32_t i = 0; i < n; i++)
		t->total[i] = t->nodes[i].self;
	for (uint32_t i = n; i-- > 1;) {
		uint32_t p = t->nodes[i].parent;
		if (t->total[p] > UINT64_MAX - t->total[i])
			ok = false;
		t->total[p] += t->total[i];
	}

	/* children contiguous, by counting sort on the parent: count, sum
	 * to range ends, then fill each range from its end with descending
	 * ids, leaving kid_off[p] at the range's start and ids ascending,
	 * which is insertion (time) order */
	t->kid_off = cpa_calloc((size_t)n + 1, sizeof(*t->kid_off));
	t->kids = cpa_malloc((size_t)n * sizeof(*t->kids));
	cpa_want_huge_pages(t->kid_off, ((size_t)n + 1) * sizeof(*t->kid_off));
	cpa_want_huge_pages(t->kids, (size_t)n * sizeof(*t->kids));
	for (uint32_t i = 1; i < n; i++)
		t->kid_off[t->nodes[i].parent]++;
	for (uint32_t i = 0; i < n; i++)
		t->kid_off[i + 1] += t->kid_off[i];
	for (uint32_t i = n; i-- > 1;)
		t->kids[--t->kid_off[t->nodes[i].parent]] = i;

	if (!t->adjacent) {
		uint32_t *rank = name_ranks(t);
		struct ranked *buf = NULL;
		size_t cap = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t lo = t->kid_off[i], hi = t->kid_off[i + 1];
			if (hi - lo < 2)
				continue;
			CPA_GROW(buf, cap, hi - lo);
			sort_kids(t->kids + lo, hi - lo, t->nodes, rank, buf);
		}
		free(buf);
		free(rank);
	}
	t->finished = true;
	return ok;
}

void tree_walk(const struct tree *t, tree_visit_fn visit, tree_leave_fn leave,
	       void *ctx)
{
	struct frame {
		uint32_t id, depth;
		uint64_t x;
		bool leaving;
	} *stack = NULL;
	size_t n = 0, cap = 0;

	CPA_GROW(stack, cap, 1024);
	stack[n++] = (struct frame){ TREE_ROOT, 0, 0, false };
	while (n) {
		struct frame f = stack[--n];

		if (f.leaving) {
			leave(t, f.id, ctx);
			continue;
		}
		if (!visit(t, f.id, f.depth, f.x, ctx))
			continue;
		uint32_t lo = t->kid_off[f.id], hi = t->kid_off[f.id + 1];
		CPA_GROW(stack, cap, n + (hi - lo) + 1);
		if (leave)
			stack[n++] = (struct frame){ f.id, f.depth, f.x, true };
		/* pushed right to left so the leftmost child comes out first;
		 * the children end where the parent's self weight begins */
		uint64_t end = f.x + t->total[f.id] - t->nodes[f.id].self;
		for (uint32_t k = hi; k-- > lo;) {
			uint32_t c = t->kids[k];
			end -= t->total[c];
			stack[n++] = (struct frame){ c, f.depth + 1, end, false };
		}
	}
	free(stack);
}
