/* SPDX-License-Identifier: MIT */
/*
 * The terminal UI's state without a terminal (cpa-render/tui/state.c):
 * a stream of known samples read as `cpa-render --tui FILE` reads it,
 * then keys and prompt answers, checking the window, the tree, the
 * selection, the zoom, the labels, the filters, the search and the kind.
 *
 * The stream: 1200 one-second windows from T0; in each, "app" (pid 100)
 * main;work;hot weighs 3 samples and "db" (pid 200) main;serve;idle 1;
 * every tenth second db is also blocked off CPU for 5 ms in main;wait.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "labels.h"
#include "render.h"
#include "symstream.h"
#include "tui.h"
#include "unit.h"

#define T0 (1767261600ull * CPA_NSEC_PER_SEC)	/* 2026-01-01 10:00 UTC */
#define SECONDS 1200

static void sample(struct cpa_symwriter *sw, uint64_t t, unsigned kind,
		   uint32_t pid, const char *comm, const char *const *frames,
		   unsigned n, uint64_t weight)
{
	uint32_t ids[8];
	for (unsigned i = 0; i < n; i++)
		ids[i] = cpa_symw_cstr(sw, frames[i]);
	struct cpa_sample s = {
		.time_ns = t, .weight = weight, .pid = pid, .tid = pid,
		.kind = (uint16_t)kind, .stack_id = cpa_symw_stack(sw, ids, n),
		.comm_id = cpa_symw_cstr(sw, comm),
		.thread_id = cpa_symw_cstr(sw, comm),
	};
	cpa_write_sample(&sw->w, &s);
}

/* The stream, in a memory file; its fd. */
static int make_stream(void)
{
	static const char *const app[] = { "main", "work", "hot" };
	static const char *const db[] = { "main", "serve", "idle" };
	static const char *const wait[] = { "main", "wait" };
	struct cpa_symwriter sw;
	int fd = memfd_create("tui-test", 0);

	if (fd < 0 || cpa_symw_init(&sw, fd) < 0)
		return -1;
	cpa_write_meta(&sw.w, CPA_META_FREQUENCY, "100");
	cpa_write_meta(&sw.w, CPA_META_INTERVAL_NS, "1000000000");
	cpa_write_meta(&sw.w, CPA_META_CPUS, "2");
	for (uint64_t i = 0; i < SECONDS; i++) {
		uint64_t t = T0 + i * CPA_NSEC_PER_SEC;
		sample(&sw, t, CPA_KIND_ONCPU, 100, "app", app, 3, 3);
		sample(&sw, t, CPA_KIND_ONCPU, 200, "db", db, 3, 1);
		if (i % 10 == 0)
			sample(&sw, t, CPA_KIND_OFFCPU_BLOCKED, 200, "db", wait,
			       2, 5000000);
	}
	if (cpa_write_end(&sw.w) < 0 || cpa_writer_close(&sw.w) < 0)
		return -1;
	cpa_symw_free(&sw);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* The child of node named name, or TREE_NONE. */
static uint32_t child(const struct tree *t, uint32_t node, const char *name)
{
	for (uint32_t k = t->kid_off[node]; k < t->kid_off[node + 1]; k++) {
		uint32_t len, c = t->kids[k];
		const char *s = tree_name_str(t, t->nodes[c].name, &len);
		if (len == strlen(name) && !memcmp(s, name, len))
			return c;
	}
	return TREE_NONE;
}

static const char *name_of(const struct tree *t, uint32_t node)
{
	static char buf[128];
	uint32_t len;
	const char *s = node == TREE_ROOT ? "all"
			: tree_name_str(t, t->nodes[node].name, &len);
	if (node == TREE_ROOT)
		len = 3;
	snprintf(buf, sizeof(buf), "%.*s", (int)len, s);
	return buf;
}

/* What the screen does after each key: rebuild when the state asks,
 * then lay out the flame graph, 100 columns by 30 rows. */
static enum tui_action press(struct tui_state *u, int key)
{
	enum tui_action a = tui_state_key(u, key);
	if (u->dirty)
		tui_state_rebuild(u);
	tui_state_layout(u, u->cols, 30);
	return a;
}

static void settle(struct tui_state *u)
{
	if (u->dirty)
		tui_state_rebuild(u);
	tui_state_layout(u, u->cols, 30);
}

static uint64_t total(const struct tui_state *u)
{
	return u->m.tree.total[TREE_ROOT];
}

int main(void)
{
	struct render_opts o = { .unit = -1, .kind = -1 };
	struct tui_state u;
	char path[64];
	int fd = make_stream();

	CHECK(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	o.input = path;
	cpa_labels_default(&o.labels);		/* comm, as cpa-render's */
	tui_state_init(&u, &o, NULL);
	u.cols = 100;
	CHECK_STR(u.d.err, "");
	CHECK(u.d.n == 2 * SECONDS + SECONDS / 10);
	/* the stream's meta */
	CHECK(u.d.period_ns == CPA_NSEC_PER_SEC / 100);
	CHECK(u.d.interval_ns == CPA_NSEC_PER_SEC);
	CHECK(u.d.ncpu == 2);

	/* the history is the stream's; the window its last 10 minutes */
	CHECK(tui_state_history(&u));
	CHECK(u.hist_from == T0);
	CHECK(u.hist_to == T0 + SECONDS * CPA_NSEC_PER_SEC);
	tui_window_default(&u);
	settle(&u);
	CHECK(u.v.win_from == T0 + 600 * CPA_NSEC_PER_SEC);
	CHECK(u.v.win_span == 600 * CPA_NSEC_PER_SEC);
	CHECK(u.v.kind == CPA_KIND_ONCPU);
	CHECK(total(&u) == 600 * 4);
	const struct tree *t = &u.m.tree;
	uint32_t app = child(t, TREE_ROOT, "app");
	CHECK(app != TREE_NONE);
	CHECK(app != TREE_NONE && t->total[app] == 600 * 3);
	CHECK(child(t, TREE_ROOT, "db") != TREE_NONE);
	/* laid out: the root full width, app three quarters of the row */
	CHECK(u.nrows >= 5);
	CHECK(u.rows[0].n == 1 && u.rows[0].c[0].c0 == 0 &&
	      u.rows[0].c[0].c1 == 100);
	CHECK(u.rows[1].n == 2);

	/* s doubles the span (to the whole history), S halves it, T and t
	 * move by it, 0 shows all, 9 the default again */
	press(&u, 's');
	CHECK(u.v.win_span == SECONDS * CPA_NSEC_PER_SEC);
	CHECK(u.v.win_from == T0);
	CHECK(total(&u) == SECONDS * 4);
	press(&u, 'S');
	CHECK(u.v.win_span == 600 * CPA_NSEC_PER_SEC);
	CHECK(u.v.win_from == T0);
	press(&u, 'S');
	press(&u, 't');
	CHECK(u.v.win_from == T0 + 300 * CPA_NSEC_PER_SEC);
	CHECK(total(&u) == 300 * 4);
	press(&u, 't');
	press(&u, 't');
	press(&u, 't');	/* not past the end */
	CHECK(u.v.win_from == T0 + 900 * CPA_NSEC_PER_SEC);
	press(&u, 'T');
	CHECK(u.v.win_from == T0 + 600 * CPA_NSEC_PER_SEC);
	press(&u, '0');
	CHECK(u.v.win_from == T0 && u.v.win_span == SECONDS * CPA_NSEC_PER_SEC);
	press(&u, '9');
	CHECK(u.v.win_from == T0 + 600 * CPA_NSEC_PER_SEC);

	/* J jumps to a time, R sets the window; a bad answer says so */
	CHECK(press(&u, 'J') == TUI_ASK_JUMP);
	tui_state_jump(&u, "@1767261660");	/* T0 + 60 s */
	settle(&u);
	CHECK(u.v.win_from == T0 + 60 * CPA_NSEC_PER_SEC);
	CHECK(press(&u, 'R') == TUI_ASK_RANGE);
	tui_state_range(&u, "@1767261700 @1767261710");
	settle(&u);
	CHECK(u.v.win_from == T0 + 100 * CPA_NSEC_PER_SEC);
	CHECK(u.v.win_span == 10 * CPA_NSEC_PER_SEC);
	CHECK(total(&u) == 10 * 4);
	tui_state_range(&u, "10:00");
	CHECK(strstr(u.msg, "expected FROM TO") != NULL);
	CHECK(u.v.win_span == 10 * CPA_NSEC_PER_SEC);
	press(&u, '9');

	/* the selection: down to the widest callee, Enter zooms into it,
	 * Esc back out; up from the zoom root stays */
	t = &u.m.tree;
	press(&u, 'j');
	CHECK_STR(name_of(t, u.sel), "app");
	press(&u, 'j');
	CHECK_STR(name_of(t, u.sel), "main");
	press(&u, '\n');
	CHECK_STR(name_of(t, u.root), "main");
	CHECK(u.nzoom == 1);
	press(&u, 'k');
	CHECK_STR(name_of(t, u.sel), "main");
	press(&u, 'j');
	CHECK_STR(name_of(t, u.sel), "work");
	/* the zoom root's callers take the whole row; it is drawn full width */
	uint32_t d = u.depth[u.root];
	CHECK(d < u.nrows && u.rows[d].n == 1 && u.rows[d].c[0].c1 == 100);
	press(&u, 27);
	CHECK(u.root == TREE_ROOT && u.nzoom == 0);
	press(&u, 'h');	/* left along the row: nothing left of work */
	CHECK_STR(name_of(t, u.sel), "work");

	/* a rebuild keeps the selection by its names */
	press(&u, 't');
	t = &u.m.tree;
	CHECK_STR(name_of(t, u.sel), "work");
	press(&u, '9');

	/* P: the pid label under the comm */
	press(&u, 'P');
	t = &u.m.tree;
	CHECK(strstr(u.msg, "pid label on") != NULL);
	app = child(t, TREE_ROOT, "app");
	CHECK(app != TREE_NONE && child(t, app, "[pid 100]") != TREE_NONE);
	press(&u, 'P');
	t = &u.m.tree;
	app = child(t, TREE_ROOT, "app");
	CHECK(app != TREE_NONE && child(t, app, "main") != TREE_NONE);
	/* M: no comm label, the frames at the root */
	press(&u, 'M');
	t = &u.m.tree;
	CHECK(child(t, TREE_ROOT, "main") != TREE_NONE);
	CHECK(child(t, TREE_ROOT, "app") == TREE_NONE);
	press(&u, 'M');

	/* I: the callee view, leaves at the root */
	press(&u, 'I');
	t = &u.m.tree;
	CHECK(child(t, TREE_ROOT, "hot") != TREE_NONE);
	CHECK(child(t, TREE_ROOT, "idle") != TREE_NONE);
	press(&u, 'I');

	/* filters: pid 200 alone, then db negated, then unset */
	CHECK(press(&u, ':') == TUI_ASK_FILTER);
	tui_state_command(&u, "pid 200");
	settle(&u);
	CHECK(total(&u) == 600);
	tui_state_command(&u, "commv db");
	settle(&u);
	CHECK(total(&u) == 0);	/* pid 200 and not db: nothing */
	tui_state_command(&u, "unset pid");
	settle(&u);
	CHECK(total(&u) == 600 * 3);
	tui_state_command(&u, "unset");
	settle(&u);
	CHECK(total(&u) == 600 * 4);
	tui_state_command(&u, "pid x");
	CHECK(u.msg[0] != '\0');
	CHECK(total(&u) == 600 * 4);

	/* search: hot is three quarters of the view */
	CHECK(press(&u, '/') == TUI_ASK_SEARCH);
	tui_state_search(&u, "^hot$");
	CHECK_STR(u.msg, "matched 75.0%");
	CHECK(tui_search_match(&u, "hot", 3));
	CHECK(!tui_search_match(&u, "idle", 4));
	tui_state_search(&u, "(");
	CHECK(strstr(u.msg, "search:") != NULL);
	CHECK(!u.v.searching);

	/* e: the next kind the stream has; :kind NAME the same */
	press(&u, 'e');
	CHECK(u.v.kind == CPA_KIND_OFFCPU_BLOCKED);
	CHECK(total(&u) == 60 * 5000000ull);
	tui_state_command(&u, "kind oncpu");
	settle(&u);
	CHECK(u.v.kind == CPA_KIND_ONCPU && total(&u) == 600 * 4);
	tui_state_command(&u, "kind nothing");
	CHECK(strstr(u.msg, "no event kind 'nothing'") != NULL);

	/* an overlay takes the next key; q quits */
	press(&u, '?');
	CHECK(u.overlay == OVERLAY_HELP);
	CHECK(press(&u, 'x') == TUI_NONE);
	CHECK(u.overlay == OVERLAY_NONE);
	CHECK(press(&u, 'q') == TUI_QUIT);

	tui_state_free(&u);
	close(fd);
	return unit_done("tui_test");
}
