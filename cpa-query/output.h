/* SPDX-License-Identifier: MIT */
/*
 * What cpa-query writes. Folded output (plain, differential, per-window
 * split and pprof) is aggregated by folded line; the stream keeps each
 * window's time; --top sums per function.
 */
#ifndef CPA_QUERY_OUTPUT_H
#define CPA_QUERY_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "intern.h"
#include "labels.h"
#include "map.h"
#include "scan.h"
#include "symstream.h"
#include "topfuncs.h"

/* Lines aggregated by (group, folded line). The group is the column
 * (0 the range, 1 the --diff range) or the start of a --split group. */
struct fold_sink {
	struct sink k;
	const struct cpa_labels *labels;
	uint64_t split_ns;		/* 0: group by column */
	struct qmap seg;		/* (group, ls<<32|stack) -> weight */
	struct qmap lines;		/* (group, line id) -> weight */
	struct qmap freed;		/* (group, line id) -> bytes freed */
	struct cpa_strtab *text;	/* line id -> "frame;...;leaf" */
	uint16_t *kind;			/* line id -> event kind */
	size_t kind_cap;
	uint32_t two_units;		/* a line met in two units, 0 none */
	/* pprof: lines apart by their labels, (label set << 32 | line id) */
	bool pprof;
	struct cpa_stacktab *pp_labels;	/* label value ids in pp_strings */
	struct cpa_strtab *pp_strings;
	bool estimate;			/* a weight was scaled from sampling */
	uint64_t not_held;		/* lines whose frees met their allocs */
	/* per segment: labelset -> the labelset that prints the same */
	const struct cpa_store_dict *d;
	struct cpa_stacktab *proj;	/* label tuple -> group id */
	uint32_t *rep, *group_rep;
	size_t rep_n, group_n;
};

void fold_sink_init(struct fold_sink *s, const struct cpa_labels *labels,
		    uint64_t split_ns);
void fold_sink_free(struct fold_sink *s);
/* Folded text of group 0; with diff, "line baseline range" of both. */
int fold_write(struct fold_sink *s, FILE *out, bool diff);
/* One file per group in dir, named by the group's UTC start. */
int fold_write_split(struct fold_sink *s, const char *dir);
/* A pprof profile of group 0. */
int fold_write_pprof(struct fold_sink *s, int fd, uint64_t period_ns,
		     uint64_t start_ns, uint64_t end_ns);

/* The symbolized stream, one sample per entry, time = window start; or,
 * with every_ns, one sample per group of every_ns, kept labels and stack,
 * time = the group's start, so a long range costs what it shows. */
struct stream_sink {
	struct sink k;
	struct cpa_symwriter w;
	const struct cpa_store_dict *d;	/* of the segment being read */
	uint32_t *str_map, *stk_map;	/* segment id -> output id */
	size_t str_n, stk_n;
	const uint32_t *stk_ids;	/* the segment's stack ids (scan.h) */
	uint32_t stk_ids_n;
	uint32_t *id_map;		/* stack id -> output id */
	size_t id_n;
	uint64_t every_ns;		/* 0: each window as stored */
	uint64_t origin;		/* groups start every_ns from it */
	unsigned keep;			/* bit per enum cpa_label kept */
	bool side;			/* stacks as [kernel]_[k] or [user] */
	bool kernel;			/* stacks as their kernel frames, as
					 * a kernel-only flame graph draws */
	uint64_t group;			/* start of the group in agg */
	struct qmap agg;		/* (group, out ls << 32 | stack) -> w */
	struct agg_add { uint64_t b, h; } *batch;	/* a window's adds */
	size_t batch_cap;
	/* --prune: agg's pairs found by id, not hashed (agg_window); while
	 * rows is set, agg's index holds none of them and their sums are
	 * in the cells, not in agg (cells_settle puts them there) */
	struct agg_row {	/* by out label set: stack -> sum */
		uint64_t *v;
		uint64_t *met;	/* a bit per stack: its pair is in agg */
		size_t cap, met_cap;
	} *rows;
	size_t nrows, ncells;
	struct cpa_stacktab *out_ls;	/* label words of the output */
	uint32_t *ls_map;		/* segment label set -> out_ls id */
	size_t ls_n;
	uint32_t side_stk[2];		/* the two side stacks, 0 unwritten */
	/* --prune: stacks are kept as paths of output string ids, written
	 * only once the group is cut to what is wide enough */
	uint32_t prune;
	bool callee;			/* cut from the leaf end */
	struct cpa_stacktab *paths;
	struct qmap pruned;		/* (group, out ls << 32 | stack) -> w */
};

/* The output label words of an aggregated sample. */
enum { LW_CG_LO, LW_CG_HI, LW_PID, LW_TID, LW_CPU, LW_KIND, LW_FLAGS,
       LW_COMM, LW_THREAD, LW_CONTAINER, LW_ENV, LW_N };

/* Writes the stream header and the meta the store kept. */
int stream_sink_init(struct stream_sink *s, int fd,
		     const struct store_set *ss);
/* Sums samples per every_ns from origin (the range's start), keeping only
 * labels (kind and flags always) and, with side, only whether the leaf is
 * a kernel frame. */
void stream_sink_aggregate(struct stream_sink *s, uint64_t origin,
			   uint64_t every_ns, const struct cpa_labels *labels,
			   bool side);
/* Cuts each group's flame graph, or with callee its callee view's, to
 * frames at least 1/n of their kind's total wide (prune.c). */
void stream_sink_prune(struct stream_sink *s, uint32_t n, bool callee);
/* Once aggregating is set up: with no label kept and stacks by side (the
 * trend of a long range), takes each window's totals from the store's
 * sums where a segment keeps them, decoding none of its entries. */
void stream_sink_take_sums(struct stream_sink *s);
/* Moves the group in s->agg, cut, into s->pruned (prune.c). */
void prune_group(struct stream_sink *s);
int stream_sink_finish(struct stream_sink *s);

/* Self and total weight per function. */
struct top_sink {
	struct sink k;
	struct qmap seg;		/* (0, stack) -> weight; 1, 2: netting
					 * kinds' allocations and frees */
	const struct cpa_store_dict *d;	/* of the segment being read */
	struct cpa_stacktab *held;	/* netting kinds: name path ids */
	struct qmap net;		/* (1 alloc or 2 free, path) -> bytes */
	struct cpa_strtab *names;
	struct cpa_topfuncs top;
	uint32_t *path;			/* name ids of one stack */
	size_t path_cap;
};

void top_sink_init(struct top_sink *s);
void top_write(struct top_sink *s, FILE *out, unsigned n);
void top_sink_free(struct top_sink *s);

#endif
