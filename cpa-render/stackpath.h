/* SPDX-License-Identifier: MIT */
/*
 * The frames of one stack on its way into a frame tree: the root labels
 * of its sample, as lib/format/labels.c spells them ("[pid 7]"), then its
 * frames, each a name of the tree, then its leaf node. Input and the
 * terminal UI build their trees through it, so their root frames read
 * the same as cpa-unwind --folded's and cpa-query's.
 */
#ifndef CPA_RENDER_STACKPATH_H
#define CPA_RENDER_STACKPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "labels.h"
#include "symstream.h"
#include "tree.h"

struct stack_path {
	struct tree *t;
	uint32_t *names;		/* root first */
	size_t n, cap;
	struct cpa_buf label;		/* "[tag value]" */
};

void stack_path_init(struct stack_path *sp, struct tree *t);
void stack_path_free(struct stack_path *sp);
static inline void stack_path_clear(struct stack_path *sp)
{
	sp->n = 0;
}
void stack_path_push(struct stack_path *sp, uint32_t name);
/* The frames of a piece of text as a folded line would split it: on ';',
 * an empty frame drawn as "[unknown]", so a stream and the folded text
 * cpa-query makes of it draw the same graph. */
void stack_path_text(struct stack_path *sp, const char *s, size_t len);
/* The root labels of s under l (its kind's marker first). */
void stack_path_roots(struct stack_path *sp, const struct cpa_labels *l,
		      const struct cpa_dict *d, const struct cpa_sample *s);
/* The leaf node of the path from the tree's root, leaf first when
 * reverse. */
uint32_t stack_path_leaf(struct stack_path *sp, bool reverse);

#endif
