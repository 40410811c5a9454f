/* SPDX-License-Identifier: MIT */
/*
 * The terminal UI's screen and keys, after CPA's cpa_show: a trend of the
 * history around the window (cores per second, user and system apart,
 * the host's CPU count as a guide), the window's flame graph below it
 * drawn top-down as labelled bars, a detail line for the selected frame
 * and a status line. Keys come from /dev/tty, as less reads them, so the
 * stream may arrive on standard input.
 */
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "render.h"
#include "timeparse.h"
#include "tui.h"

#define DEFAULT_SPAN (600 * CPA_NSEC_PER_SEC)	/* CPA's default window */
/* A chart longer than this is drawn from cpa-query's sums, not from the
 * samples of each window: an hour at 49 Hz on 2 CPUs is 350,000. */
#define SAMPLES_MAX_NS (3600 * CPA_NSEC_PER_SEC)
#define TREND_COLS 480			/* of a chart drawn from sums */

enum {
	P_USER_A = 1, P_USER_B, P_KERNEL, P_LABEL, P_MATCH, P_OFF_A, P_OFF_B,
	P_MEM_A, P_MEM_B, P_CHART_USER, P_CHART_SYS, P_CHART_WIN, P_ERR,
};

/* A frame path by names, so the selection and the zoom outlive a rebuild
 * of the tree (new filters, labels, window). */
struct name_path {
	char **names;
	uint32_t n;
};

/* A frame drawn on a row, for moving the selection along the row. */
struct cell {
	uint32_t node;
	int c0, c1;
};

struct row {
	struct cell *c;
	size_t n, cap;
};

/* What a data set of sums holds, so it is fetched again only when that
 * changes. */
struct sums_key {
	uint64_t from, to, every;
	uint64_t prune;			/* cpa-query --prune, 0 none */
	uint64_t callee;		/* and --callee */
	uint64_t kernel;		/* --stacks kernel */
	char labels[80];
};

struct ui {
	const struct render_opts *o;
	struct tui_data d;
	struct tui_data win, trend;	/* sums for a long chart */
	struct sums_key win_key, trend_key;
	struct tui_view v;
	struct tui_model m;
	uint64_t hist_from, hist_to;	/* the history the chart may show */
	int chart_h;			/* rows of trend */
	bool follow, dirty, empty_store;
	enum { OVERLAY_NONE, OVERLAY_HELP, OVERLAY_CONF, OVERLAY_FILTERS }
		overlay;			/* ?, c, o: closed by any key */
	uint32_t sel, root;		/* selected frame, zoom root */
	struct name_path sel_path;
	struct name_path *zoom;		/* zoom stack, outermost first */
	size_t nzoom;
	int yoff;			/* first depth drawn */
	struct row *rows;		/* by depth */
	size_t nrows;
	uint32_t *depth;		/* per node */
	double build_ms;
	uint32_t detail;		/* --prune the window's sums need
					 * for the zoom and filters shown */
	char msg[256];
};

/* ---- time and numbers ------------------------------------------------- */

/* "10:05:00" in local time, or "2026-11-30 10:05:00" with date */
static void fmt_time(uint64_t ns, char *buf, size_t len, bool date)
{
	char full[40];
	cpa_format_time(ns, full, sizeof(full));
	full[19] = '\0';
	snprintf(buf, len, "%s", date ? full : full + 11);
}

/* "10m", "1h30m", "45s", "500ms" */
static void fmt_span(uint64_t ns, char *buf, size_t len)
{
	uint64_t s = ns / CPA_NSEC_PER_SEC;
	if (!s)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
	else if (s % 3600 == 0)
		snprintf(buf, len, "%lluh", (unsigned long long)(s / 3600));
	else if (s >= 3600)
		snprintf(buf, len, "%lluh%llum", (unsigned long long)(s / 3600),
			 (unsigned long long)(s / 60 % 60));
	else if (s % 60 == 0)
		snprintf(buf, len, "%llum", (unsigned long long)(s / 60));
	else if (s > 60)
		snprintf(buf, len, "%llum%llus", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else
		snprintf(buf, len, "%llus", (unsigned long long)s);
}

/* A rate in the kind's unit: cores for on-CPU samples at a known period,
 * else the unit per second. */
static double rate_of(const struct ui *u, double weight, double ns)
{
	if (ns <= 0)
		return 0;
	enum cpa_unit unit = cpa_kind_unit((unsigned)u->v.kind);
	if (unit == CPA_UNIT_SAMPLES && u->d.period_ns)
		return weight * (double)u->d.period_ns / ns;
	if (unit == CPA_UNIT_NS)
		return weight / ns;	/* threads: seconds per second */
	return weight * 1e9 / ns;
}

static const char *rate_unit(const struct ui *u)
{
	switch (cpa_kind_unit((unsigned)u->v.kind)) {
	case CPA_UNIT_SAMPLES: return u->d.period_ns ? "C" : " samples/s";
	case CPA_UNIT_NS: return " s/s";
	case CPA_UNIT_COUNT: return "/s";
	case CPA_UNIT_BYTES: return " B/s";
	case CPA_UNIT_PAGES: return " pages/s";
	}
	return "";
}

/* "1.50", "12.3K", "4.00M" */
static void fmt_rate(double r, char *buf, size_t len)
{
	if (r >= 1e9)
		snprintf(buf, len, "%.2fG", r / 1e9);
	else if (r >= 1e6)
		snprintf(buf, len, "%.2fM", r / 1e6);
	else if (r >= 1e4)
		snprintf(buf, len, "%.1fK", r / 1e3);
	else
		snprintf(buf, len, "%.2f", r);
}

/* ---- paths by name ---------------------------------------------------- */

static void path_free(struct name_path *p)
{
	for (uint32_t i = 0; i < p->n; i++)
		free(p->names[i]);
	free(p->names);
	p->names = NULL;
	p->n = 0;
}

static void path_save(const struct tree *t, uint32_t node,
		      struct name_path *p)
{
	path_free(p);
	uint32_t n = 0;
	for (uint32_t x = node; x != TREE_ROOT && x != TREE_NONE;
	     x = t->nodes[x].parent)
		n++;
	p->names = cpa_calloc(n + 1, sizeof(*p->names));
	p->n = n;
	for (uint32_t x = node; n > 0; x = t->nodes[x].parent) {
		uint32_t len;
		const char *s = tree_name_str(t, t->nodes[x].name, &len);
		p->names[--n] = cpa_strndup(s, len);
	}
}

/* The deepest node along p that the tree still has. */
static uint32_t path_find(const struct tree *t, const struct name_path *p)
{
	uint32_t node = TREE_ROOT;
	for (uint32_t i = 0; i < p->n; i++) {
		uint32_t next = TREE_NONE;
		for (uint32_t k = t->kid_off[node]; k < t->kid_off[node + 1];
		     k++) {
			uint32_t len, c = t->kids[k];
			const char *s = tree_name_str(t, t->nodes[c].name, &len);
			if (strlen(p->names[i]) == len &&
			    !memcmp(s, p->names[i], len)) {
				next = c;
				break;
			}
		}
		if (next == TREE_NONE)
			break;
		node = next;
	}
	return node;
}

/* ---- the model -------------------------------------------------------- */

static uint64_t span_clamp(const struct ui *u, uint64_t span)
{
	uint64_t len = u->hist_to - u->hist_from;
	if (span < u->d.interval_ns)
		span = u->d.interval_ns;
	if (len && span > len)
		span = len;
	return span;
}

static void window_set(struct ui *u, uint64_t from, uint64_t span)
{
	span = span_clamp(u, span);
	uint64_t last = u->hist_to > u->hist_from + span
			? u->hist_to - span : u->hist_from;
	if (from < u->hist_from)
		from = u->hist_from;
	if (from > last)
		from = last;
	u->v.win_from = from;
	u->v.win_span = span;
	u->dirty = true;
}

static void window_default(struct ui *u)
{
	uint64_t span = span_clamp(u, DEFAULT_SPAN);
	window_set(u, u->hist_to > span ? u->hist_to - span : 0, span);
}

/* The chart shows the window with a span of history on either side. */
static void chart_range(const struct ui *u, uint64_t *from, uint64_t *to)
{
	uint64_t len = u->hist_to - u->hist_from, span = u->v.win_span;
	uint64_t clen = span > len / 3 ? len : 3 * span;
	uint64_t f = u->v.win_from > u->hist_from + span
		     ? u->v.win_from - span : u->hist_from;
	if (f + clen > u->hist_to)
		f = u->hist_to - clen;
	*from = f;
	*to = f + clen;
}

static void pick_kind(struct ui *u)
{
	if (u->v.kind >= 0 && (u->d.kinds & 1u << u->v.kind))
		return;
	if (u->o->kind >= 0 && (u->d.kinds & 1u << u->o->kind)) {
		u->v.kind = u->o->kind;
		return;
	}
	for (int k = 0; k < CPA_KIND_COUNT; k++)
		if (u->d.kinds & 1u << k) {
			u->v.kind = k;
			return;
		}
	if (u->v.kind < 0)
		u->v.kind = u->o->kind >= 0 ? u->o->kind : CPA_KIND_ONCPU;
}

/* cpa-query --labels of what the view tells apart: the root labels shown
 * (with_roots) and the fields the filters test. */
static void sums_labels(const struct ui *u, bool with_roots, char *buf,
			size_t len)
{
	static const struct { int label, field; const char *name; } l[] = {
		{ CPA_LABEL_COMM, F_COMM, "comm" },
		{ CPA_LABEL_PID, F_PID, "pid" },
		{ CPA_LABEL_THREAD, -1, "tid,thread" },
		{ CPA_LABEL_CONTAINER, F_CONTAINER, "container" },
		{ CPA_LABEL_ENV, F_ENV, "env" },
		{ CPA_LABEL_CPU, F_CPU, "cpu" },
	};
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(l) / sizeof(*l); i++)
		if ((with_roots && u->v.label[l[i].label]) ||
		    (with_roots && l[i].label == CPA_LABEL_CPU &&
		     tui_irq_per_cpu(&u->v)) ||
		    (l[i].field >= 0 && u->v.filter.set[l[i].field]))
			o += (size_t)snprintf(buf + o, len - o, "%s%s",
					      o ? "," : "", l[i].name);
	if (!o)
		snprintf(buf, len, "none");
}

/* Starts the query of sums d when they do not hold what key says. True
 * when started; the error is shown when it could not be. */
static bool sums_start(struct ui *u, struct tui_data *d, struct sums_key *have,
		       const struct sums_key *want, bool side)
{
	if (!memcmp(have, want, sizeof(*want)))
		return false;
	*have = *want;
	if (tui_data_sums_start(d, want->from, want->to, want->every,
				want->labels, side ? "side" : want->kernel ?
				"kernel" : NULL, (uint32_t)want->prune,
				want->callee) < 0) {
		snprintf(u->msg, sizeof(u->msg), "%.200s", d->err);
		have->to = 0;
		return false;
	}
	return true;
}

static void sums_finish(struct ui *u, struct tui_data *d, struct sums_key *have)
{
	if (tui_data_sums_finish(d) < 0) {
		snprintf(u->msg, sizeof(u->msg), "%.200s", d->err);
		have->to = 0;
		return;
	}
	/* what the stream's meta says, for units and the guide line */
	u->d.kinds |= d->kinds;
	if (d->period_ns)
		u->d.period_ns = d->period_ns;
	u->d.ncpu = d->ncpu;
}

/*
 * The window's sums of a long chart are cut by cpa-query to the frames
 * the screen can draw: under half a column of the kind's total is not
 * drawn. Zooming in or filtering shows a smaller part of the total full
 * width, so the cut is made finer (u->detail) as they ask. The callee
 * view's tree is cut from the leaf (--callee), the kernel-only view's
 * from stacks of their kernel frames alone (--stacks kernel).
 */
#define PRUNE_MAX (1u << 22)

static uint64_t window_prune(const struct ui *u)
{
	uint32_t n = 2 * (uint32_t)(COLS > 0 ? COLS : 80);
	if (u->detail == UINT32_MAX)
		return 0;
	return u->detail > n ? u->detail : n;
}

/* After a build from cut sums: true when the view shown needs finer
 * sums (u->detail raised). */
static bool detail_short(struct ui *u)
{
	const struct tree *t = &u->m.tree;
	if (!u->win_key.prune || !u->m.have_tree || !t->total[u->root])
		return false;
	double need = 2.0 * (COLS > 0 ? COLS : 80) * (double)u->m.total /
		      (double)t->total[u->root];
	if (need <= (double)u->win_key.prune)
		return false;
	uint32_t n = 1024;
	while (n < need && n < PRUNE_MAX)
		n *= 2;
	/* beyond PRUNE_MAX a cut saves little: the sums whole */
	u->detail = n >= PRUNE_MAX ? UINT32_MAX : n;
	return true;
}

/*
 * A long chart (a day of history) comes from two queries of sums whose
 * size is what the screen shows: the trend per column and side, the
 * window's flame graph per label set and stack over the whole window.
 * The chart is widened to whole columns.
 */
static bool rebuild_from_sums(struct ui *u, uint64_t *cf, uint64_t *ct,
			      unsigned *ncols)
{
	if (!u->d.query || *ct - *cf <= SAMPLES_MAX_NS)
		return false;
	uint64_t iv = u->d.interval_ns;
	/* whole windows, and whole minutes once a column is longer */
	uint64_t col = (*ct - *cf) / TREND_COLS;
	uint64_t unit = col >= 60 * CPA_NSEC_PER_SEC && iv <= 60 *
			CPA_NSEC_PER_SEC ? 60 * CPA_NSEC_PER_SEC : iv;
	if (col % unit || !col)
		col += unit - col % unit;
	*ncols = (unsigned)((*ct - *cf + col - 1) / col);
	*ct = *cf + *ncols * col;

	struct sums_key tk = { .from = *cf, .to = *ct, .every = col };
	sums_labels(u, false, tk.labels, sizeof(tk.labels));
	bool trend = sums_start(u, &u->trend, &u->trend_key, &tk, true);

	/* one group covering the window: windows are aligned to iv */
	uint64_t wf = u->v.win_from - u->v.win_from % iv;
	uint64_t wt = u->v.win_from + u->v.win_span;
	if (wt % iv)
		wt += iv - wt % iv;
	struct sums_key wk = { .from = wf, .to = wt, .every = wt - wf,
			       .prune = window_prune(u),
			       .callee = u->v.inverted,
			       .kernel = u->v.kernel_only };
	sums_labels(u, true, wk.labels, sizeof(wk.labels));
	bool win = sums_start(u, &u->win, &u->win_key, &wk, false);
	/* both read the range at once, on two CPUs where there are; the
	 * window's answer comes at its end, so the trend is read first */
	if (trend)
		sums_finish(u, &u->trend, &u->trend_key);
	if (win)
		sums_finish(u, &u->win, &u->win_key);
	return true;
}

/* True when the window came from sums. */
static bool rebuild_once(struct ui *u)
{
	uint64_t cf, ct;
	unsigned ncols = 0;

	u->dirty = false;
	chart_range(u, &cf, &ct);
	bool sums = rebuild_from_sums(u, &cf, &ct, &ncols);
	if (!sums && tui_data_need(&u->d, cf, ct) < 0)
		snprintf(u->msg, sizeof(u->msg), "%.200s", u->d.err);
	pick_kind(u);
	uint64_t t0 = cpa_now_ns();
	uint64_t windows = (ct - cf) / u->d.interval_ns;
	if (windows > (1u << 22))
		windows = 1u << 22;
	if (sums)
		tui_model_build(&u->m, &u->win, &u->trend, &u->v, cf, ct, ncols);
	else
		tui_model_build(&u->m, &u->d, &u->d, &u->v, cf, ct,
				windows ? (unsigned)windows : 1);
	u->build_ms = (double)(cpa_now_ns() - t0) / 1e6;

	const struct tree *t = &u->m.tree;
	free(u->depth);
	u->depth = cpa_calloc(t->n + 1, sizeof(*u->depth));
	for (uint32_t i = 1; i < t->n; i++)
		u->depth[i] = u->depth[t->nodes[i].parent] + 1;
	u->root = u->nzoom ? path_find(t, &u->zoom[u->nzoom - 1]) : TREE_ROOT;
	u->sel = u->sel_path.n ? path_find(t, &u->sel_path) : TREE_ROOT;
	return sums;
}

static void rebuild(struct ui *u)
{
	/* once more when the cut sums lack the detail of the zoom */
	if (rebuild_once(u) && detail_short(u))
		rebuild_once(u);
}

/* ---- drawing ---------------------------------------------------------- */

static bool has_colors_;

static void colors_init(void)
{
	has_colors_ = has_colors();
	if (!has_colors_)
		return;
	start_color();
	use_default_colors();
	/* dark text on a coloured bar, light on the dark ones: readable on
	 * dark and light terminals alike */
	init_pair(P_USER_A, COLOR_BLACK, COLOR_YELLOW);
	init_pair(P_USER_B, COLOR_WHITE, COLOR_RED);
	init_pair(P_KERNEL, COLOR_BLACK, COLOR_CYAN);
	init_pair(P_LABEL, COLOR_BLACK, COLOR_WHITE);
	init_pair(P_MATCH, COLOR_WHITE, COLOR_MAGENTA);
	init_pair(P_OFF_A, COLOR_WHITE, COLOR_BLUE);
	init_pair(P_OFF_B, COLOR_BLACK, COLOR_CYAN);
	init_pair(P_MEM_A, COLOR_BLACK, COLOR_GREEN);
	init_pair(P_MEM_B, COLOR_BLACK, COLOR_YELLOW);
	init_pair(P_CHART_USER, COLOR_CYAN, -1);
	init_pair(P_CHART_SYS, COLOR_YELLOW, -1);
	init_pair(P_CHART_WIN, COLOR_GREEN, -1);
	init_pair(P_ERR, COLOR_RED, -1);
}

static attr_t pair(int p)
{
	return has_colors_ ? COLOR_PAIR(p) : A_NORMAL;
}

static attr_t frame_attr(const struct ui *u, const char *s, uint32_t len)
{
	if (s[0] == '[' || len == 0 || u->depth == NULL)
		return pair(P_LABEL);
	if (len >= 4 && !memcmp(s + len - 4, "_[k]", 4))
		return pair(P_KERNEL);
	unsigned h = 0;
	for (uint32_t i = 0; i < len && i < 8; i++)
		h = h * 31 + (unsigned char)s[i];
	bool a = h & 1;
	switch (cpa_kind_unit((unsigned)u->v.kind)) {
	case CPA_UNIT_NS:
		return pair(a ? P_OFF_A : P_OFF_B);
	case CPA_UNIT_BYTES:
	case CPA_UNIT_PAGES:
		return pair(a ? P_MEM_A : P_MEM_B);
	default:
		return pair(a ? P_USER_A : P_USER_B);
	}
}

static bool search_match(const struct ui *u, const char *s, uint32_t len)
{
	if (!u->v.searching)
		return false;
	char buf[512];
	snprintf(buf, sizeof(buf), "%.*s", (int)len, s);
	return regexec(&u->v.search, buf, 0, NULL, 0) == 0;
}

static void rows_reset(struct ui *u)
{
	for (size_t i = 0; i < u->nrows; i++)
		u->rows[i].n = 0;
}

static void row_add(struct ui *u, uint32_t depth, uint32_t node, int c0,
		    int c1)
{
	CPA_GROW_ZERO(u->rows, u->nrows, (size_t)depth + 1);
	struct row *r = &u->rows[depth];
	CPA_GROW(r->c, r->cap, r->n + 1);
	r->c[r->n++] = (struct cell){ node, c0, c1 };
}

struct flame_area {
	int top, height, width;
	uint64_t matched;
};

static void draw_frame(struct ui *u, struct flame_area *a, uint32_t node,
		       uint32_t depth, int c0, int c1)
{
	const struct tree *t = &u->m.tree;
	row_add(u, depth, node, c0, c1);
	int y = (int)depth - u->yoff;
	if (y < 0 || y >= a->height)
		return;
	uint32_t len;
	const char *s = node == TREE_ROOT ? "all"
			: tree_name_str(t, t->nodes[node].name, &len);
	if (node == TREE_ROOT)
		len = 3;
	attr_t at = frame_attr(u, s, len);
	if (search_match(u, s, len))
		at = pair(P_MATCH) | A_BOLD;
	if (node == u->sel)
		at |= A_REVERSE | A_BOLD;
	/* the name, cut with ".." when it does not fit; the last column
	 * stays blank to part the bar from the next one */
	int w = c1 - c0, tw = w > 1 ? w - 1 : 1;
	attron(at);
	move(a->top + y, c0);
	for (int i = 0; i < tw; i++) {
		char ch = (uint32_t)i < len ? s[i] : ' ';
		if ((uint32_t)tw < len && tw >= 3 && i >= tw - 2)
			ch = '.';
		if (w == 1)
			ch = ' ';
		addch((chtype)(unsigned char)ch);
	}
	attroff(at);
}

static void lay(struct ui *u, struct flame_area *a, uint32_t node,
		uint32_t depth, double x0, double w)
{
	const struct tree *t = &u->m.tree;
	int c0 = (int)lround(x0), c1 = (int)lround(x0 + w);
	if (c1 <= c0)
		return;
	draw_frame(u, a, node, depth, c0, c1);
	uint64_t tot = t->total[node];
	if (!tot)
		return;
	double x = x0;
	for (uint32_t k = t->kid_off[node]; k < t->kid_off[node + 1]; k++) {
		uint32_t c = t->kids[k];
		double cw = w * (double)t->total[c] / (double)tot;
		lay(u, a, c, depth + 1, x, cw);
		x += cw;
	}
}

static void draw_flame(struct ui *u, int top, int height)
{
	const struct tree *t = &u->m.tree;
	struct flame_area a = { top, height, COLS, 0 };

	rows_reset(u);
	if (height <= 0)
		return;
	if (t->total[TREE_ROOT] == 0) {
		char a1[40], b1[40];
		fmt_time(u->v.win_from, a1, sizeof(a1), false);
		fmt_time(u->v.win_from + u->v.win_span, b1, sizeof(b1), false);
		attron(A_BOLD);
		if (u->d.err[0] && !u->d.n)
			mvprintw(top + 1, 2, "%.*s", COLS - 4, u->d.err);
		else if (u->empty_store)
			mvprintw(top + 1, 2, "no samples: the store holds "
				 "nothing yet");
		else
			mvprintw(top + 1, 2, "no %s samples in this window "
				 "(%s .. %s)%s",
				 cpa_kind_name((unsigned)u->v.kind), a1, b1,
				 u->v.filter.set[0] || u->v.filter.set[1] ||
				 u->v.filter.set[2] || u->v.filter.set[3] ||
				 u->v.filter.set[4] ? " that pass the filters"
						    : "");
		attroff(A_BOLD);
		return;
	}
	/* keep the selection on screen */
	int sd = (int)u->depth[u->sel];
	if (sd < u->yoff)
		u->yoff = sd;
	if (sd >= u->yoff + height)
		u->yoff = sd - height + 1;
	/* the zoom root's callers full width, then its callees to scale */
	uint32_t chain[CPA_MAX_STACK_DEPTH + 8];
	uint32_t n = 0;
	for (uint32_t x = u->root; x != TREE_NONE && n < sizeof(chain) /
	     sizeof(*chain); x = t->nodes[x].parent)
		chain[n++] = x;
	for (uint32_t i = n; i-- > 1;)
		draw_frame(u, &a, chain[i], u->depth[chain[i]], 0, COLS);
	lay(u, &a, u->root, u->depth[u->root], 0, COLS);
}

static void draw_chart(struct ui *u, int top, int h)
{
	const struct tui_model *m = &u->m;
	int lw = 8, w = COLS - lw;
	if (h <= 0 || w <= 0)
		return;
	/* the model keeps one column per window: a screen column is the
	 * mean of the windows it covers */
	double col_ns = (double)(m->chart_to - m->chart_from) / m->ncols;
	double ymax = 0;
	double *tot = cpa_calloc((size_t)w, sizeof(*tot));
	double *sys = cpa_calloc((size_t)w, sizeof(*sys));
	for (int x = 0; x < w; x++) {
		unsigned k0 = (unsigned)((uint64_t)x * m->ncols / (unsigned)w);
		unsigned k1 = (unsigned)((uint64_t)(x + 1) * m->ncols /
					 (unsigned)w);
		if (k1 <= k0)
			k1 = k0 + 1;
		double us = 0, sy = 0;
		for (unsigned k = k0; k < k1 && k < m->ncols; k++) {
			us += m->user[k];
			sy += m->sys[k];
		}
		/* a net decrease (frees of a signed kind) draws nothing */
		tot[x] = us + sy > 0 ? rate_of(u, us + sy, col_ns * (k1 - k0)) : 0;
		sys[x] = sy > 0 ? rate_of(u, sy, col_ns * (k1 - k0)) : 0;
		if (tot[x] > ymax)
			ymax = tot[x];
	}
	bool cores = cpa_kind_unit((unsigned)u->v.kind) == CPA_UNIT_SAMPLES &&
		     u->d.period_ns;
	ymax = ymax > 1 ? ceil(ymax) : ymax > 0 ? ymax : 1;
	if (cores && ymax < u->d.ncpu)
		ymax = u->d.ncpu;
	char lab[24];
	fmt_rate(ymax, lab, sizeof(lab));
	mvprintw(top, 0, "%6s%s", lab, cores ? "C" : "");
	mvprintw(top + h - 1, 0, "%6s%s", "0", cores ? "C" : "");
	int guide = cores ? h - (int)lround(u->d.ncpu / ymax * h) : -1;
	if (cores && guide > 0 && guide < h - 1)
		mvprintw(top + guide, 0, "%6uC", u->d.ncpu);
	for (int x = 0; x < w; x++) {
		int filled = (int)lround(tot[x] / ymax * h);
		int sfill = (int)lround(sys[x] / ymax * h);
		for (int r = 0; r < h; r++) {
			int level = h - r;	/* 1 at the bottom row */
			chtype ch = ' ';
			attr_t at = A_NORMAL;
			if (level <= sfill) {
				ch = '#';
				at = pair(P_CHART_SYS);
			} else if (level <= filled) {
				ch = '|';
				at = pair(P_CHART_USER);
			} else if (r == guide) {
				ch = '-';
				at = A_DIM;
			}
			mvaddch(top + r, lw + x, ch | at);
		}
	}
	free(tot);
	free(sys);

	/* the time axis, the window marked on it */
	int y = top + h;
	move(y, 0);
	clrtoeol();
	double span = (double)(m->chart_to - m->chart_from);
	int w0 = lw + (int)lround((double)(u->v.win_from - m->chart_from) /
				  span * w);
	int w1 = lw + (int)lround((double)(u->v.win_from + u->v.win_span -
					   m->chart_from) / span * w);
	if (w1 <= w0)
		w1 = w0 + 1;
	attron(pair(P_CHART_WIN) | A_BOLD);
	for (int x = w0; x < w1 && x < COLS; x++)
		mvaddch(y, x, x == w0 ? '[' : x == w1 - 1 ? ']' : '=');
	attroff(pair(P_CHART_WIN) | A_BOLD);
	char a[40], b[40];
	fmt_time(m->chart_from, a, sizeof(a), false);
	fmt_time(m->chart_to, b, sizeof(b), false);
	mvprintw(y + 1, lw, "%s", a);
	mvprintw(y + 1, COLS - (int)strlen(b) - 1, "%s", b);
}

static void draw_detail(struct ui *u, int y)
{
	const struct tree *t = &u->m.tree;
	move(y, 0);
	clrtoeol();
	if (!t->total[TREE_ROOT])
		return;
	uint32_t s = u->sel, len;
	const char *name = s == TREE_ROOT ? "all"
			   : tree_name_str(t, t->nodes[s].name, &len);
	if (s == TREE_ROOT)
		len = 3;
	uint64_t w = t->total[s];
	enum cpa_unit unit = cpa_kind_unit((unsigned)u->v.kind);
	char val[64], r[24], line[512];
	format_value(val, sizeof(val), w, unit, NULL);
	double win_ns = (double)u->v.win_span;
	double view = 100.0 * (double)w / (double)t->total[u->root];
	double all;
	if (unit == CPA_UNIT_SAMPLES && u->d.period_ns)
		all = 100.0 * (double)w * (double)u->d.period_ns /
		      (win_ns * u->d.ncpu);
	else
		all = u->m.total ? 100.0 * (double)w / (double)u->m.total : 0;
	fmt_rate(rate_of(u, (double)w, win_ns), r, sizeof(r));
	uint32_t maxd = 0;
	for (uint32_t i = 0; i < t->n; i++)
		if (u->depth[i] > maxd)
			maxd = u->depth[i];
	snprintf(line, sizeof(line), " %s | View:%.1f%% All:%.2f%% | "
		 "%s%s | D:%u/%u ", val, view, all, r, rate_unit(u),
		 u->depth[s], maxd);
	int room = COLS - (int)strlen(line) - 1;
	attron(A_BOLD);
	mvprintw(y, 0, "%.*s", room > 0 ? room : 0, name);
	attroff(A_BOLD);
	if (room > 0 && (int)len > room)
		mvprintw(y, room - 3, "...");
	mvprintw(y, COLS - (int)strlen(line) > 0 ? COLS - (int)strlen(line) : 0,
		 "%s", line);
}

static void draw_status(struct ui *u, int y)
{
	char a[40], b[40], w0[40], sp[40], filt[160], labels[64] = "";
	static const char *const lname[] = {
		[CPA_LABEL_COMM] = "comm", [CPA_LABEL_PID] = "pid",
		[CPA_LABEL_THREAD] = "thread", [CPA_LABEL_CONTAINER] = "container",
		[CPA_LABEL_ENV] = "env", [CPA_LABEL_CPU] = "cpu",
	};
	/* dates only when the history is longer than a day */
	bool days = u->hist_to - u->hist_from >= 86400 * CPA_NSEC_PER_SEC;
	fmt_time(u->hist_from, a, sizeof(a), days);
	fmt_time(u->hist_to, b, sizeof(b), days);
	fmt_time(u->v.win_from, w0, sizeof(w0), false);
	fmt_span(u->v.win_span, sp, sizeof(sp));
	tui_filter_describe(&u->v.filter, filt, sizeof(filt));
	for (int i = 0; i <= CPA_LABEL_CPU; i++)
		if (u->v.label[i] && lname[i]) {
			strcat(labels, labels[0] ? "," : "");
			strcat(labels, lname[i]);
		}
	char line[1024];
	/* a message first, where a narrow terminal still shows it */
	snprintf(line, sizeof(line), " %s%srange %s-%s | window %s +%s | "
		 "%s%s%s%s | labels %s | filters %s | %.0f ms",
		 u->msg, u->msg[0] ? " | " : "", a, b, w0, sp,
		 cpa_kind_name((unsigned)u->v.kind),
		 u->v.inverted ? " callee" : "",
		 u->v.kernel_only ? " kernel-only" : "",
		 u->follow ? " follow" : "",
		 labels[0] ? labels : "none", filt[0] ? filt : "none",
		 u->build_ms);
	attron(A_REVERSE);
	move(y, 0);
	clrtoeol();
	mvprintw(y, 0, "%-*.*s", COLS, COLS, line);
	attroff(A_REVERSE);
}

static const char *const help_lines[] = {
	"cpa-render --tui: keys, as CPA's cpa_show has them",
	"",
	"  q            quit                 ?            this help",
	"  t / T        window forward / back by its span",
	"  s / S        span wider / narrower (x2, /2)",
	"  J            jump to a time       R            window from .. to",
	"  0            full history         9            default window (10m)",
	"  g            chart height",
	"  arrows hjkl a d   move the selection; Enter zoom; Esc back",
	"               (h moves left, as in vi: ? is CPA's h)",
	"  I            caller / callee (inverted) view",
	"  N P M D C H  root labels: env pid comm container cpu thread",
	"  O            kernel frames only",
	"  X            module+0xOFF frames merged as module+<...>",
	"  U            IRQ-off gaps merged across CPUs (parted by default)",
	"  c            the store's conf    o   the filters set",
	"  e            next event kind (oncpu, offcpu-blocked, mem-...)",
	"  :            filter: pid 12,13  comm NAME  cpu 0-3  container ID",
	"               env VALUE; pidv commv cpuv containerv envv negate;",
	"               kind NAME; unset [NAME]",
	"  /            search: frames matching an extended regex light up",
	"",
	"  press any key to close",
};

/* A framed box of lines in the middle of the screen. */
static void draw_box(const char *const *lines, int n)
{
	int w = 72, h = n + 2;
	int y0 = LINES > h ? (LINES - h) / 2 : 0, x0 = COLS > w ? (COLS - w) / 2 : 0;
	for (int i = 0; i < h && y0 + i < LINES; i++) {
		move(y0 + i, x0);
		for (int k = 0; k < w && x0 + k < COLS; k++)
			addch(i == 0 || i == h - 1 ? '-' : k == 0 || k == w - 1
			      ? '|' : ' ');
		if (i > 0 && i < h - 1)
			mvprintw(y0 + i, x0 + 2, "%.*s", w - 4, lines[i - 1]);
	}
}

/* c: what the stream says of the store and its capture (cpa-query's
 * meta), as CPA's conf screen shows its store's conf. */
static void draw_conf(const struct ui *u)
{
	const struct tui_data *d = u->d.nmeta ? &u->d : &u->trend;
	char head[4][128], *lines[80];
	int n = 0;
	char a[40], b[40];
	fmt_time(u->hist_from, a, sizeof(a), true);
	fmt_time(u->hist_to, b, sizeof(b), true);
	snprintf(head[0], sizeof(head[0]), "conf: the store's meta, as "
		 "cpa-query passes it on");
	snprintf(head[1], sizeof(head[1]), "history %s .. %s", a, b);
	snprintf(head[2], sizeof(head[2]), "%u CPUs, windows of %.3g s",
		 u->d.ncpu, (double)u->d.interval_ns / 1e9);
	head[3][0] = '\0';
	for (int i = 0; i < 4; i++)
		lines[n++] = head[i];
	for (size_t i = 0; i < d->nmeta && n < 76; i++)
		lines[n++] = d->meta[i];
	if (!d->nmeta)
		lines[n++] = "(no meta: the stream carried none)";
	lines[n++] = "";
	lines[n++] = "press any key to close";
	draw_box((const char *const *)lines, n);
}

/* o: the filters set, each as the ':' command that sets it. */
static void draw_filters(const struct ui *u)
{
	static const char *const name[F_N] = {
		[F_PID] = "pid", [F_COMM] = "comm", [F_CPU] = "cpu",
		[F_CONTAINER] = "container", [F_ENV] = "env",
	};
	char buf[F_N][160];
	const char *lines[F_N + 5];
	int n = 0;
	lines[n++] = "filters, as the ':' commands that set them:";
	lines[n++] = "";
	for (int i = 0; i < F_N; i++)
		if (u->v.filter.set[i]) {
			snprintf(buf[i], sizeof(buf[i]), "  %s%s %s", name[i],
				 u->v.filter.negate[i] ? "v" : "",
				 u->v.filter.text[i]);
			lines[n++] = buf[i];
		}
	if (n == 2)
		lines[n++] = "  none: every sample of the kind is shown";
	lines[n++] = "";
	lines[n++] = "':unset NAME' clears one; press any key to close";
	draw_box(lines, n);
}

static void draw(struct ui *u)
{
	erase();
	char a[40], b[40], sp[40];
	fmt_time(u->v.win_from, a, sizeof(a), true);
	fmt_time(u->v.win_from + u->v.win_span, b, sizeof(b), false);
	fmt_span(u->v.win_span, sp, sizeof(sp));
	const char *what = cpa_kind_unit((unsigned)u->v.kind) ==
			   CPA_UNIT_SAMPLES ? "CPU trend: user | and system #"
			   : "trend";
	attron(A_BOLD);
	mvprintw(0, 0, "%s (%s)  Sel: %s - %s (%s)", what,
		 cpa_kind_name((unsigned)u->v.kind), a, b, sp);
	attroff(A_BOLD);
	int top = 1;
	if (u->chart_h > 0) {
		draw_chart(u, top, u->chart_h);
		top += u->chart_h + 2;
	}
	draw_flame(u, top, LINES - 2 - top);
	draw_detail(u, LINES - 2);
	draw_status(u, LINES - 1);
	if (u->overlay == OVERLAY_HELP)
		draw_box(help_lines, (int)(sizeof(help_lines) /
					   sizeof(*help_lines)));
	else if (u->overlay == OVERLAY_CONF)
		draw_conf(u);
	else if (u->overlay == OVERLAY_FILTERS)
		draw_filters(u);
	refresh();
}

/* ---- keys ------------------------------------------------------------- */

/* A line typed at the bottom of the screen: 1 on Enter, 0 on Esc. */
static int prompt(const char *label, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	curs_set(1);
	for (;;) {
		move(LINES - 1, 0);
		clrtoeol();
		mvprintw(LINES - 1, 0, "%s%s", label, buf);
		refresh();
		int ch = getch();
		if (ch == ERR)
			continue;
		if (ch == '\n' || ch == KEY_ENTER || ch == '\r') {
			curs_set(0);
			return 1;
		}
		if (ch == 27) {
			curs_set(0);
			return 0;
		}
		if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n)
			buf[--n] = '\0';
		else if (ch >= 32 && ch < 127 && n + 1 < len) {
			buf[n++] = (char)ch;
			buf[n] = '\0';
		}
	}
}

static void select_node(struct ui *u, uint32_t node)
{
	u->sel = node;
	path_save(&u->m.tree, node, &u->sel_path);
}

/* The frame next to the selection on its row, dir -1 or 1. */
static void move_along(struct ui *u, int dir)
{
	uint32_t d = u->depth[u->sel];
	if (d >= u->nrows)
		return;
	struct row *r = &u->rows[d];
	for (size_t i = 0; i < r->n; i++)
		if (r->c[i].node == u->sel) {
			if (dir < 0 && i > 0)
				select_node(u, r->c[i - 1].node);
			if (dir > 0 && i + 1 < r->n)
				select_node(u, r->c[i + 1].node);
			return;
		}
}

/* The widest callee drawn. */
static void move_down(struct ui *u)
{
	uint32_t d = u->depth[u->sel] + 1, best = TREE_NONE;
	if (d >= u->nrows)
		return;
	const struct tree *t = &u->m.tree;
	struct row *r = &u->rows[d];
	for (size_t i = 0; i < r->n; i++)
		if (t->nodes[r->c[i].node].parent == u->sel &&
		    (best == TREE_NONE ||
		     t->total[r->c[i].node] > t->total[best]))
			best = r->c[i].node;
	if (best != TREE_NONE)
		select_node(u, best);
}

static void toggle_label(struct ui *u, enum cpa_label l, const char *name)
{
	u->v.label[l] = !u->v.label[l];
	snprintf(u->msg, sizeof(u->msg), "%s label %s", name,
		 u->v.label[l] ? "on" : "off");
	u->dirty = true;
}

static void parse_time_prompt(struct ui *u, const char *label, bool range)
{
	char buf[128], err[128];
	if (!prompt(label, buf, sizeof(buf)) || !buf[0])
		return;
	/* a time of day is on the window's day, -10m before its start */
	uint64_t from, to, now = u->v.win_from;
	char *sep = range ? strstr(buf, "..") : NULL;
	if (range && !sep)
		sep = strrchr(buf, ' ');
	if (sep) {
		*sep = '\0';
		sep += sep[1] == '.' ? 2 : 1;
		while (*sep == ' ')
			sep++;
	}
	if (cpa_parse_time(buf, now, &from) < 0 ||
	    (range && (!sep || cpa_parse_time(sep, now, &to) < 0 ||
		       to <= from))) {
		snprintf(err, sizeof(err), range ? "expected FROM TO, such as "
			 "10:00 10:05" : "expected a time, such as 10:00:30");
		snprintf(u->msg, sizeof(u->msg), "%s", err);
		return;
	}
	u->msg[0] = '\0';
	if (range) {
		if (from < u->hist_from && u->d.query)
			u->hist_from = from;
		if (to > u->hist_to && u->d.query)
			u->hist_to = to;
		window_set(u, from, to - from);
	} else {
		window_set(u, from, u->v.win_span);
	}
}

static void filter_prompt(struct ui *u)
{
	char buf[256], err[256];
	if (!prompt(":", buf, sizeof(buf)) || !buf[0])
		return;
	const char *c = buf;
	while (*c == ' ')
		c++;
	if (!strncmp(c, "kind ", 5)) {
		int k = cpa_kind_parse(c + 5);
		if (k < 0) {
			snprintf(u->msg, sizeof(u->msg), "kind: no event kind "
				 "'%s'", c + 5);
			return;
		}
		u->v.kind = k;
		u->msg[0] = '\0';
		u->dirty = true;
		return;
	}
	if (tui_filter_command(&u->v.filter, c, err, sizeof(err)) < 0) {
		snprintf(u->msg, sizeof(u->msg), "%s", err);
		return;
	}
	u->msg[0] = '\0';
	u->dirty = true;
}

static void search_prompt(struct ui *u)
{
	char buf[256];
	if (!prompt("/", buf, sizeof(buf)))
		return;
	if (u->v.searching)
		regfree(&u->v.search);
	u->v.searching = false;
	u->msg[0] = '\0';
	if (!buf[0])
		return;
	int rc = regcomp(&u->v.search, buf, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char e[128];
		regerror(rc, &u->v.search, e, sizeof(e));
		snprintf(u->msg, sizeof(u->msg), "search: %s", e);
		return;
	}
	u->v.searching = true;
	/* how much of the view matches, as flamegraph.pl's search says */
	const struct tree *t = &u->m.tree;
	uint64_t matched = 0;
	for (uint32_t i = 1; i < t->n; i++) {
		uint32_t len;
		const char *s = tree_name_str(t, t->nodes[i].name, &len);
		if (!search_match(u, s, len))
			continue;
		bool under = false;	/* count a matching caller only */
		for (uint32_t p = t->nodes[i].parent; p != TREE_ROOT && !under;
		     p = t->nodes[p].parent) {
			const char *ps = tree_name_str(t, t->nodes[p].name, &len);
			under = search_match(u, ps, len);
		}
		if (!under)
			matched += t->total[i];
	}
	snprintf(u->msg, sizeof(u->msg), "matched %.1f%%",
		 t->total[TREE_ROOT] ? 100.0 * (double)matched /
		 (double)t->total[TREE_ROOT] : 0);
}

static void next_kind(struct ui *u)
{
	for (int i = 1; i <= CPA_KIND_COUNT; i++) {
		int k = (u->v.kind + i) % CPA_KIND_COUNT;
		if (u->d.kinds & 1u << k) {
			u->v.kind = k;
			u->dirty = true;
			return;
		}
	}
}

/* Returns false to quit. */
static bool key(struct ui *u, int ch)
{
	if (u->overlay != OVERLAY_NONE) {
		u->overlay = OVERLAY_NONE;
		return ch != 'q';
	}
	switch (ch) {
	case 'q': return false;
	case '?': u->overlay = OVERLAY_HELP; break;
	case 'c': u->overlay = OVERLAY_CONF; break;
	case 'o': u->overlay = OVERLAY_FILTERS; break;
	case 'X':
		u->v.addr_merged = !u->v.addr_merged;
		snprintf(u->msg, sizeof(u->msg), "unnamed addresses %s",
			 u->v.addr_merged ? "merged per module" : "apart");
		u->dirty = true;
		break;
	case 'U':
		u->v.irq_cpu_merged = !u->v.irq_cpu_merged;
		snprintf(u->msg, sizeof(u->msg), "IRQ-off gaps %s",
			 u->v.irq_cpu_merged ? "merged across CPUs"
					     : "parted by CPU");
		u->dirty = true;
		break;
	case 't': window_set(u, u->v.win_from + u->v.win_span, u->v.win_span);
		break;
	case 'T': window_set(u, u->v.win_from > u->v.win_span
			     ? u->v.win_from - u->v.win_span : 0,
			     u->v.win_span);
		break;
	case 's': window_set(u, u->v.win_from, u->v.win_span * 2); break;
	case 'S': window_set(u, u->v.win_from, u->v.win_span / 2); break;
	case 'J': parse_time_prompt(u, "jump to: ", false); break;
	case 'R': parse_time_prompt(u, "window (FROM TO): ", true); break;
	case '0': window_set(u, u->hist_from, u->hist_to - u->hist_from);
		break;
	case '9': window_default(u); break;
	case 'g': u->chart_h = u->chart_h == 8 ? 14 : u->chart_h == 14 ? 4
			       : u->chart_h == 4 ? 0 : 8;
		break;
	case KEY_LEFT: case 'h': case 'a': move_along(u, -1); break;
	case KEY_RIGHT: case 'l': case 'd': move_along(u, 1); break;
	case KEY_UP: case 'k':
		if (u->sel != TREE_ROOT && u->sel != u->root)
			select_node(u, u->m.tree.nodes[u->sel].parent);
		break;
	case KEY_DOWN: case 'j': move_down(u); break;
	case '\n': case '\r': case KEY_ENTER:
		u->zoom = cpa_realloc(u->zoom, (u->nzoom + 1) *
				      sizeof(*u->zoom));
		u->zoom[u->nzoom] = (struct name_path){ 0 };
		path_save(&u->m.tree, u->sel, &u->zoom[u->nzoom++]);
		u->root = u->sel;
		u->dirty = detail_short(u);
		break;
	case 27:
		if (u->nzoom) {
			path_free(&u->zoom[--u->nzoom]);
			if (!u->nzoom)	/* the next sums as the screen needs */
				u->detail = 0;
			u->root = u->nzoom ? path_find(&u->m.tree,
						       &u->zoom[u->nzoom - 1])
					   : TREE_ROOT;
		}
		break;
	case 'I': u->v.inverted = !u->v.inverted; u->dirty = true; break;
	case 'N': toggle_label(u, CPA_LABEL_ENV, "env"); break;
	case 'P': toggle_label(u, CPA_LABEL_PID, "pid"); break;
	case 'M': toggle_label(u, CPA_LABEL_COMM, "comm"); break;
	case 'D': toggle_label(u, CPA_LABEL_CONTAINER, "container"); break;
	case 'C': toggle_label(u, CPA_LABEL_CPU, "cpu"); break;
	case 'H': toggle_label(u, CPA_LABEL_THREAD, "thread"); break;
	case 'O': u->v.kernel_only = !u->v.kernel_only; u->dirty = true; break;
	case 'e': next_kind(u); break;
	case ':': filter_prompt(u); break;
	case '/': search_prompt(u); break;
	case KEY_RESIZE: u->dirty = true; break;
	default: break;
	}
	return true;
}

/* ---- start and main loop ---------------------------------------------- */

/* The history from the command line and the store's own range. False
 * when the store could not be read: the error is on the screen. */
static bool history_init(struct ui *u)
{
	const struct render_opts *o = u->o;
	uint64_t now = cpa_now_ns();

	if (u->d.query) {
		int rc = tui_data_extent(&u->d);
		if (rc < 0)
			return false;
		u->empty_store = rc == 1;
	}
	u->hist_from = u->d.first_ns;
	u->hist_to = u->d.end_ns;
	if (o->tui_last) {
		u->hist_to = now;
		u->hist_from = now > o->tui_last ? now - o->tui_last : 0;
	}
	if (o->tui_from)
		u->hist_from = o->tui_from;
	if (o->tui_to)
		u->hist_to = o->tui_to;
	if (!u->hist_from && !u->hist_to)	/* nothing yet: from now */
		u->hist_from = now - now % CPA_NSEC_PER_SEC;
	if (u->hist_to <= u->hist_from)
		u->hist_to = u->hist_from + u->d.interval_ns;
	return !u->d.err[0];
}

static void follow_tick(struct ui *u)
{
	uint64_t old_end = u->hist_to;
	bool pinned = u->v.win_from + u->v.win_span >= old_end;
	long n = tui_data_follow(&u->d);
	if (n < 0) {
		snprintf(u->msg, sizeof(u->msg), "%.200s", u->d.err);
		return;
	}
	if (n == 0)
		return;
	if (u->d.end_ns > u->hist_to)
		u->hist_to = u->d.end_ns;
	if (u->empty_store || u->hist_from == 0) {
		u->hist_from = u->d.first_ns;
		u->empty_store = false;
	}
	if (pinned)
		window_set(u, u->hist_to > u->v.win_span
			   ? u->hist_to - u->v.win_span : 0, u->v.win_span);
	u->dirty = true;
}

int tui_run(const struct render_opts *o, char **query)
{
	struct ui u = { .o = o, .chart_h = 8, .follow = o->follow };
	FILE *tty = fopen("/dev/tty", "r+");

	if (!tty) {
		cpa_err("--tui needs a terminal: /dev/tty: %s", strerror(errno));
		return -1;
	}
	/* Every key rebuilds the tree: keep its freed memory in the heap,
	 * where the next rebuild finds it, instead of handing it back to the
	 * kernel and faulting fresh pages in again (most of a rebuild's time
	 * on a VM). */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	tui_data_init(&u.d, query);
	tui_data_init(&u.win, query);
	tui_data_init(&u.trend, query);
	u.v.kind = -1;
	for (unsigned i = 0; i < o->labels.n; i++)
		u.v.label[o->labels.order[i] == CPA_LABEL_TID ? CPA_LABEL_THREAD
			  : o->labels.order[i] == CPA_LABEL_POD ||
			    o->labels.order[i] == CPA_LABEL_CGROUP
			  ? CPA_LABEL_CONTAINER : o->labels.order[i]] = true;
	u.v.inverted = o->reverse;
	if (!query) {
		int fd = 0;
		const char *name = o->input ? o->input : "<stdin>";
		if (o->input && strcmp(o->input, "-") &&
		    (fd = open(o->input, O_RDONLY | O_CLOEXEC)) < 0)
			snprintf(u.d.err, sizeof(u.d.err), "%s: %s", o->input,
				 strerror(errno));
		else
			tui_data_read_stream(&u.d, fd, name);
		if (fd > 0)
			close(fd);
	}

	SCREEN *scr = newterm(NULL, tty, tty);
	if (!scr) {
		cpa_err("--tui: cannot use the terminal (TERM=%s)",
			getenv("TERM") ? getenv("TERM") : "");
		fclose(tty);
		tui_data_free(&u.d);
		tui_data_free(&u.win);
		tui_data_free(&u.trend);
		return -1;
	}
	set_term(scr);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	colors_init();
	mvprintw(0, 0, "loading...");
	refresh();

	bool readable = history_init(&u);
	window_default(&u);
	timeout(u.follow ? 1000 : -1);
	for (;;) {
		if (u.dirty)
			rebuild(&u);
		draw(&u);
		int ch = getch();
		if (ch == ERR) {
			if (u.follow)
				follow_tick(&u);
			continue;
		}
		if (!key(&u, ch))
			break;
	}
	endwin();
	delscreen(scr);
	fclose(tty);

	tui_model_free(&u.m);
	tui_filter_free(&u.v.filter);
	if (u.v.searching)
		regfree(&u.v.search);
	path_free(&u.sel_path);
	for (size_t i = 0; i < u.nzoom; i++)
		path_free(&u.zoom[i]);
	free(u.zoom);
	for (size_t i = 0; i < u.nrows; i++)
		free(u.rows[i].c);
	free(u.rows);
	free(u.depth);
	tui_data_free(&u.d);
	tui_data_free(&u.win);
	tui_data_free(&u.trend);
	return readable ? 0 : -1;
}
