/* SPDX-License-Identifier: MIT */
/*
 * The terminal UI's state and what the keys do to it, apart from the
 * screen (screen.c draws it with ncurses): the history and the window in
 * it, the event kind, the root labels, the filters and the search, the
 * selection and the zoom by frame names (so they outlive a rebuild of
 * the tree), and the layout of the flame graph in columns. The rebuild
 * asks data.c for the samples and model.c for the tree and the trend.
 * Nothing here needs a terminal: tests/unit/tui_test.c drives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <regex.h>
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

/* ---- time and numbers ------------------------------------------------- */

/* "10:05:00" in local time, or "2026-11-30 10:05:00" with date */
void tui_fmt_time(uint64_t ns, char *buf, size_t len, bool date)
{
	char full[40];
	cpa_format_time(ns, full, sizeof(full));
	full[19] = '\0';
	snprintf(buf, len, "%s", date ? full : full + 11);
}

/* "10m", "1h30m", "45s", "500ms" */
void tui_fmt_span(uint64_t ns, char *buf, size_t len)
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
double tui_rate_of(const struct tui_state *u, double weight, double ns)
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

const char *tui_rate_unit(const struct tui_state *u)
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
void tui_fmt_rate(double r, char *buf, size_t len)
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

void tui_path_free(struct name_path *p)
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
	tui_path_free(p);
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

static uint64_t span_clamp(const struct tui_state *u, uint64_t span)
{
	uint64_t len = u->hist_to - u->hist_from;
	if (span < u->d.interval_ns)
		span = u->d.interval_ns;
	if (len && span > len)
		span = len;
	return span;
}

void tui_window_set(struct tui_state *u, uint64_t from, uint64_t span)
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

void tui_window_default(struct tui_state *u)
{
	uint64_t span = span_clamp(u, DEFAULT_SPAN);
	tui_window_set(u, u->hist_to > span ? u->hist_to - span : 0, span);
}

/* The chart shows the window with a span of history on either side. */
static void chart_range(const struct tui_state *u, uint64_t *from, uint64_t *to)
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

static void pick_kind(struct tui_state *u)
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
static void sums_labels(const struct tui_state *u, bool with_roots, char *buf,
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
static bool sums_start(struct tui_state *u, struct tui_data *d, struct sums_key *have,
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

static void sums_finish(struct tui_state *u, struct tui_data *d, struct sums_key *have)
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

static uint64_t window_prune(const struct tui_state *u)
{
	uint32_t n = 2 * (uint32_t)(u->cols > 0 ? u->cols : 80);
	if (u->detail == UINT32_MAX)
		return 0;
	return u->detail > n ? u->detail : n;
}

/* After a build from cut sums: true when the view shown needs finer
 * sums (u->detail raised). */
static bool detail_short(struct tui_state *u)
{
	const struct tree *t = &u->m.tree;
	if (!u->win_key.prune || !u->m.have_tree || !t->total[u->root])
		return false;
	double need = 2.0 * (u->cols > 0 ? u->cols : 80) * (double)u->m.total /
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
static bool rebuild_from_sums(struct tui_state *u, uint64_t *cf, uint64_t *ct,
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
static bool rebuild_once(struct tui_state *u)
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

void tui_state_rebuild(struct tui_state *u)
{
	/* once more when the cut sums lack the detail of the zoom */
	if (rebuild_once(u) && detail_short(u))
		rebuild_once(u);
}

bool tui_search_match(const struct tui_state *u, const char *s, uint32_t len)
{
	if (!u->v.searching)
		return false;
	char buf[512];
	snprintf(buf, sizeof(buf), "%.*s", (int)len, s);
	return regexec(&u->v.search, buf, 0, NULL, 0) == 0;
}

static void rows_reset(struct tui_state *u)
{
	for (size_t i = 0; i < u->nrows; i++)
		u->rows[i].n = 0;
}

static void row_add(struct tui_state *u, uint32_t depth, uint32_t node, int c0,
		    int c1)
{
	CPA_GROW_ZERO(u->rows, u->nrows, (size_t)depth + 1);
	struct tui_row *r = &u->rows[depth];
	CPA_GROW(r->c, r->cap, r->n + 1);
	r->c[r->n++] = (struct tui_cell){ node, c0, c1 };
}

/* The frames on screen, a row per depth (flame graph rows of width
 * columns, height of them from yoff): the zoom root's callers full
 * width, then its callees to scale. The selection stays on screen. */
static void lay(struct tui_state *u, uint32_t node, uint32_t depth, double x0,
		double w)
{
	const struct tree *t = &u->m.tree;
	int c0 = (int)lround(x0), c1 = (int)lround(x0 + w);
	if (c1 <= c0)
		return;
	row_add(u, depth, node, c0, c1);
	uint64_t tot = t->total[node];
	if (!tot)
		return;
	double x = x0;
	for (uint32_t k = t->kid_off[node]; k < t->kid_off[node + 1]; k++) {
		uint32_t c = t->kids[k];
		double cw = w * (double)t->total[c] / (double)tot;
		lay(u, c, depth + 1, x, cw);
		x += cw;
	}
}

void tui_state_layout(struct tui_state *u, int width, int height)
{
	const struct tree *t = &u->m.tree;

	rows_reset(u);
	if (height <= 0 || t->total[TREE_ROOT] == 0)
		return;
	int sd = (int)u->depth[u->sel];
	if (sd < u->yoff)
		u->yoff = sd;
	if (sd >= u->yoff + height)
		u->yoff = sd - height + 1;
	uint32_t chain[CPA_MAX_STACK_DEPTH + 8];
	uint32_t n = 0;
	for (uint32_t x = u->root; x != TREE_NONE && n < sizeof(chain) /
	     sizeof(*chain); x = t->nodes[x].parent)
		chain[n++] = x;
	for (uint32_t i = n; i-- > 1;)
		row_add(u, u->depth[chain[i]], chain[i], 0, width);
	lay(u, u->root, u->depth[u->root], 0, width);
}

/* ---- keys ------------------------------------------------------------- */

static void select_node(struct tui_state *u, uint32_t node)
{
	u->sel = node;
	path_save(&u->m.tree, node, &u->sel_path);
}

/* The frame next to the selection on its row, dir -1 or 1. */
static void move_along(struct tui_state *u, int dir)
{
	uint32_t d = u->depth[u->sel];
	if (d >= u->nrows)
		return;
	struct tui_row *r = &u->rows[d];
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
static void move_down(struct tui_state *u)
{
	uint32_t d = u->depth[u->sel] + 1, best = TREE_NONE;
	if (d >= u->nrows)
		return;
	const struct tree *t = &u->m.tree;
	struct tui_row *r = &u->rows[d];
	for (size_t i = 0; i < r->n; i++)
		if (t->nodes[r->c[i].node].parent == u->sel &&
		    (best == TREE_NONE ||
		     t->total[r->c[i].node] > t->total[best]))
			best = r->c[i].node;
	if (best != TREE_NONE)
		select_node(u, best);
}

static void toggle_label(struct tui_state *u, enum cpa_label l, const char *name)
{
	u->v.label[l] = !u->v.label[l];
	snprintf(u->msg, sizeof(u->msg), "%s label %s", name,
		 u->v.label[l] ? "on" : "off");
	u->dirty = true;
}

/* J and R's answers: a time, or FROM TO. */
static void parse_time(struct tui_state *u, const char *text, bool range)
{
	char buf[128], err[128];
	snprintf(buf, sizeof(buf), "%s", text);
	if (!buf[0])
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
		tui_window_set(u, from, to - from);
	} else {
		tui_window_set(u, from, u->v.win_span);
	}
}

void tui_state_command(struct tui_state *u, const char *text)
{
	char err[256];
	if (!text[0])
		return;
	const char *c = text;
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

void tui_state_search(struct tui_state *u, const char *buf)
{
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
		if (!tui_search_match(u, s, len))
			continue;
		bool under = false;	/* count a matching caller only */
		for (uint32_t p = t->nodes[i].parent; p != TREE_ROOT && !under;
		     p = t->nodes[p].parent) {
			const char *ps = tree_name_str(t, t->nodes[p].name, &len);
			under = tui_search_match(u, ps, len);
		}
		if (!under)
			matched += t->total[i];
	}
	snprintf(u->msg, sizeof(u->msg), "matched %.1f%%",
		 t->total[TREE_ROOT] ? 100.0 * (double)matched /
		 (double)t->total[TREE_ROOT] : 0);
}

static void next_kind(struct tui_state *u)
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

enum tui_action tui_state_key(struct tui_state *u, int ch)
{
	if (u->overlay != OVERLAY_NONE) {
		u->overlay = OVERLAY_NONE;
		return ch == 'q' ? TUI_QUIT : TUI_NONE;
	}
	switch (ch) {
	case 'q': return TUI_QUIT;
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
	case 't': tui_window_set(u, u->v.win_from + u->v.win_span, u->v.win_span);
		break;
	case 'T': tui_window_set(u, u->v.win_from > u->v.win_span
			     ? u->v.win_from - u->v.win_span : 0,
			     u->v.win_span);
		break;
	case 's': tui_window_set(u, u->v.win_from, u->v.win_span * 2); break;
	case 'S': tui_window_set(u, u->v.win_from, u->v.win_span / 2); break;
	case 'J': return TUI_ASK_JUMP;
	case 'R': return TUI_ASK_RANGE;
	case '0': tui_window_set(u, u->hist_from, u->hist_to - u->hist_from);
		break;
	case '9': tui_window_default(u); break;
	case 'g': u->chart_h = u->chart_h == 8 ? 14 : u->chart_h == 14 ? 4
			       : u->chart_h == 4 ? 0 : 8;
		break;
	case TUI_KEY_LEFT: case 'h': case 'a': move_along(u, -1); break;
	case TUI_KEY_RIGHT: case 'l': case 'd': move_along(u, 1); break;
	case TUI_KEY_UP: case 'k':
		if (u->sel != TREE_ROOT && u->sel != u->root)
			select_node(u, u->m.tree.nodes[u->sel].parent);
		break;
	case TUI_KEY_DOWN: case 'j': move_down(u); break;
	case '\n': case '\r': case TUI_KEY_ENTER:
		u->zoom = cpa_realloc(u->zoom, (u->nzoom + 1) *
				      sizeof(*u->zoom));
		u->zoom[u->nzoom] = (struct name_path){ 0 };
		path_save(&u->m.tree, u->sel, &u->zoom[u->nzoom++]);
		u->root = u->sel;
		u->dirty = detail_short(u);
		break;
	case 27:
		if (u->nzoom) {
			tui_path_free(&u->zoom[--u->nzoom]);
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
	case ':': return TUI_ASK_FILTER;
	case '/': return TUI_ASK_SEARCH;
	case TUI_KEY_RESIZE: u->dirty = true; break;
	default: break;
	}
	return TUI_NONE;
}

void tui_state_jump(struct tui_state *u, const char *text)
{
	parse_time(u, text, false);
}

void tui_state_range(struct tui_state *u, const char *text)
{
	parse_time(u, text, true);
}

/* The history from the command line and the store's own range. False
 * when the store could not be read: the error is on the screen. */
bool tui_state_history(struct tui_state *u)
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

void tui_state_follow(struct tui_state *u)
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
		tui_window_set(u, u->hist_to > u->v.win_span
			   ? u->hist_to - u->v.win_span : 0, u->v.win_span);
	u->dirty = true;
}


void tui_state_init(struct tui_state *u, const struct render_opts *o,
		    char **query)
{
	memset(u, 0, sizeof(*u));
	u->o = o;
	u->chart_h = 8;
	u->follow = o->follow;
	tui_data_init(&u->d, query);
	tui_data_init(&u->win, query);
	tui_data_init(&u->trend, query);
	u->v.kind = -1;
	for (unsigned i = 0; i < o->labels.n; i++)
		u->v.label[o->labels.order[i] == CPA_LABEL_TID ? CPA_LABEL_THREAD
			   : o->labels.order[i] == CPA_LABEL_POD ||
			     o->labels.order[i] == CPA_LABEL_CGROUP
			   ? CPA_LABEL_CONTAINER : o->labels.order[i]] = true;
	u->v.inverted = o->reverse;
	if (!query) {
		int fd = 0;
		const char *name = o->input ? o->input : "<stdin>";
		if (o->input && strcmp(o->input, "-") &&
		    (fd = open(o->input, O_RDONLY | O_CLOEXEC)) < 0)
			snprintf(u->d.err, sizeof(u->d.err), "%s: %s", o->input,
				 strerror(errno));
		else
			tui_data_read_stream(&u->d, fd, name);
		if (fd > 0)
			close(fd);
	}
}

void tui_state_free(struct tui_state *u)
{
	tui_model_free(&u->m);
	tui_filter_free(&u->v.filter);
	if (u->v.searching)
		regfree(&u->v.search);
	tui_path_free(&u->sel_path);
	for (size_t i = 0; i < u->nzoom; i++)
		tui_path_free(&u->zoom[i]);
	free(u->zoom);
	for (size_t i = 0; i < u->nrows; i++)
		free(u->rows[i].c);
	free(u->rows);
	free(u->depth);
	tui_data_free(&u->d);
	tui_data_free(&u->win);
	tui_data_free(&u->trend);
	memset(u, 0, sizeof(*u));
}
