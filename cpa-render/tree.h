/* SPDX-License-Identifier: MIT */
/*
 * The frame tree every output format draws from: stacks merged into a
 * prefix tree whose nodes name interned frames.
 *
 * Two phases keep it small and fast. While stacks are added, a node is
 * just (name, parent, self weight), 16 bytes, and a child is found
 * through one hash table keyed by (parent, name), so adding a stack costs
 * one probe per frame whatever the fan-out. tree_finish() then drops the
 * hash table, sums the totals bottom-up in one pass, and lays the
 * children of each node out contiguously in drawing order.
 */
#ifndef CPA_RENDER_TREE_H
#define CPA_RENDER_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "htab.h"
#include "intern.h"

#define TREE_ROOT 0u
#define TREE_NONE UINT32_MAX

struct node {
	uint32_t name;		/* string id in tree.names; 0 for the root */
	uint32_t parent;	/* TREE_NONE for the root */
	uint64_t self;		/* weight of stacks ending here */
};

struct tree {
	struct node *nodes;
	uint32_t n, cap;
	uint64_t *self1;	/* differential: first-column self weight */
	uint32_t *last;		/* flame chart: newest child of each node */
	struct cpa_htab index;	/* child index: (parent, name) -> node */
	struct cpa_strtab *names;
	uint32_t max_depth;	/* deepest stack added */
	bool adjacent;		/* flame chart: merge only with last child */
	bool diff;		/* two-column (differential) input */
	/* after tree_finish() */
	bool finished;
	uint64_t *total;	/* weight of a node and its callees */
	uint32_t *kid_off;	/* children of i: kids[kid_off[i]..kid_off[i+1]) */
	uint32_t *kids;
};

void tree_init(struct tree *t, bool adjacent);
/* Room for about nodes nodes before anything grows, for a caller that
 * knows the size from a tree built before; only on a new merged tree. */
void tree_reserve(struct tree *t, uint32_t nodes);
void tree_free(struct tree *t);
/* Interned id of a frame name. */
uint32_t tree_name(struct tree *t, const char *s, size_t len);
/* The root's name is "all". */
const char *tree_name_str(const struct tree *t, uint32_t name, uint32_t *len);
/* Child of parent named name, created when missing. */
uint32_t tree_child(struct tree *t, uint32_t parent, uint32_t name);
/* Notes a stack of depth frames (for path buffers). */
static inline void tree_saw_depth(struct tree *t, uint32_t depth)
{
	if (depth > t->max_depth)
		t->max_depth = depth;
}
/*
 * Adds weight to the stack ending at leaf; self1 is the first column of a
 * differential line. Returns false when the weight would overflow.
 */
bool tree_add(struct tree *t, uint32_t leaf, uint64_t weight, uint64_t self1);

/*
 * Totals, and children in drawing order: by name (byte order), or in
 * insertion (time) order for a flame chart. Frees the child index, so
 * no stack can be added after. Returns false when the total weight
 * overflows 64 bits.
 */
bool tree_finish(struct tree *t);

/* Frame nodes of node's path, root's child first, into path (max_depth
 * slots); returns their count. */
uint32_t tree_path(const struct tree *t, uint32_t node, uint32_t *path);

/*
 * Depth-first walk in drawing order, after tree_finish(). visit() is
 * called on the way down with the node's depth (root 0) and x, the weight
 * to its left (children start at their parent's x, as flamegraph.pl draws
 * them); returning false skips the node's children. leave(), when not
 * NULL, is called on the way up.
 */
typedef bool (*tree_visit_fn)(const struct tree *t, uint32_t id,
			      uint32_t depth, uint64_t x, void *ctx);
typedef void (*tree_leave_fn)(const struct tree *t, uint32_t id, void *ctx);
void tree_walk(const struct tree *t, tree_visit_fn visit, tree_leave_fn leave,
	       void *ctx);

#endif
