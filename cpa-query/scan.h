/* SPDX-License-Identifier: MIT */
/*
 * The stores a query reads and the walk over the windows of a time range:
 * only segments and blocks whose index span meets the range are opened,
 * and each entry that passes the filters goes to a sink.
 */
#ifndef CPA_QUERY_SCAN_H
#define CPA_QUERY_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "filter.h"
#include "store.h"

struct store_set {
	struct cpa_segment_info *segs;	/* readable segments, by start */
	size_t n;
	uint64_t interval_ns;		/* of the first segment */
	/* lost windows noted in every segment's meta, blocks or not */
	struct cpa_store_lost *lost;
	size_t n_lost, cap_lost;
	/* processes whose stacks went over cpa-store's budget, summed */
	struct cpa_store_over *over;
	size_t n_over, cap_over;
};

/* Reads the index of every segment in dirs. Torn tails and unreadable
 * segments are warned about and skipped; a newer format or a missing
 * directory is fatal. */
void stores_open(struct store_set *ss, const char *const *dirs, size_t n);
void stores_free(struct store_set *ss);

struct sink {
	/* d grows while the segment is read; it is complete at end. */
	void (*begin)(struct sink *k, const struct cpa_segment_info *si,
		      const struct cpa_store_dict *d);
	void (*entry)(struct sink *k, unsigned column, uint64_t start_ns,
		      uint32_t ls, uint32_t stack, uint64_t weight);
	void (*end)(struct sink *k, const struct cpa_segment_info *si,
		    const struct cpa_store_dict *d);
	/* Optional, in place of entry: the entries of one window that pass
	 * the filters, all at once. */
	void (*window)(struct sink *k, unsigned column, uint64_t start_ns,
		       const struct cpa_store_entry *e, uint32_t n);
	/* Optional: a sink that needs only a window's totals per kind,
	 * sample flags and side takes them from a segment's sums file
	 * (format 1.3) when the query filters nothing, and no entry of
	 * those blocks is decoded. */
	void (*sums)(struct sink *k, unsigned column, uint64_t start_ns,
		     const struct cpa_store_sum *s, uint32_t n);
	/* Optional, when the segment was read ahead: right after begin,
	 * ids[stack] for each of the segment's n stacks, equal across the
	 * segments of a scan for stacks of equal frames, so what a sink
	 * made of a stack in one segment serves it in the next. Valid until
	 * end. */
	void (*stack_ids)(struct sink *k, const uint32_t *ids, uint32_t n);
};

struct scan_stats {
	uint64_t segments, blocks, windows, entries;
	uint64_t summed;	/* blocks whose sums were read in their place */
	uint64_t sums_damaged;	/* sums that failed, their blocks decoded */
	uint64_t first_ns, last_ns;	/* span of windows read */
	bool nets;		/* an entry of a kind that nets frees */
};

/*
 * Sends every entry of the windows meeting [from, to) that passes f to k,
 * tagged with column. A damaged block is warned about and skipped.
 */
void scan_range(const struct store_set *ss, uint64_t from, uint64_t to,
		unsigned column, const struct filter *f, struct sink *k,
		struct scan_stats *st);
/*
 * What was still held at the end of a range of the kinds that net frees
 * (cpa_kind_nets: mem-usage, heap-inuse) includes allocations made before
 * it: sends the entries of those kinds, and only those, of every window
 * that ends by before, from the oldest stored on. Not counted in st.
 */
void scan_held(const struct store_set *ss, uint64_t before, unsigned column,
	       const struct filter *f, struct sink *k);

#endif
