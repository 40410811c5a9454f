/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "timeparse.h"
#include "list.h"

static void fmt_duration(uint64_t ns, char *buf, size_t len)
{
	uint64_t s = ns / CPA_NSEC_PER_SEC;
	if (s == 0) {
		snprintf(buf, len, "%" PRIu64 "ms", ns / 1000000);
		return;
	}
	uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60;
	s %= 60;
	if (d)
		snprintf(buf, len, "%" PRIu64 "d%" PRIu64 "h%" PRIu64 "m", d,
			 h, m);
	else if (h)
		snprintf(buf, len, "%" PRIu64 "h%" PRIu64 "m%" PRIu64 "s", h,
			 m, s);
	else if (m)
		snprintf(buf, len, "%" PRIu64 "m%" PRIu64 "s", m, s);
	else
		snprintf(buf, len, "%" PRIu64 "s", s);
}

void list_range(FILE *out, uint64_t first, uint64_t end, uint64_t n,
		const char *what)
{
	char a[64], b[64], d[32];
	cpa_format_time(first, a, sizeof(a));
	cpa_format_time(end, b, sizeof(b));
	fmt_duration(end - first, d, sizeof(d));
	fprintf(out, "range %s .. %s (%s, %" PRIu64 " %s)\n", a, b, d, n,
		what);
}

struct span {
	uint64_t from, to;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->from < y->from ? -1 : x->from > y->from;
}

static int lost_cmp(const void *a, const void *b)
{
	const struct cpa_store_lost *x = a, *y = b;
	return x->from < y->from ? -1 : x->from > y->from;
}

/* Windows whose samples were lost upstream, from every segment's meta:
 * a stall where capture lost everything stored nothing, so the covered
 * range alone would hide it. */
static void list_lost(const struct store_set *ss, FILE *out)
{
	struct cpa_store_lost *r = ss->lost;
	size_t n = ss->n_lost;
	if (n)
		qsort(r, n, sizeof(*r), lost_cmp);
	for (size_t i = 0; i < n;) {
		struct cpa_store_lost l = r[i++];
		while (i < n && r[i].from <= l.to) {
			if (r[i].to > l.to)
				l.to = r[i].to;
			l.count += r[i++].count;
		}
		char a[40], b[40], d[40];
		cpa_format_time(l.from, a, sizeof(a));
		cpa_format_time(l.to, b, sizeof(b));
		fmt_duration(l.to - l.from, d, sizeof(d));
		fprintf(out, "lost %s .. %s (%s, %" PRIu64 " samples lost)\n",
			a, b, d, l.count);
	}
}

/* Processes that cpa-store held to its per-window budget: their stacks
 * past it are one [over budget] frame, their weight kept. */
static void list_over(const struct store_set *ss, FILE *out)
{
	for (size_t i = 0; i < ss->n_over; i++) {
		const struct cpa_store_over *o = &ss->over[i];
		fprintf(out, "over budget pid %u (%s): %" PRIu64 " stacks, %"
			PRIu64 " bytes of new names not stored (their weight "
			"is under [over budget])\n", o->pid, o->comm,
			o->stacks, o->bytes);
	}
}

void list_store(const struct store_set *ss, FILE *out)
{
	char a[40], b[40], d[40];
	size_t nspans = 0;
	for (size_t i = 0; i < ss->n; i++)
		nspans += ss->segs[i].n_idx;
	struct span *sp = cpa_malloc((nspans + 1) * sizeof(*sp));
	size_t k = 0;
	uint64_t bytes = 0;

	fprintf(out, "%-40s %-23s %-23s %8s %7s %10s\n", "segment", "first",
		"end", "windows", "blocks", "bytes");
	for (size_t i = 0; i < ss->n; i++) {
		const struct cpa_segment_info *si = &ss->segs[i];
		uint64_t windows = 0;
		for (size_t j = 0; j < si->n_idx; j++) {
			windows += si->idx[j].n_windows;
			sp[k++] = (struct span){si->idx[j].cover_from,
						si->idx[j].cover_to};
		}
		bytes += si->bytes;
		cpa_format_time(si->min_start, a, sizeof(a));
		cpa_format_time(si->max_end, b, sizeof(b));
		fprintf(out, "%-40s %-23s %-23s %8" PRIu64 " %7zu %10" PRIu64
			"\n", si->path, a, b, windows, si->n_idx, si->bytes);
	}
	if (!k) {
		fprintf(out, "range empty\n");
		list_lost(ss, out);
		list_over(ss, out);
		free(sp);
		return;
	}
	qsort(sp, k, sizeof(*sp), span_cmp);
	uint64_t first = sp[0].from, end = sp[0].to;
	for (size_t i = 0; i < k; i++)
		if (sp[i].to > end && sp[i].from <= end)
			end = sp[i].to;
		else if (sp[i].from > end)
			end = sp[i].to;
	list_range(out, first, end, bytes, "bytes");
	end = sp[0].to;
	for (size_t i = 1; i < k; i++) {
		if (sp[i].from > end) {
			cpa_format_time(end, a, sizeof(a));
			cpa_format_time(sp[i].from, b, sizeof(b));
			fmt_duration(sp[i].from - end, d, sizeof(d));
			fprintf(out, "gap %s .. %s (%s)\n", a, b, d);
		}
		if (sp[i].to > end)
			end = sp[i].to;
	}
	list_lost(ss, out);
	list_over(ss, out);
	free(sp);
}
