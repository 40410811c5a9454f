/* SPDX-License-Identifier: MIT */
/*
 * --format html: one self-contained page (no network) with the flame
 * graph drawn in the browser from the merged tree, and, for stream input,
 * a heatmap above it at the resolution the times have, darker where more
 * weight fell: a live stream's sample times, FlameScope's way, one
 * column per second and one row per 20 ms; cpa-query's windows (its
 * interval_ns meta), one cell per window, a minute per column for 1 s
 * windows, so a stored hour fills the picture instead of one row of it.
 * Selecting cells redraws the flame graph for just that time range.
 *
 * The page carries the tree once (frame names, a parent index per node in
 * drawing order) and, per heatmap cell, the self weight of each stack that
 * had samples in it; the browser sums the cells of a range and draws.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "render.h"
#include "xml.h"

#define NS_PER_MS UINT64_C(1000000)
#define LIVE_CELL_NS (20 * NS_PER_MS)	/* as FlameScope has */

/* The grid: cells of cell_ns, rows of them in a column of col_ns, the
 * first column starting at start_ns, on a boundary of its length. */
struct grid {
	uint64_t cell_ns, col_ns, start_ns;
	uint64_t rows, cols;
};

/*
 * A live stream's times are as fine as the clock: 20 ms cells, a second
 * a column. Stored windows are as coarse as the window: a cell each,
 * and a column of a second, a minute or an hour of them, whichever is
 * the first to hold more than one.
 */
static void grid_init(struct grid *g, const struct profile *p,
		      const struct timeline *tl)
{
	g->cell_ns = p->interval_ns ? p->interval_ns : LIVE_CELL_NS;
	g->col_ns = g->cell_ns < CPA_NSEC_PER_SEC ? CPA_NSEC_PER_SEC
		  : g->cell_ns < 60 * CPA_NSEC_PER_SEC ? 60 * CPA_NSEC_PER_SEC
		  : 3600 * CPA_NSEC_PER_SEC;
	if (g->cell_ns > g->col_ns)	/* windows longer than an hour */
		g->col_ns = g->cell_ns;
	g->rows = (g->col_ns + g->cell_ns - 1) / g->cell_ns;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < tl->n; i++) {
		lo = tl->t[i].time_ns < lo ? tl->t[i].time_ns : lo;
		hi = tl->t[i].time_ns > hi ? tl->t[i].time_ns : hi;
	}
	g->start_ns = lo - lo % g->col_ns;
	g->cols = (hi - g->start_ns) / g->col_ns + 1;
}

static uint64_t grid_cell(const struct grid *g, uint64_t t)
{
	uint64_t d = t - g->start_ns;
	return d / g->col_ns * g->rows + d % g->col_ns / g->cell_ns;
}

struct cell_entry {
	uint64_t cell;
	uint32_t node;		/* drawing-order index */
	uint64_t weight;
};

static int by_cell(const void *a, const void *b)
{
	const struct cell_entry *x = a, *y = b;

	if (x->cell != y->cell)
		return x->cell < y->cell ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

struct order_ctx {
	uint32_t *order, *seq;
	uint32_t k;
};

static bool number(const struct tree *t, uint32_t id, uint32_t depth,
		   uint64_t x, void *ctx)
{
	struct order_ctx *c = ctx;

	(void)t; (void)depth; (void)x;
	c->order[id] = c->k;
	c->seq[c->k++] = id;
	return true;
}

/* Node ids in depth-first drawing order; order[id] is the node's index
 * and seq[index] its id. */
static uint32_t *drawing_order(const struct tree *t, uint32_t **seq_out)
{
	struct order_ctx c = {
		.order = cpa_malloc((size_t)t->n * sizeof(uint32_t)),
		.seq = cpa_malloc((size_t)t->n * sizeof(uint32_t)),
	};

	tree_walk(t, number, NULL, &c);
	*seq_out = c.seq;
	return c.order;
}

static void put_model(FILE *f, const struct profile *p, const uint32_t *order,
		      const uint32_t *seq, const struct layout *l,
		      const struct render_opts *o)
{
	const struct tree *t = &p->tree;
	uint32_t nnames = cpa_strtab_count(t->names);
	char color[32];

	fputs("var cpaData = {\nnames: [\"\"", f);
	for (uint32_t id = 1; id <= nnames; id++) {
		uint32_t len;
		const char *s = tree_name_str(t, id, &len);
		fputc(',', f);
		if (id % 8 == 0)
			fputc('\n', f);
		js_string_put(f, s, strip_annotation(s, len));
	}
	fputs("],\ncolors: [\"\"", f);
	for (uint32_t id = 1; id <= nnames; id++) {
		uint32_t len;
		const char *s = tree_name_str(t, id, &len);
		palette_color(color, l->palette, o->hash, s, len);
		fprintf(f, ",%s\"%s\"", id % 8 ? "" : "\n", color);
	}
	fputs("],\nnode_name: [", f);
	for (uint32_t i = 0; i < t->n; i++)
		fprintf(f, "%s%" PRIu32, i ? (i % 16 ? "," : ",\n") : "",
			t->nodes[seq[i]].name);
	fputs("],\nparent: [", f);
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t par = t->nodes[seq[i]].parent;
		fprintf(f, "%s%" PRIu32, i ? (i % 16 ? "," : ",\n") : "",
			par == TREE_NONE ? 0 : order[par]);
	}
	fputs("],\nself: [", f);
	for (uint32_t i = 0; i < t->n; i++)
		fprintf(f, "%s%" PRIu64, i ? (i % 16 ? "," : ",\n") : "",
			t->nodes[seq[i]].self);
	fputs("]", f);
}

/* Per-cell weights: [cell, entries, node, weight, node, weight, ...]. */
static void put_cells(FILE *f, const struct profile *p,
		      const struct timeline *tl, const uint32_t *order)
{
	struct grid g;
	struct cell_entry *e = cpa_malloc((tl->n + 1) * sizeof(*e));
	size_t n = 0;

	grid_init(&g, p, tl);
	for (size_t i = 0; i < tl->n; i++) {
		const struct timed *tm = &tl->t[i];
		e[n++] = (struct cell_entry){ grid_cell(&g, tm->time_ns),
					      order[tm->leaf], tm->weight };
	}
	qsort(e, n, sizeof(*e), by_cell);
	fprintf(f, ",\nstart_ms: %" PRIu64 ", cell_ms: %g, col_ms: %" PRIu64
		", cols: %" PRIu64 ", rows: %" PRIu64 ",\ncells: [",
		g.start_ns / NS_PER_MS, (double)g.cell_ns / NS_PER_MS,
		g.col_ns / NS_PER_MS, g.cols, g.rows);
	size_t i = 0;
	bool first = true;
	while (i < n) {
		size_t j = i, entries = 0;
		/* count distinct nodes of this cell */
		for (size_t k = i; k < n && e[k].cell == e[i].cell; k++)
			if (k == i || e[k].node != e[k - 1].node)
				entries++;
		fprintf(f, "%s%" PRIu64 ",%zu", first ? "" : ",\n", e[i].cell,
			entries);
		first = false;
		while (j < n && e[j].cell == e[i].cell) {
			uint64_t w = 0;
			size_t k = j;
			while (k < n && e[k].cell == e[j].cell &&
			       e[k].node == e[j].node)
				w += e[k++].weight;
			fprintf(f, ",%" PRIu32 ",%" PRIu64, e[j].node, w);
			j = k;
		}
		i = j;
	}
	fputs("]", f);
	free(e);
}

/* What html keeps of a stream: each allocation's time, for the heat map
 * (frees have no time of their own to draw). */
static void *acc_new(const struct render_opts *o)
{
	(void)o;
	return cpa_calloc(1, sizeof(struct timeline));
}

static void acc_sample(void *acc, const struct cpa_sample *s, uint32_t leaf,
		       uint32_t tag)
{
	(void)tag;
	if (!(s->flags & CPA_FLAG_FREE))
		timeline_add(acc, s->time_ns, s->weight, leaf, 0);
}

static void acc_free(void *acc)
{
	timeline_free(acc);
	free(acc);
}

static int html_write(FILE *f, struct profile *p, const struct render_opts *o)
{
	const struct timeline *tl = p->acc;
	struct layout l;
	uint32_t *seq;
	uint32_t *order = drawing_order(&p->tree, &seq);
	bool heat = p->from_stream && tl && tl->n > 0;

	layout_init(&l, p, o);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
	      "<meta charset=\"utf-8\">\n<title>", f);
	xml_put(f, l.title, strlen(l.title));
	fputs("</title>\n<style>\n"
	      "body { font-family: Verdana, sans-serif; font-size: 12px; "
	      "margin: 8px; background: #fff; }\n"
	      "#heat { margin-bottom: 8px; }\n"
	      "#heatmap { display: block; border: 1px solid #ccc; "
	      "cursor: crosshair; user-select: none; }\n"
	      "#heatmap .sel { stroke: rgb(0,0,200); stroke-width: 1; }\n"
	      "#heatmap .axis { font-size: 10px; fill: #555; }\n"
	      "#range { margin: 4px 0; }\n"
	      "#showall { cursor: pointer; color: #00c; "
	      "text-decoration: underline; margin-left: 1em; }\n"
	      "</style>\n</head>\n<body>\n", f);
	if (heat)
		fputs("<div id=\"heat\">\n<svg id=\"heatmap\" "
		      "xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" "
		      "height=\"100\"></svg>\n<div><span id=\"range\"></span>"
		      "<span id=\"showall\">show all</span></div>\n</div>\n", f);
	fprintf(f, "<svg id=\"flame\" version=\"1.1\" width=\"%u\" height=\"%u\" "
		"viewBox=\"0 0 %u %u\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		l.width, l.height, l.width, l.height);
	svg_chrome(f, &l, o);
	fputs("<g id=\"frames\"></g>\n</svg>\n<script>\n", f);
	svg_config(f, &l, p, o);
	put_model(f, p, order, seq, &l, o);
	if (heat)
		put_cells(f, p, tl, order);
	fputs("\n};\n", f);
	fputs(cpa_flame_js, f);
	fputs(cpa_heatmap_js, f);
	fputs("var cpaView = new CpaFlame(cpaConfig);\n"
	      "cpaView.listen();\n"
	      "var cpaHeat = new CpaHeatmap(cpaView, cpaData);\n"
	      "cpaHeat.start();\n"
	      "</script>\n</body>\n</html>\n", f);
	free(order);
	free(seq);
	return 0;
}

const struct render_format html_format = {
	.name = "html", .new = acc_new, .sample = acc_sample,
	.free = acc_free, .write = html_write,
};
