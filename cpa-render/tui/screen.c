/* SPDX-License-Identifier: MIT */
/*
 * The terminal UI's screen, after CPA's cpa_show: a trend of the
 * history around the window (cores per second, user and system apart,
 * the host's CPU count as a guide), the window's flame graph below it
 * drawn top-down as labelled bars, a detail line for the selected frame
 * and a status line. Keys come from /dev/tty, as less reads them, so the
 * stream may arrive on standard input; what they do is state.c's, and
 * this file only draws the state and asks for the lines a key prompts.
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

enum {
	P_USER_A = 1, P_USER_B, P_KERNEL, P_LABEL, P_MATCH, P_OFF_A, P_OFF_B,
	P_MEM_A, P_MEM_B, P_CHART_USER, P_CHART_SYS, P_CHART_WIN, P_ERR,
};

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

static attr_t frame_attr(const struct tui_state *u, const char *s, uint32_t len)
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

/* One frame of the layout, on its row when the row is on screen. */
static void draw_frame(struct tui_state *u, int top, int height,
		       uint32_t node, uint32_t depth, int c0, int c1)
{
	const struct tree *t = &u->m.tree;
	int y = (int)depth - u->yoff;
	if (y < 0 || y >= height)
		return;
	uint32_t len;
	const char *s = node == TREE_ROOT ? "all"
			: tree_name_str(t, t->nodes[node].name, &len);
	if (node == TREE_ROOT)
		len = 3;
	attr_t at = frame_attr(u, s, len);
	if (tui_search_match(u, s, len))
		at = pair(P_MATCH) | A_BOLD;
	if (node == u->sel)
		at |= A_REVERSE | A_BOLD;
	/* the name, cut with ".." when it does not fit; the last column
	 * stays blank to part the bar from the next one */
	int w = c1 - c0, tw = w > 1 ? w - 1 : 1;
	attron(at);
	move(top + y, c0);
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

static void draw_flame(struct tui_state *u, int top, int height)
{
	const struct tree *t = &u->m.tree;

	tui_state_layout(u, COLS, height);
	if (height <= 0)
		return;
	if (t->total[TREE_ROOT] == 0) {
		char a1[40], b1[40];
		tui_fmt_time(u->v.win_from, a1, sizeof(a1), false);
		tui_fmt_time(u->v.win_from + u->v.win_span, b1, sizeof(b1), false);
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
	for (size_t r = 0; r < u->nrows; r++)
		for (size_t i = 0; i < u->rows[r].n; i++) {
			const struct tui_cell *c = &u->rows[r].c[i];
			draw_frame(u, top, height, c->node, (uint32_t)r, c->c0,
				   c->c1);
		}
}

static void draw_chart(struct tui_state *u, int top, int h)
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
		tot[x] = us + sy > 0 ? tui_rate_of(u, us + sy, col_ns * (k1 - k0)) : 0;
		sys[x] = sy > 0 ? tui_rate_of(u, sy, col_ns * (k1 - k0)) : 0;
		if (tot[x] > ymax)
			ymax = tot[x];
	}
	bool cores = cpa_kind_unit((unsigned)u->v.kind) == CPA_UNIT_SAMPLES &&
		     u->d.period_ns;
	ymax = ymax > 1 ? ceil(ymax) : ymax > 0 ? ymax : 1;
	if (cores && ymax < u->d.ncpu)
		ymax = u->d.ncpu;
	char lab[24];
	tui_fmt_rate(ymax, lab, sizeof(lab));
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
	tui_fmt_time(m->chart_from, a, sizeof(a), false);
	tui_fmt_time(m->chart_to, b, sizeof(b), false);
	mvprintw(y + 1, lw, "%s", a);
	mvprintw(y + 1, COLS - (int)strlen(b) - 1, "%s", b);
}

static void draw_detail(struct tui_state *u, int y)
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
	tui_fmt_rate(tui_rate_of(u, (double)w, win_ns), r, sizeof(r));
	uint32_t maxd = 0;
	for (uint32_t i = 0; i < t->n; i++)
		if (u->depth[i] > maxd)
			maxd = u->depth[i];
	snprintf(line, sizeof(line), " %s | View:%.1f%% All:%.2f%% | "
		 "%s%s | D:%u/%u ", val, view, all, r, tui_rate_unit(u),
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

static void draw_status(struct tui_state *u, int y)
{
	char a[40], b[40], w0[40], sp[40], filt[160], labels[64] = "";
	static const char *const lname[] = {
		[CPA_LABEL_COMM] = "comm", [CPA_LABEL_PID] = "pid",
		[CPA_LABEL_THREAD] = "thread", [CPA_LABEL_CONTAINER] = "container",
		[CPA_LABEL_ENV] = "env", [CPA_LABEL_CPU] = "cpu",
	};
	/* dates only when the history is longer than a day */
	bool days = u->hist_to - u->hist_from >= 86400 * CPA_NSEC_PER_SEC;
	tui_fmt_time(u->hist_from, a, sizeof(a), days);
	tui_fmt_time(u->hist_to, b, sizeof(b), days);
	tui_fmt_time(u->v.win_from, w0, sizeof(w0), false);
	tui_fmt_span(u->v.win_span, sp, sizeof(sp));
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
static void draw_conf(const struct tui_state *u)
{
	const struct tui_data *d = u->d.nmeta ? &u->d : &u->trend;
	char head[4][128], *lines[80];
	int n = 0;
	char a[40], b[40];
	tui_fmt_time(u->hist_from, a, sizeof(a), true);
	tui_fmt_time(u->hist_to, b, sizeof(b), true);
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
static void draw_filters(const struct tui_state *u)
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

static void draw(struct tui_state *u)
{
	erase();
	char a[40], b[40], sp[40];
	tui_fmt_time(u->v.win_from, a, sizeof(a), true);
	tui_fmt_time(u->v.win_from + u->v.win_span, b, sizeof(b), false);
	tui_fmt_span(u->v.win_span, sp, sizeof(sp));
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

/* ---- keys and main loop ---------------------------------------------- */

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

/* ncurses' keys as the state's. */
static int state_key(int ch)
{
	switch (ch) {
	case KEY_LEFT: return TUI_KEY_LEFT;
	case KEY_RIGHT: return TUI_KEY_RIGHT;
	case KEY_UP: return TUI_KEY_UP;
	case KEY_DOWN: return TUI_KEY_DOWN;
	case KEY_ENTER: return TUI_KEY_ENTER;
	case KEY_RESIZE: return TUI_KEY_RESIZE;
	}
	return ch;
}

/* A key, and the line it asks for; false to quit. */
static bool key(struct tui_state *u, int ch)
{
	char buf[256];

	switch (tui_state_key(u, state_key(ch))) {
	case TUI_QUIT:
		return false;
	case TUI_ASK_JUMP:
		if (prompt("jump to: ", buf, 128))
			tui_state_jump(u, buf);
		break;
	case TUI_ASK_RANGE:
		if (prompt("window (FROM TO): ", buf, 128))
			tui_state_range(u, buf);
		break;
	case TUI_ASK_FILTER:
		if (prompt(":", buf, sizeof(buf)))
			tui_state_command(u, buf);
		break;
	case TUI_ASK_SEARCH:
		if (prompt("/", buf, sizeof(buf)))
			tui_state_search(u, buf);
		break;
	case TUI_NONE:
		break;
	}
	return true;
}

int tui_run(const struct render_opts *o, char **query)
{
	struct tui_state u;
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
	tui_state_init(&u, o, query);

	SCREEN *scr = newterm(NULL, tty, tty);
	if (!scr) {
		cpa_err("--tui: cannot use the terminal (TERM=%s)",
			getenv("TERM") ? getenv("TERM") : "");
		fclose(tty);
		tui_state_free(&u);
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

	u.cols = COLS;
	bool readable = tui_state_history(&u);
	tui_window_default(&u);
	timeout(u.follow ? 1000 : -1);
	for (;;) {
		u.cols = COLS;
		if (u.dirty)
			tui_state_rebuild(&u);
		draw(&u);
		int ch = getch();
		if (ch == ERR) {
			if (u.follow)
				tui_state_follow(&u);
			continue;
		}
		u.cols = COLS;
		if (!key(&u, ch))
			break;
	}
	endwin();
	delscreen(scr);
	fclose(tty);
	tui_state_free(&u);
	return readable ? 0 : -1;
}
