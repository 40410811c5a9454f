/* SPDX-License-Identifier: MIT */
/*
 * --format text: the functions with the most self and total weight, and
 * an indented call tree, for a terminal or a ticket.
 *
 * A function's total counts each stack once even when the function is on
 * it several times (recursion), so no total exceeds 100%.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "render.h"
#include "topfuncs.h"

#define MAX_INDENT 64	/* levels of indentation in the call tree */

/* A weight for a column: "1,234" or, for time and memory, "12.50 ms",
 * "1.50 MiB". */
static void num(char *buf, size_t len, uint64_t v, const struct profile *p,
		const char *countname)
{
	format_value(buf, len, v, p->unit, countname);
	if ((p->unit != CPA_UNIT_NS && p->unit != CPA_UNIT_BYTES) ||
	    countname) {
		char *sp = strchr(buf, ' ');
		if (sp)
			*sp = '\0';	/* the unit is in the header */
	}
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

struct top_ctx {
	const struct profile *p;
	const char *countname;
};

static void top_value(char *buf, size_t len, uint64_t v, const void *ctx)
{
	const struct top_ctx *c = ctx;

	num(buf, len, v, c->p, c->countname);
}

/* Every stack of the tree, with its weight, into the top lists. */
static void top_lists(FILE *f, const struct profile *p,
		      const struct render_opts *o, const char *unit)
{
	const struct tree *t = &p->tree;
	const struct top_ctx c = { p, o->countname };
	struct cpa_topfuncs top;
	uint32_t *path = cpa_malloc(((size_t)t->max_depth + 1) * sizeof(*path));

	cpa_topfuncs_init(&top);
	for (uint32_t id = 1; id < t->n; id++) {
		if (!t->nodes[id].self)
			continue;
		uint32_t n = tree_path(t, id, path);
		for (uint32_t i = 0; i < n; i++)
			path[i] = t->nodes[path[i]].name;
		cpa_topfuncs_add(&top, path, n, t->nodes[id].self);
	}
	fprintf(f, "\nTop %u by self (%s):\n", o->top, unit);
	cpa_topfuncs_write(f, &top, t->names, o->top, CPA_TOP_SELF, top_value,
			   &c);
	fprintf(f, "\nTop %u by total (%s):\n", o->top, unit);
	cpa_topfuncs_write(f, &top, t->names, o->top, CPA_TOP_TOTAL, top_value,
			   &c);
	cpa_topfuncs_free(&top);
	free(path);
}

struct text_ctx {
	const struct profile *p;
	const struct render_opts *o;
	FILE *tf;		/* the call tree, printed after the lists */
	uint64_t total;
	double cut;
};

static bool tree_line(const struct tree *t, uint32_t id, uint32_t depth,
		      uint64_t x, void *ctx)
{
	struct text_ctx *c = ctx;
	const struct node *nd = &t->nodes[id];
	char a[64];

	(void)x;
	if ((double)t->total[id] >= c->cut) {
		uint32_t len;
		const char *name = tree_name_str(t, nd->name, &len);
		num(a, sizeof(a), t->total[id], c->p, c->o->countname);
		fprintf(c->tf, "%7.2f%% %7.2f%% %14s  ",
			pct(t->total[id], c->total), pct(nd->self, c->total), a);
		/* indent by depth, up to a point: past it a frame says its
		 * depth, so a deep stack cannot make the output quadratic */
		if (depth <= MAX_INDENT)
			fprintf(c->tf, "%*s", (int)(2 * depth), "");
		else
			fprintf(c->tf, "%*s[%u] ", 2 * MAX_INDENT, "", depth);
		fprintf(c->tf, "%.*s\n", (int)len, name);
	}
	return true;
}

static int text_write(FILE *f, struct profile *p, const struct render_opts *o)
{
	const struct tree *t = &p->tree;
	const char *cn = o->countname ? o->countname : unit_countname(p->unit);
	struct text_ctx c = {
		.p = p, .o = o,
		.total = t->total[TREE_ROOT],
	};
	char *tree_txt = NULL;
	size_t tree_len = 0;
	char a[64];

	c.cut = o->minwidth_pct ? (double)c.total * o->minwidth / 100 : 0;
	format_value(a, sizeof(a), c.total, p->unit, o->countname);
	fprintf(f, "Total: %s%s", a, p->estimate ? " (estimated)" : "");
	if (p->from_stream && p->end_ns > p->start_ns)
		fprintf(f, " over %.3f s", (double)(p->end_ns - p->start_ns) / 1e9);
	fputc('\n', f);

	c.tf = open_memstream(&tree_txt, &tree_len);
	if (!c.tf)
		cpa_die("open_memstream: out of memory");
	fprintf(c.tf, "\nCall tree (%s; frames under %.2g%% left out):\n"
		"%8s %8s %14s  %s\n", cn, o->minwidth_pct ? o->minwidth : 0.0,
		"total%", "self%", "total", "frame");
	tree_walk(t, tree_line, NULL, &c);
	fclose(c.tf);

	top_lists(f, p, o, cn);
	fwrite(tree_txt, 1, tree_len, f);
	free(tree_txt);
	return 0;
}

const struct render_format text_format = {
	.name = "text", .units = UNITS_SECTIONS, .write = text_write,
};
