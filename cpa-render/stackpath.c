/* SPDX-License-Identifier: MIT */
/* The frames of one stack on its way into a frame tree (stackpath.h). */
#include <stdlib.h>
#include <string.h>

#include "folded.h"
#include "stackpath.h"

void stack_path_init(struct stack_path *sp, struct tree *t)
{
	memset(sp, 0, sizeof(*sp));
	sp->t = t;
}

void stack_path_free(struct stack_path *sp)
{
	free(sp->names);
	cpa_buf_free(&sp->label);
	memset(sp, 0, sizeof(*sp));
}

void stack_path_push(struct stack_path *sp, uint32_t name)
{
	CPA_GROW(sp->names, sp->cap, sp->n + 1);
	sp->names[sp->n++] = name;
}

void stack_path_text(struct stack_path *sp, const char *s, size_t len)
{
	const char *p = s, *f;
	size_t flen;

	while (cpa_folded_frame(&p, s + len, &f, &flen))
		stack_path_push(sp, flen ? tree_name(sp->t, f, flen)
					 : tree_name(sp->t, "[unknown]", 9));
}

static void push_root(const char *tag, const char *value, void *ctx)
{
	struct stack_path *sp = ctx;

	if (!tag) {
		stack_path_text(sp, value, strlen(value));
		return;
	}
	sp->label.len = 0;
	cpa_buf_add(&sp->label, "[", 1);
	cpa_buf_add(&sp->label, tag, strlen(tag));
	cpa_buf_add(&sp->label, " ", 1);
	cpa_buf_add(&sp->label, value, strlen(value));
	cpa_buf_add(&sp->label, "]", 1);
	stack_path_text(sp, (const char *)sp->label.p, sp->label.len);
}

void stack_path_roots(struct stack_path *sp, const struct cpa_labels *l,
		      const struct cpa_dict *d, const struct cpa_sample *s)
{
	cpa_sample_roots(l, d, s, push_root, sp);
}

uint32_t stack_path_leaf(struct stack_path *sp, bool reverse)
{
	uint32_t node = TREE_ROOT;

	tree_saw_depth(sp->t, (uint32_t)sp->n);
	if (reverse)
		for (size_t i = sp->n; i-- > 0;)
			node = tree_child(sp->t, node, sp->names[i]);
	else
		for (size_t i = 0; i < sp->n; i++)
			node = tree_child(sp->t, node, sp->names[i]);
	return node;
}
