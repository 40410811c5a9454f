/* SPDX-License-Identifier: MIT */
/*
 * svg --flamechart from a stream: the samples in time order, each stack
 * merged only with the one just before it, so the x axis is time (the
 * svg format's accumulator keeps the timeline; svg.c draws the tree).
 */
#include <stdlib.h>

#include "buf.h"
#include "log.h"
#include "render.h"

void flamechart_build(struct profile *p, struct timeline *tl)
{
	struct tree chart;
	uint32_t *path = cpa_malloc(((size_t)p->tree.max_depth + 1) *
				    sizeof(*path));

	timeline_sort(tl);
	tree_init(&chart, true);
	for (size_t k = 0; k < tl->n; k++) {
		const struct timed *tm = &tl->t[k];
		uint32_t n = tree_path(&p->tree, tm->leaf, path);
		uint32_t node = TREE_ROOT;

		tree_saw_depth(&chart, n);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t len;
			const char *s = tree_name_str(&p->tree,
					p->tree.nodes[path[i]].name, &len);
			node = tree_child(&chart, node, tree_name(&chart, s, len));
		}
		tree_add(&chart, node, tm->weight, 0);
	}
	free(path);
	tree_free(&p->tree);
	p->tree = chart;
}
