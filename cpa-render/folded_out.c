/* SPDX-License-Identifier: MIT */
/*
 * --format folded: the merged profile as folded text, one line per
 * distinct stack, sorted by frame names (byte order), with two counts per
 * line when the input had two. Feeding the output back in gives the same
 * graph.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "render.h"

struct folded_ctx {
	FILE *f;
	char *path;
	size_t cap;
	size_t *len;		/* path length at each depth */
	size_t lencap;
};

static bool folded_line(const struct tree *t, uint32_t id, uint32_t depth,
			uint64_t x, void *ctx)
{
	struct folded_ctx *c = ctx;
	const struct node *nd = &t->nodes[id];
	uint32_t len;
	const char *name;

	(void)x;
	CPA_GROW(c->len, c->lencap, (size_t)depth + 1);
	if (id == TREE_ROOT) {
		c->len[0] = 0;
		return true;
	}
	name = tree_name_str(t, nd->name, &len);
	size_t plen = c->len[depth - 1];
	CPA_GROW(c->path, c->cap, plen + len + 2);
	if (plen)
		c->path[plen++] = ';';
	memcpy(c->path + plen, name, len);
	plen += len;
	c->len[depth] = plen;
	uint64_t before = t->self1 ? t->self1[id] : 0;
	if (nd->self || before) {
		fwrite(c->path, 1, plen, c->f);
		if (t->diff)
			fprintf(c->f, " %" PRIu64 " %" PRIu64 "\n", before,
				nd->self);
		else
			fprintf(c->f, " %" PRIu64 "\n", nd->self);
	}
	return true;
}

static int folded_write(FILE *f, struct profile *p, const struct render_opts *o)
{
	struct folded_ctx c = { .f = f };

	(void)o;
	if (p->estimate)
		fputs("# estimate\n", f);
	tree_walk(&p->tree, folded_line, NULL, &c);
	free(c.path);
	free(c.len);
	return 0;
}

const struct render_format folded_format = {
	.name = "folded", .units = UNITS_MARKED, .write = folded_write,
};
