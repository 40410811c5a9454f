/* SPDX-License-Identifier: MIT */
/*
 * Aggregation of samples into windows: per window, (labelset, stack) ->
 * weight, in the input's id space. A window closes when the stream has
 * moved --grace past its end (or the input went idle), and closed windows
 * are handed to the writer.
 */
#ifndef CPA_STORE_WINDOWS_H
#define CPA_STORE_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "htab.h"
#include "input.h"

struct wentry {
	struct cpa_store_labelset ls;
	uint32_t stack;
	uint64_t weight;
};

struct window {
	uint64_t start_ns;
	struct wentry *e;
	uint32_t n, cap;
	struct cpa_htab index;	/* (labelset, stack) -> index in e + 1 */
	uint64_t samples;
	bool closed;
};

struct windows {
	uint64_t interval_ns, grace_ns;
	struct window **w;	/* sorted by start */
	size_t n, cap;
	uint64_t high_ns;	/* newest sample time seen */
	size_t bytes;		/* memory held by all windows */
};

void windows_init(struct windows *ws, uint64_t interval_ns,
		  uint64_t grace_ns);
void windows_add(struct windows *ws, const struct in_sample *s);
/* Closes every open window (idle input, end of input). */
void windows_close_all(struct windows *ws);
size_t windows_closed_count(const struct windows *ws);
/* Moves the closed windows, oldest first, to *out (grown as needed). */
size_t windows_take_closed(struct windows *ws, struct window ***out,
			   size_t *n, size_t *cap);
size_t window_bytes(const struct window *w);
void window_free(struct window *w);
void windows_free(struct windows *ws);

#endif
