/* SPDX-License-Identifier: MIT */
/*
 * cpa-query: reads a time range out of one or more stores written by
 * cpa-store. Only the segments and blocks whose index span meets the
 * range are read; everything is aggregated in memory and written once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "options.h"
#include "outfile.h"

#include "fleet.h"
#include "follow.h"
#include "list.h"
#include "opts.h"
#include "output.h"
#include "scan.h"

/* The sampling period of on-CPU weights, from the stream meta the store
 * kept (cpa-capture's frequency), for pprof's cpu/nanoseconds column. */
static uint64_t period_ns(const struct store_set *ss)
{
	for (size_t i = 0; i < ss->n; i++) {
		const char *f = cpa_store_meta_get(ss->segs[i].meta,
						   "stream.frequency");
		unsigned long hz = f ? strtoul(f, NULL, 10) : 0;
		if (hz)
			return 1000000000ull / hz;
	}
	return 0;
}

/*
 * The range [from, to) has been read into k. For the kinds that net
 * (mem-usage, heap-inuse, java-live) the answer is what was still held at
 * to: unless --growth, the older windows of those kinds are read too, when
 * the range had such samples or --kind asked for them (a query of other
 * kinds reads nothing more).
 */
static void add_held(const struct query_opts *o, const struct store_set *ss,
		     uint64_t from, unsigned column,
		     const struct scan_stats *st, struct sink *k)
{
	uint32_t nets = 0;
	for (unsigned kind = 0; kind < CPA_KIND_COUNT; kind++)
		if (cpa_kind_nets(kind))
			nets |= 1u << kind;
	if (o->growth)
		return;
	if (st->nets || (o->filter.kinds & nets))
		scan_held(ss, from, column, &o->filter, k);
}

/* --windows N (CPA's --output_num): the starts of the windows of the
 * range that hold samples passing the filters. */
struct starts_sink {
	struct sink k;
	uint64_t *v;
	size_t n, cap;
};

static void starts_begin(struct sink *k, const struct cpa_segment_info *si,
			 const struct cpa_store_dict *d)
{
	(void)k, (void)si, (void)d;
}

static void starts_window(struct sink *k, unsigned column, uint64_t start_ns,
			  const struct cpa_store_entry *e, uint32_t n)
{
	struct starts_sink *s = (struct starts_sink *)k;
	(void)column, (void)e, (void)n;
	CPA_GROW(s->v, s->cap, s->n + 1);
	s->v[s->n++] = start_ns;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The end of the range holding the first n windows from o->from on: just
 * past the nth distinct start, so that no later window is read. */
static uint64_t end_of_windows(const struct query_opts *o,
			       const struct store_set *ss, uint64_t n)
{
	struct starts_sink s = {.k = {.begin = starts_begin,
				      .end = starts_begin,
				      .window = starts_window}};
	struct scan_stats st = {0};
	scan_range(ss, o->from, o->to, 0, &o->filter, &s.k, &st);
	if (s.n)
		qsort(s.v, s.n, sizeof(*s.v), u64_cmp);
	uint64_t end = o->to, seen = 0;
	for (size_t i = 0; i < s.n; i++) {
		if (i && s.v[i] == s.v[i - 1])
			continue;
		if (++seen == n) {
			end = s.v[i] + 1;
			break;
		}
	}
	free(s.v);
	return end;
}

/* A time of the day alone, HH:MM[:SS]: today's, or a CPA store's day. */
static bool clock_only(const char *t)
{
	return t && t[0] >= '0' && t[0] <= '9' && t[1] >= '0' && t[1] <= '9' &&
	       t[2] == ':';
}

/*
 * CPA's --starttime and --endtime are times of the store's timeline, its
 * day: when every segment read is a CPA day directory of one date, a
 * time of day alone (--from 10:00) is on that date, not today's.
 */
static void on_cpa_day(struct query_opts *o, const struct store_set *ss)
{
	if (!ss->n || !(clock_only(o->from_arg) || clock_only(o->to_arg)))
		return;
	uint64_t day = 0;
	for (size_t i = 0; i < ss->n; i++) {
		if (!ss->segs[i].cpa || (day && ss->segs[i].start_ns != day))
			return;
		day = ss->segs[i].start_ns;
	}
	/* noon: the date is the same in local time whatever DST does */
	uint64_t noon = day + 12 * 3600 * CPA_NSEC_PER_SEC;
	if (clock_only(o->from_arg))
		o->from = cpa_opt_time_ns("--from", o->from_arg, noon);
	if (clock_only(o->to_arg))
		o->to = cpa_opt_time_ns("--to", o->to_arg, noon);
	if (o->from >= o->to)
		cpa_die_usage("empty range: --from is not before --to");
}

/* Where the windows come from: the host's stores, or the fleet. */
struct source {
	const struct query_opts *o;
	struct store_set ss;
	struct fleet *fleet;
};

/* The range [from, to) into k as column; with held, the older windows of
 * the kinds that net too (add_held). every_ns: the fleet's time groups,
 * as the sink sums them (0: none, 1: per window). */
static void read_range(struct source *src, uint64_t from, uint64_t to,
		       unsigned column, uint64_t every_ns, bool held,
		       struct sink *k, struct scan_stats *st)
{
	const struct query_opts *o = src->o;
	if (src->fleet) {
		fleet_read(src->fleet, from, to, column, every_ns, from,
			   held && !o->growth, k, st);
		st->first_ns = from;
		st->last_ns = to;
		return;
	}
	scan_range(&src->ss, from, to, column, &o->filter, k, st);
	if (held)
		add_held(o, &src->ss, from, column, st, k);
}

static void report(const char *what, const struct scan_stats *st)
{
	cpa_debug("%s: %llu segments, %llu blocks, %llu windows, %llu entries, "
		  "%llu blocks by their sums",
		  what, (unsigned long long)st->segments,
		  (unsigned long long)st->blocks,
		  (unsigned long long)st->windows,
		  (unsigned long long)st->entries,
		  (unsigned long long)st->summed);
}

int main(int argc, char **argv)
{
	struct query_opts o;
	cpa_options_init(argv[0]);
	query_opts_parse(&o, argc, argv);
	cpa_options_checked();

	if (o.follow) {
		int rc = follow_run(&o, STDOUT_FILENO);
		query_opts_free(&o);
		return rc;
	}

	struct source src = {.o = &o};
	struct fleet fleet;
	if (o.clickhouse) {
		fleet_open(&fleet, &o);
		src.fleet = &fleet;
		if (o.max_windows)
			fleet_check_windows(&fleet, o.from, o.to,
					    o.max_windows);
	} else {
		stores_open(&src.ss, o.dirs, o.n_dirs);
		on_cpa_day(&o, &src.ss);
		if (o.windows)
			o.to = end_of_windows(&o, &src.ss, o.windows);
	}
	struct store_set *ss = &src.ss;

	int fd = STDOUT_FILENO;
	FILE *out = stdout;
	/* -o FILE appears whole or not at all (lib/outfile.h) */
	struct cpa_outfile of = { .fd = -1 };
	char err[512];
	if (o.output) {
		if (cpa_outfile_open(&of, o.output, 0640, err, sizeof(err)) < 0)
			cpa_die("%s", err);
		fd = of.fd;
		if (!(out = fdopen(fd, "w")))
			cpa_die("%s: %s", o.output, strerror(errno));
	}

	int status = 0;
	struct scan_stats st = {0};
	if (o.list) {
		if (src.fleet)
			fleet_list(src.fleet, out);
		else
			list_store(ss, out);
	} else if (o.format == FORMAT_STREAM) {
		struct stream_sink s;
		if (src.fleet)
			ss->interval_ns = fleet_interval(src.fleet, o.from,
							 o.to);
		if (stream_sink_init(&s, fd, ss) < 0)
			cpa_die("%s: %s", o.output ? o.output : "<stdout>",
				strerror(errno));
		if (o.split_ns)
			stream_sink_aggregate(&s, o.from, o.split_ns, &o.labels,
					      o.side);
		s.kernel = o.kernel;
		if (o.prune)
			stream_sink_prune(&s, o.prune, o.callee);
		stream_sink_take_sums(&s);
		read_range(&src, o.from, o.to, 0, o.split_ns ? o.split_ns : 1,
			   true, &s.k, &st);
		int r = stream_sink_finish(&s);
		if (r < 0 && r != -EPIPE)
			cpa_die("%s: %s", o.output ? o.output : "<stdout>",
				strerror(-r));
	} else if (o.top) {
		struct top_sink s;
		top_sink_init(&s);
		read_range(&src, o.from, o.to, 0, 0, true, &s.k, &st);
		top_write(&s, out, o.top);
		top_sink_free(&s);
	} else {
		struct fold_sink s;
		uint64_t split = 0;
		if (o.split_dir)
			split = o.split_ns ? o.split_ns
				: ss->interval_ns ? ss->interval_ns : 1000000000;
		fold_sink_init(&s, &o.labels, split);
		s.pprof = o.format == FORMAT_PPROF;
		/* a split writes each window's own change */
		read_range(&src, o.from, o.to, 0, o.split_dir ? 1 : 0,
			   !o.split_dir, &s.k, &st);
		if (o.diff) {
			struct scan_stats bst = {0};
			read_range(&src, o.diff_from, o.diff_to, 1, 0, true,
				   &s.k, &bst);
			report("baseline", &bst);
		}
		if (o.split_dir)
			status = fold_write_split(&s, o.split_dir) ? 1 : 0;
		else if (o.format == FORMAT_PPROF)
			status = fold_write_pprof(&s, fd, period_ns(ss),
						  st.first_ns, st.last_ns)
					 ? 1 : 0;
		else if (fold_write(&s, out, o.diff) < 0 && errno != EPIPE)
			cpa_die("%s: %s", o.output ? o.output : "<stdout>",
				strerror(errno));
		if (s.not_held)
			cpa_debug("stacks left out, their frees reaching "
				  "their allocations: %llu",
				  (unsigned long long)s.not_held);
		fold_sink_free(&s);
	}
	report("range", &st);
	if (fflush(out) && errno != EPIPE)
		cpa_die("%s: %s", o.output ? o.output : "<stdout>",
			strerror(errno));
	if (o.output) {
		if (fclose(out) && !status) {
			cpa_err("%s: %s", o.output, strerror(errno));
			status = 1;
		}
		of.fd = -1;	/* closed with out */
		if (status)
			cpa_outfile_abort(&of);
		else if (cpa_outfile_commit(&of, err, sizeof(err)) < 0)
			cpa_die("%s", err);
	}
	if (src.fleet)
		fleet_close(src.fleet);
	else
		stores_free(ss);
	query_opts_free(&o);
	return status;
}
