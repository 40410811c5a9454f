/* SPDX-License-Identifier: MIT */
/*
 * cpa-render --tui: browse a stretch of history in the terminal. The
 * samples come from cpa-query's time-stamped stream, either one stream
 * given as input or a query command the UI runs for each range it needs
 * (data.c); the trend and the flame graph of the window are computed
 * from the samples kept in memory (model.c); the window, the zoom, the
 * filters and what each key does are the state (state.c), which screen.c
 * draws with ncurses, keys read from /dev/tty. Only screen.c needs a
 * terminal, and only it is left out of a build without ncurses.
 */
#ifndef CPA_RENDER_TUI_H
#define CPA_RENDER_TUI_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpuset.h"
#include "intern.h"
#include "labels.h"
#include "symstream.h"
#include "tree.h"

/* One stored sample: a window of one label set and stack. */
struct tui_sample {
	uint64_t time_ns;
	uint64_t weight;
	uint32_t ls;		/* label set id */
	uint32_t stack;		/* id in tui_data.stacks */
};

/* What tells samples apart besides their stack, as ids. */
enum { LS_KIND, LS_PID, LS_TID, LS_CPU, LS_COMM, LS_THREAD, LS_CONTAINER,
       LS_ENV, LS_FREE, LS_N };

struct tui_span {
	uint64_t from, to;
};

struct tui_data {
	char **query;		/* the query command, NULL-terminated; NULL
				 * when the samples came from one stream */
	/* Strings are interned once and kept in dict under the same ids,
	 * so lib/format/labels.c names the root labels. */
	struct cpa_strtab *strs;
	struct cpa_dict dict;
	struct cpa_stacktab *stacks;	/* frames as string ids */
	struct cpa_stacktab *labelsets;	/* LS_N words each */
	uint8_t *stack_flags;		/* per stack: STACK_* */
	size_t cap_stack_flags;
	struct tui_sample *s;
	size_t n, cap;
	struct tui_span *loaded;	/* ranges fetched, sorted, disjoint */
	size_t nloaded, cap_loaded;
	uint64_t first_ns, end_ns;	/* the history: what may be shown */
	uint64_t interval_ns;		/* of the store's windows */
	uint64_t period_ns;		/* on-CPU sampling period, 0 unknown */
	unsigned ncpu;			/* the host's CPUs */
	uint32_t kinds;			/* bit per event kind seen */
	char **meta;			/* "key value" of the stream's meta,
					 * each key once, for the c screen */
	size_t nmeta;
	char err[512];			/* the last failure, for the screen */
	int pending_pid, pending_out, pending_err;	/* sums asked for */
};

#define STACK_KNOWN 1
#define STACK_KERNEL_LEAF 2

/* data.c */
void tui_data_init(struct tui_data *d, char **query);
void tui_data_free(struct tui_data *d);
/* Reads a whole stream from fd into the samples. 0, or -1 with d->err. */
int tui_data_read_stream(struct tui_data *d, int fd, const char *name);
/* The store's range (query --list) into first_ns/end_ns. 0, 1 when the
 * store holds nothing, -1 with d->err. */
int tui_data_extent(struct tui_data *d);
/* Makes sure [from, to) is loaded, running the query for what is not.
 * 0, or -1 with d->err. */
int tui_data_need(struct tui_data *d, uint64_t from, uint64_t to);
/* Replaces everything held with cpa-query's sums of [from, to) per
 * every_ns, label set of labels (as cpa-query --labels takes them) and
 * stack, its frames as cpa-query --stacks says (NULL all, "side" only
 * user or kernel leaf, "kernel" its kernel frames): what a long range
 * shows, at a cost that does not grow with its samples. prune, when not 0,
 * cuts frames narrower than 1/prune of their kind (cpa-query --prune),
 * with callee in the callee view's tree. start runs the
 * query, finish reads its answer, so two queries run side by side. 0, or
 * -1 with d->err. */
int tui_data_sums_start(struct tui_data *d, uint64_t from, uint64_t to,
			uint64_t every_ns, const char *labels,
			const char *stacks, uint32_t prune, bool callee);
int tui_data_sums_finish(struct tui_data *d);
/* New windows after the newest loaded (--follow). Number of samples
 * added, or -1 with d->err. */
long tui_data_follow(struct tui_data *d);
/* Label set words of id. */
const uint32_t *tui_data_labelset(const struct tui_data *d, uint32_t ls);
bool tui_data_kernel_leaf(struct tui_data *d, uint32_t stack);

/* Filters of the ':' prompt. */
enum tui_filter_field { F_PID, F_COMM, F_CPU, F_CONTAINER, F_ENV, F_N };

struct tui_filter {
	bool set[F_N], negate[F_N];
	char *text[F_N];		/* as typed, for the status line */
	uint32_t *pids;
	size_t npids;
	struct cpa_cpuset cpus;
};

/* The view: everything the keys change. */
struct tui_view {
	uint64_t win_from, win_span;	/* the window */
	int kind;			/* event kind shown */
	bool label[CPA_LABELS_MAX + 1];	/* by enum cpa_label */
	bool kernel_only;
	bool inverted;			/* callee view: leaves at the root */
	bool addr_merged;		/* X: module+0xOFF as module+<...> */
	bool irq_cpu_merged;		/* U: IRQ-off gaps not parted by CPU */
	struct tui_filter filter;
	regex_t search;
	bool searching;
	char *search_text;
};

/* The flame graph of the window and the trend around it. */
struct tui_model {
	struct tree tree;
	bool have_tree;
	uint64_t total;			/* all samples of the kind in the
					 * window, before filters */
	uint8_t *verdict;		/* per label set: 1 out, 2 in */
	uint64_t *freed;		/* per node: frees of signed kinds */
	size_t cap_freed;
	size_t cap_verdict;
	int filter_gen, verdict_gen;
	/* trend: per column of the chart */
	uint64_t chart_from, chart_to;
	double *user, *sys;
	unsigned ncols;
};

/* model.c */
/* Parses one ':' command into f. 0, or -1 with err. */
int tui_filter_command(struct tui_filter *f, const char *cmd, char *err,
		       size_t errlen);
void tui_filter_free(struct tui_filter *f);
/* "pid 12 commv cat" */
void tui_filter_describe(const struct tui_filter *f, char *buf, size_t len);
/* Rebuilds the flame graph of the window, and the trend of
 * [chart_from, chart_to) in ncols columns. When trend is another data set
 * than d, d holds the window's sums alone (all of it is drawn) and trend
 * the chart's. */
void tui_model_build(struct tui_model *m, struct tui_data *d,
		     struct tui_data *trend, const struct tui_view *v,
		     uint64_t chart_from, uint64_t chart_to, unsigned ncols);
void tui_model_free(struct tui_model *m);
/* IRQ-off gaps shown under their CPU. */
bool tui_irq_per_cpu(const struct tui_view *v);

/* ---- state.c: the state and the keys ---------------------------------- */

/* A frame path by names, so the selection and the zoom outlive a rebuild
 * of the tree (new filters, labels, window). */
struct name_path {
	char **names;
	uint32_t n;
};

/* A frame laid out on a row (its depth), columns [c0, c1). */
struct tui_cell {
	uint32_t node;
	int c0, c1;
};

struct tui_row {
	struct tui_cell *c;
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

struct render_opts;

struct tui_state {
	const struct render_opts *o;
	struct tui_data d;
	struct tui_data win, trend;	/* sums for a long chart */
	struct sums_key win_key, trend_key;
	struct tui_view v;
	struct tui_model m;
	uint64_t hist_from, hist_to;	/* the history the chart may show */
	int chart_h;			/* rows of trend */
	int cols;			/* the screen's width */
	bool follow, dirty, empty_store;
	enum { OVERLAY_NONE, OVERLAY_HELP, OVERLAY_CONF, OVERLAY_FILTERS }
		overlay;			/* ?, c, o: closed by any key */
	uint32_t sel, root;		/* selected frame, zoom root */
	struct name_path sel_path;
	struct name_path *zoom;		/* zoom stack, outermost first */
	size_t nzoom;
	int yoff;			/* first depth drawn */
	struct tui_row *rows;		/* the layout, by depth */
	size_t nrows;
	uint32_t *depth;		/* per node */
	double build_ms;
	uint32_t detail;		/* --prune the window's sums need
					 * for the zoom and filters shown */
	char msg[256];			/* the last key's answer */
};

/* Keys beyond characters, as the screen hands them over. */
enum {
	TUI_KEY_LEFT = 0x10000, TUI_KEY_RIGHT, TUI_KEY_UP, TUI_KEY_DOWN,
	TUI_KEY_ENTER, TUI_KEY_RESIZE,
};

/* What a key wants of the screen. */
enum tui_action {
	TUI_NONE,		/* done: draw the state */
	TUI_QUIT,
	TUI_ASK_JUMP,		/* a time: tui_state_jump */
	TUI_ASK_RANGE,		/* FROM TO: tui_state_range */
	TUI_ASK_FILTER,		/* a ':' command: tui_state_command */
	TUI_ASK_SEARCH,		/* a regex: tui_state_search */
};

/* The data of the query (NULL: o->input's one stream, read now). */
void tui_state_init(struct tui_state *u, const struct render_opts *o,
		    char **query);
void tui_state_free(struct tui_state *u);
/* The history from the command line and the store's own range. False
 * when the store could not be read: the error is in d.err. */
bool tui_state_history(struct tui_state *u);
void tui_window_set(struct tui_state *u, uint64_t from, uint64_t span);
/* CPA's default: the last 10 minutes of the history. */
void tui_window_default(struct tui_state *u);
/* The tree and the trend of the view, after a change (u->dirty). */
void tui_state_rebuild(struct tui_state *u);
/* The rows of the flame graph, width columns and height rows of it. */
void tui_state_layout(struct tui_state *u, int width, int height);
enum tui_action tui_state_key(struct tui_state *u, int key);
void tui_state_jump(struct tui_state *u, const char *text);
void tui_state_range(struct tui_state *u, const char *text);
void tui_state_command(struct tui_state *u, const char *text);
void tui_state_search(struct tui_state *u, const char *text);
/* --follow: the windows committed since; the window follows the end. */
void tui_state_follow(struct tui_state *u);
bool tui_search_match(const struct tui_state *u, const char *s, uint32_t len);
void tui_path_free(struct name_path *p);
/* "10:05:00", with date "2026-11-30 10:05:00"; "10m", "1h30m", "500ms";
 * "1.50", "12.3K"; a weight over ns as a rate of the kind's unit */
void tui_fmt_time(uint64_t ns, char *buf, size_t len, bool date);
void tui_fmt_span(uint64_t ns, char *buf, size_t len);
void tui_fmt_rate(double r, char *buf, size_t len);
double tui_rate_of(const struct tui_state *u, double weight, double ns);
const char *tui_rate_unit(const struct tui_state *u);

/* screen.c */
int tui_run(const struct render_opts *o, char **query);

#endif
