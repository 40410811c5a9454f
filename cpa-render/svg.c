/* SPDX-License-Identifier: MIT */
/*
 * The SVG flame graph, laid out as flamegraph.pl lays it out (same
 * paddings, frame height, font, minimum width, title and tooltip text) so
 * that people and scripts used to its output find what they expect. The
 * interactive code is flame.js, built into the program.
 *
 * One <g> per frame: <title> (the tooltip: name, value, percentage), a
 * <rect>, and a <text> label cut to fit. Frames narrower than --minwidth
 * are left out, and with them all their callees.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "render.h"
#include "xml.h"

#define FONT_TYPE "Verdana"
#define SEARCH_COLOR "rgb(230,0,230)"

static int64_t node_delta(const struct tree *t, uint32_t id)
{
	uint64_t now = t->nodes[id].self, before = t->self1 ? t->self1[id] : 0;

	if (now >= before)
		return now - before > INT64_MAX ? INT64_MAX :
		       (int64_t)(now - before);
	return before - now > INT64_MAX ? -INT64_MAX : -(int64_t)(before - now);
}

/* Depth and largest change among the frames wide enough to draw. */
static bool measure(const struct tree *t, uint32_t id, uint32_t depth,
		    uint64_t x, void *ctx)
{
	struct layout *l = ctx;

	(void)x;
	if (!t->total[id] || (double)t->total[id] < l->minw)
		return false;
	if (depth > l->maxdepth)
		l->maxdepth = depth;
	if (t->diff) {
		int64_t d = node_delta(t, id);
		uint64_t a = d < 0 ? (uint64_t)-d : (uint64_t)d;
		if (a > l->maxdelta)
			l->maxdelta = a;
	}
	return true;
}

void layout_init(struct layout *l, const struct profile *p,
		 const struct render_opts *o)
{
	const struct tree *t = &p->tree;

	memset(l, 0, sizeof(*l));
	l->width = o->width;
	l->fh = o->frame_height;
	l->fontsize = 12;
	l->fontwidth = 0.59;
	l->xpad = 10;
	l->ypad1 = l->fontsize * 3;
	l->ypad2 = l->fontsize * 2 + 10;
	if (o->subtitle)
		l->ypad1 += l->fontsize * 2;
	l->total = t->total[TREE_ROOT];
	l->per = l->total ? (l->width - 2 * l->xpad) / (double)l->total : 0;
	if (o->minwidth_pct)
		l->minw = (double)l->total * o->minwidth / 100;
	else
		l->minw = l->per > 0 ? o->minwidth / l->per : 0;
	tree_walk(t, measure, NULL, l);
	if (!l->maxdelta)
		l->maxdelta = 1;
	l->height = (unsigned)((l->maxdepth + 1) * l->fh + l->ypad1 + l->ypad2);
	l->palette = o->colors ? o->colors : palette_default(p->unit);
	l->countname = o->countname;
	l->title = o->title ? o->title :
		   o->flamechart ? "Flame Chart" :
		   o->inverted ? "Icicle Graph" : "Flame Graph";
	/* sampled memory weights are estimates, and the reader must know */
	if (p->estimate) {
		snprintf(l->title_buf, sizeof(l->title_buf), "%s (estimated)",
			 l->title);
		l->title = l->title_buf;
	}
}

void svg_chrome(FILE *f, const struct layout *l, const struct render_opts *o)
{
	double titlesize = l->fontsize + 5;
	/* flamegraph.pl's grey background for the blue and green palettes */
	bool cool = !strcmp(l->palette, "mem") || !strcmp(l->palette, "io") ||
		    !strcmp(l->palette, "wakeup") || !strcmp(l->palette, "chain");

	fprintf(f,
		"<defs>\n"
		"\t<linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">\n"
		"\t\t<stop stop-color=\"%s\" offset=\"5%%\"/>\n"
		"\t\t<stop stop-color=\"%s\" offset=\"95%%\"/>\n"
		"\t</linearGradient>\n"
		"</defs>\n"
		"<style type=\"text/css\">\n"
		"\ttext { font-family:%s; font-size:%.0fpx; fill:rgb(0,0,0); }\n"
		"\t#search, #ignorecase { opacity:0.1; cursor:pointer; }\n"
		"\t#search:hover, #search.show, #ignorecase:hover, #ignorecase.show { opacity:1; }\n"
		"\t#subtitle { text-anchor:middle; fill:rgb(160,160,160); }\n"
		"\t#title { text-anchor:middle; font-size:%.0fpx; }\n"
		"\t#unzoom { cursor:pointer; }\n"
		"\t#frames > *:hover { stroke:black; stroke-width:0.5; cursor:pointer; }\n"
		"\t.hide { display:none; }\n"
		"\t.parent { opacity:0.5; }\n"
		"</style>\n",
		cool ? "#f8f8f8" : "#eeeeee", cool ? "#e8e8e8" : "#eeeeb0",
		FONT_TYPE, l->fontsize, titlesize);
	fprintf(f, "<rect id=\"bg\" x=\"0\" y=\"0\" width=\"%u\" "
		"height=\"%u\" fill=\"url(#background)\"/>\n",
		l->width, l->height);
	fprintf(f, "<text id=\"title\" x=\"%.2f\" y=\"%.0f\">",
		l->width / 2.0, l->fontsize * 2);
	xml_put(f, l->title, strlen(l->title));
	fputs("</text>\n", f);
	if (o->subtitle) {
		fprintf(f, "<text id=\"subtitle\" x=\"%.2f\" y=\"%.0f\">",
			l->width / 2.0, l->fontsize * 4);
		xml_put(f, o->subtitle, strlen(o->subtitle));
		fputs("</text>\n", f);
	}
	fprintf(f,
		"<text id=\"details\" x=\"%.2f\" y=\"%.2f\"> </text>\n"
		"<text id=\"unzoom\" class=\"hide\" x=\"%.2f\" y=\"%.0f\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%.2f\" y=\"%.0f\">Search</text>\n"
		"<text id=\"ignorecase\" x=\"%.2f\" y=\"%.0f\">ic</text>\n"
		"<text id=\"matched\" class=\"hide\" x=\"%.2f\" y=\"%.2f\"> </text>\n",
		l->xpad, l->height - l->ypad2 / 2,
		l->xpad, l->fontsize * 2,
		l->width - l->xpad - 100, l->fontsize * 2,
		l->width - l->xpad - 16, l->fontsize * 2,
		l->width - l->xpad - 100, l->height - l->ypad2 / 2);
}

void svg_config(FILE *f, const struct layout *l, const struct profile *p,
		const struct render_opts *o)
{
	const char *cn = l->countname ? l->countname : unit_countname(p->unit);

	fprintf(f, "var cpaConfig = {width: %u, xpad: %.0f, ypad1: %.0f, "
		"ypad2: %.0f, frameheight: %u, fontsize: %.0f, fontwidth: %.2f, "
		"minwidth: %g, minwidth_pct: %s, inverted: %s, "
		"searchcolor: \"" SEARCH_COLOR "\", nametype: \"Function:\", "
		"unit: \"%s\", countname_set: %s, countname: ",
		l->width, l->xpad, l->ypad1, l->ypad2, l->fh, l->fontsize,
		l->fontwidth, o->minwidth, o->minwidth_pct ? "true" : "false",
		o->inverted ? "true" : "false", cpa_unit_name(p->unit),
		l->countname ? "true" : "false");
	js_string_put(f, cn, strlen(cn));
	fputs("};\n", f);
}

/* The label drawn in a frame w px wide: the name cut to fit, or none. */
static void put_label(FILE *f, const char *name, uint32_t len, double w,
		      const struct layout *l)
{
	size_t chars = (size_t)(w / (l->fontsize * l->fontwidth));
	if (chars < 3)
		return;
	size_t n = utf8_chars(name, len);
	if (n <= chars) {
		xml_put(f, name, len);
		return;
	}
	xml_put(f, name, utf8_prefix(name, len, chars - 2));
	fputs("..", f);
}

struct svg_ctx {
	FILE *f;
	const struct profile *p;
	const struct layout *l;
	const struct render_opts *o;
	char (*colors)[24];	/* per name, computed on first use */
};

/*
 * printf's float conversion was most of the time spent writing a large
 * graph; these write the few number shapes an SVG needs directly.
 */
static char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* v with two decimals, as "%.2f" prints it (v >= 0) */
static char *put_fixed2(char *p, double v)
{
	uint64_t c = (uint64_t)(v * 100 + 0.5);

	p = put_u64(p, c / 100);
	*p++ = '.';
	*p++ = (char)('0' + c / 10 % 10);
	*p++ = (char)('0' + c % 10);
	return p;
}

static char *put_str(char *p, const char *s)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	return p + n;
}

static bool put_frame(const struct tree *t, uint32_t id, uint32_t depth,
		      uint64_t x, void *ctx)
{
	const struct svg_ctx *c = ctx;
	const struct layout *l = c->l;
	const struct render_opts *o = c->o;
	FILE *f = c->f;
	uint64_t total = t->total[id];

	if (!total || (double)total < l->minw)
		return false;	/* and so are all its callees */

	uint32_t len, nm = t->nodes[id].name;
	const char *name = tree_name_str(t, nm, &len);
	uint32_t shown = id == TREE_ROOT ? len : strip_annotation(name, len);
	double x1 = l->xpad + (double)x * l->per;
	double w = (double)total * l->per;
	double y1 = o->inverted ?
		l->ypad1 + depth * l->fh :
		l->height - l->ypad2 - (depth + 1.0) * l->fh + 1;
	char buf[512], diffcolor[32], *b = buf;
	const char *color;

	fputs("<g><title>", f);
	xml_put(f, name, shown);
	*b++ = ' ';
	*b++ = '(';
	format_value(b, 64, total, c->p->unit, l->countname);
	b += strlen(b);
	if (id == TREE_ROOT) {
		b = put_str(b, ", 100%)");
	} else {
		b = put_str(b, ", ");
		b = put_fixed2(b, 100.0 * (double)total / (double)l->total);
		*b++ = '%';
		if (t->diff) {
			int64_t d = node_delta(t, id);
			if (o->negate)
				d = -d;
			b += snprintf(b, 40, "; %s%.2f%%", d > 0 ? "+" : "",
				      100.0 * (double)d / (double)l->total);
		}
		*b++ = ')';
	}
	if (id == TREE_ROOT) {
		color = "rgb(250,250,250)";
	} else if (t->diff) {
		palette_diff(diffcolor, node_delta(t, id), l->maxdelta, o->negate);
		color = diffcolor;
	} else {
		/* a frame's color depends only on its name */
		if (!c->colors[nm][0])
			palette_color(c->colors[nm], l->palette, o->hash, name, len);
		color = c->colors[nm];
	}
	b = put_str(b, "</title><rect x=\"");
	b = put_fixed2(b, x1);
	b = put_str(b, "\" y=\"");
	b = put_fixed2(b, y1);
	b = put_str(b, "\" width=\"");
	b = put_fixed2(b, w);
	b = put_str(b, "\" height=\"");
	b = put_u64(b, l->fh - 1);
	b = put_str(b, ".0\" fill=\"");
	b = put_str(b, color);
	b = put_str(b, "\" rx=\"2\" ry=\"2\"/><text x=\"");
	b = put_fixed2(b, x1 + 3);
	b = put_str(b, "\" y=\"");
	b = put_fixed2(b, y1 + l->fh / 2.0 + 2.5);
	b = put_str(b, "\">");
	fwrite(buf, 1, (size_t)(b - buf), f);
	put_label(f, name, shown, w, l);
	fputs("</text></g>\n", f);
	return true;
}

static int svg_write(FILE *f, struct profile *p, const struct render_opts *o)
{
	struct layout l;

	layout_init(&l, p, o);
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
		"\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" "
		"onload=\"init(evt)\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\" "
		"xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
		"<!-- Flame graph drawn by cpa-render. -->\n",
		l.width, l.height, l.width, l.height);
	svg_chrome(f, &l, o);
	fputs("<script type=\"text/ecmascript\">\n<![CDATA[\n", f);
	svg_config(f, &l, p, o);
	fputs(cpa_flame_js, f);
	fputs("var cpaView;\n"
	      "function init(evt) {\n"
	      "\tcpaView = new CpaFlame(cpaConfig);\n"
	      "\tcpaView.load();\n"
	      "\tcpaView.listen();\n"
	      "\tcpaView.restoreUrl();\n"
	      "}\n]]>\n</script>\n", f);
	fputs("<g id=\"frames\">\n", f);
	struct svg_ctx c = { f, p, &l, o, NULL };
	c.colors = cpa_calloc(cpa_strtab_count(p->tree.names) + 1,
			      sizeof(*c.colors));
	tree_walk(&p->tree, put_frame, NULL, &c);
	free(c.colors);
	fputs("</g>\n</svg>\n", f);
	return 0;
}

/* What svg keeps of a stream: for --flamechart, each sample's time, from
 * which the tree is built again in time order once the stream is read
 * (flamechart.c). Frees have no time of their own to draw. */
static void *acc_new(const struct render_opts *o)
{
	return o->flamechart ? cpa_calloc(1, sizeof(struct timeline)) : NULL;
}

static void acc_sample(void *acc, const struct cpa_sample *s, uint32_t leaf,
		       uint32_t tag)
{
	(void)tag;
	if (!(s->flags & CPA_FLAG_FREE))
		timeline_add(acc, s->time_ns, s->weight, leaf, 0);
}

static void acc_finish(void *acc, struct profile *p)
{
	flamechart_build(p, acc);
}

static void acc_free(void *acc)
{
	timeline_free(acc);
	free(acc);
}

const struct render_format svg_format = {
	.name = "svg", .new = acc_new, .sample = acc_sample,
	.finish = acc_finish, .free = acc_free, .write = svg_write,
};
