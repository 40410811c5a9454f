/* SPDX-License-Identifier: MIT */
/*
 * The store directory as cpa-store manages it: the lock, recovery of torn
 * tails left by a crash, the current segment and its rotation, the
 * translation of input ids into segment ids, and retention.
 */
#ifndef CPA_STORE_SEGMENTS_H
#define CPA_STORE_SEGMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "input.h"
#include "opts.h"
#include "windows.h"

struct segment_ref {
	char name[CPA_STORE_NAME_MAX];
	uint64_t bytes;
	uint64_t max_end;	/* newest window end; segment start if empty */
};

struct store {
	const struct store_opts *o;
	int lock_fd;
	struct cpa_segment_writer *cur;
	uint64_t cur_period;
	uint64_t cover_to;	/* end of the current segment's coverage */
	bool failed;		/* its last block could not be written */
	struct segment_ref *old;	/* closed segments, oldest first */
	size_t n_old, cap_old;

	/* input id -> segment id, valid for the current segment */
	uint32_t *str_map, *stk_map;
	size_t str_map_n, stk_map_n;

	char meta_base[1024];	/* writer, host, kernel, units */
	struct cpa_store_window *batch;
	size_t batch_cap;
	struct cpa_store_entry *pool;
	size_t pool_cap;

	/* Windows of the current segment whose samples were lost upstream,
	 * kept in its meta; lost_changed: not yet written there. */
	struct cpa_store_lost lost[CPA_STORE_LOST_MAX];
	size_t n_lost;
	bool lost_changed;

	/* Processes of the current segment that went over the per-window
	 * budget, kept in its meta; over_changed: not yet written there. */
	struct cpa_store_over over[CPA_STORE_OVER_MAX];
	size_t n_over;
	bool over_changed;
	/* Per process, the bytes of new names it may still add: earned at
	 * --max-process-bytes a window, saved up to 16 windows' worth. */
	struct proc_budget {
		uint32_t pid;
		uint32_t stacks;	/* distinct stacks in that window */
		uint64_t window;	/* start of the window last charged */
		uint64_t bytes;		/* what it may still add */
		uint64_t added;		/* what it added to that window */
	} *budgets;		/* [0] unused */
	size_t n_budgets, cap_budgets;
	struct cpa_htab budget_index;
	uint64_t newest_window;

	uint64_t blocks, windows, segments_created, segments_deleted;
	uint64_t bytes_written;
	uint64_t over_stacks, over_bytes;	/* kept out, since the start */
	uint64_t proc_window_max;	/* most one process added to a window */
	uint64_t segments_deleted_early;	/* younger than --retain */
};

/* Creates and locks the directory, recovers torn tails. Exits on error. */
void store_open(struct store *st, const struct store_opts *o);
/*
 * Writes windows (sorted here by start), rotating segments as their
 * periods require. Returns 0, or -errno with err set; *written tells how
 * many of the sorted windows are safely stored either way.
 */
int store_write(struct store *st, struct input *in, struct window **w,
		size_t n, size_t *written, char *err, size_t errlen);
/* Notes count samples lost upstream at time_ns (a LOST record). */
void store_note_lost(struct store *st, uint64_t time_ns, uint64_t count);
/* Writes the lost windows and the processes over budget noted since the
 * last call into the current segment's meta (opening a segment when none
 * is), so --list shows them even where no sample was stored. 0 or -errno
 * with err set. */
int store_write_lost(struct store *st, struct input *in, char *err,
		     size_t errlen);
/* Makes everything written so far durable. 0 or -errno. */
int store_sync(struct store *st);
/* Forgets the input's ids (its dictionaries started over); the segment's
 * own dictionary stays. */
void store_forget_input_ids(struct store *st);
/* Deletes segments past --retain or beyond --max-size, oldest first;
 * warns when --max-size deletes history younger than --retain. */
void store_retention(struct store *st, uint64_t now_ns);
uint64_t store_bytes(const struct store *st);
void store_close(struct store *st);

#endif
