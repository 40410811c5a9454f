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

#define MAX_INDENT 64	/* levels of indentation in the call tree */

struct fn {
	uint32_t name;
	uint64_t self, total;
};

static int by_self(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int by_total(const void *a, const void *b)
{
	const struct fn *x = a, *y = b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* A weight for a column: "1,234" or, for time, "12.50 ms". */
static void num(char *buf, size_t len, uint64_t v, const struct profile *p,
		const char *countname)
{
	format_value(buf, len, v, p->unit, countname);
	if (p->unit != CPA_UNIT_NS || countname) {
		char *sp = strchr(buf, ' ');
		if (sp)
			*sp = '\0';	/* the unit is in the header */
	}
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

static void top_list(FILE *f, const struct profile *p, struct fn *fns,
		     uint32_t nf, unsigned top, bool self, const char *cn,
		     const char *unit)
{
	uint64_t total = p->tree.total[TREE_ROOT];
	char a[64], b[64];

	qsort(fns, nf, sizeof(*fns), self ? by_self : by_total);
	fprintf(f, "\nTop %u by %s (%s):\n%14s %8s %14s %8s  %s\n", top,
		self ? "self" : "total", unit, "self", "self%", "total",
		"total%", "function");
	for (uint32_t i = 0; i < nf && i < top; i++) {
		if (!(self ? fns[i].self : fns[i].total))
			break;
		uint32_t len;
		const char *name = tree_name_str(&p->tree, fns[i].name, &len);
		num(a, sizeof(a), fns[i].self, p, cn);
		num(b, sizeof(b), fns[i].total, p, cn);
		fprintf(f, "%14s %7.2f%% %14s %7.2f%%  %.*s\n", a,
			pct(fns[i].self, total), b, pct(fns[i].total, total),
			(int)len, name);
	}
}

struct text_ctx {
	const struct profile *p;
	const struct render_opts *o;
	FILE *tf;		/* the call tree, printed after the lists */
	struct fn *fns;
	uint32_t *onstack;	/* per name: frames of it on the path */
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
	if (id != TREE_ROOT) {
		c->fns[nd->name].self += nd->self;
		if (!c->onstack[nd->name]++)
			c->fns[nd->name].total += t->total[id];
	}
	/* frames under the cut still count in the sums */
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

static void tree_leave(const struct tree *t, uint32_t id, void *ctx)
{
	struct text_ctx *c = ctx;

	if (id != TREE_ROOT)
		c->onstack[t->nodes[id].name]--;
}

int text_write(FILE *f, struct profile *p, const struct render_opts *o)
{
	const struct tree *t = &p->tree;
	uint32_t nnames = cpa_strtab_count(t->names) + 1;
	const char *cn = o->countname ? o->countname : unit_countname(p->unit);
	struct text_ctx c = {
		.p = p, .o = o,
		.fns = cpa_calloc(nnames, sizeof(*c.fns)),
		.onstack = cpa_calloc(nnames, sizeof(*c.onstack)),
		.total = t->total[TREE_ROOT],
	};
	char *tree_txt = NULL;
	size_t tree_len = 0;
	char a[64];

	c.cut = o->minwidth_pct ? (double)c.total * o->minwidth / 100 : 0;
	for (uint32_t i = 0; i < nnames; i++)
		c.fns[i].name = i;
	format_value(a, sizeof(a), c.total, p->unit, o->countname);
	fprintf(f, "Total: %s", a);
	if (p->from_stream && p->end_ns > p->start_ns)
		fprintf(f, " over %.3f s", (double)(p->end_ns - p->start_ns) / 1e9);
	fputc('\n', f);

	c.tf = open_memstream(&tree_txt, &tree_len);
	if (!c.tf)
		cpa_die("open_memstream: out of memory");
	fprintf(c.tf, "\nCall tree (%s; frames under %.2g%% left out):\n"
		"%8s %8s %14s  %s\n", cn, o->minwidth_pct ? o->minwidth : 0.0,
		"total%", "self%", "total", "frame");
	tree_walk(t, tree_line, tree_leave, &c);
	fclose(c.tf);

	top_list(f, p, c.fns + 1, nnames - 1, o->top, true, o->countname, cn);
	top_list(f, p, c.fns + 1, nnames - 1, o->top, false, o->countname, cn);
	fwrite(tree_txt, 1, tree_len, f);
	free(tree_txt);
	free(c.fns);
	free(c.onstack);
	return 0;
}
