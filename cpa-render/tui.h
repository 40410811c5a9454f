/* SPDX-License-Identifier: MIT */
/*
 * cpa-render --tui: browse a stretch of history in the terminal. The
 * samples come from cpa-query's time-stamped stream, either one stream
 * given as input or a query command the UI runs for each range it needs
 * (tui_data.c); the trend and the flame graph of the window are computed
 * from the samples kept in memory (tui_view.c) and drawn with ncurses,
 * keys read from /dev/tty (tui.c).
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

/* tui_data.c */
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

/* tui_view.c */
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

/* tui.c */
struct render_opts;
int tui_run(const struct render_opts *o, char **query);

#endif
