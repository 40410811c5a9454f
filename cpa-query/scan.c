/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "scan.h"

static int seg_cmp(const void *a, const void *b)
{
	const struct cpa_segment_info *x = a, *y = b;
	if (x->min_start != y->min_start)
		return x->min_start < y->min_start ? -1 : 1;
	return strcmp(x->name, y->name);
}

void stores_open(struct store_set *ss, const char *const *dirs, size_t n)
{
	memset(ss, 0, sizeof(*ss));
	size_t cap = 0;
	char err[512];
	for (size_t d = 0; d < n; d++) {
		char **names;
		size_t nn;
		if (cpa_store_list_names(dirs[d], &names, &nn, err,
					 sizeof(err)) < 0)
			cpa_die("%s", err);
		for (size_t i = 0; i < nn; i++) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s", dirs[d],
				 names[i]);
			CPA_GROW(ss->segs, cap, ss->n + 1);
			struct cpa_segment_info *si = &ss->segs[ss->n];
			int r = cpa_segment_info_read(path, si, err,
						      sizeof(err));
			if (r == -2)
				cpa_die("%s", err);
			if (r < 0) {
				cpa_warn("skipping %s: %s", path, err);
				cpa_segment_info_free(si);
				continue;
			}
			if (si->torn_bytes)
				cpa_warn("%s: ignoring a torn tail of %llu "
					 "bytes (%s)", path,
					 (unsigned long long)si->torn_bytes,
					 si->torn_why);
			const char *lost = cpa_store_meta_get(si->meta, "lost");
			size_t before = ss->n_lost;
			if (lost && cpa_store_lost_parse(lost, &ss->lost,
							 &ss->n_lost,
							 &ss->cap_lost, err,
							 sizeof(err)) < 0) {
				cpa_warn("%s/meta: %s; its lost windows are "
					 "not listed", path, err);
				ss->n_lost = before;
			}
			if (!si->n_idx) {
				cpa_segment_info_free(si);
				continue;
			}
			ss->n++;
		}
		cpa_store_names_free(names, nn);
	}
	if (ss->n) {	/* none: segs is NULL, which qsort may not be given */
		qsort(ss->segs, ss->n, sizeof(*ss->segs), seg_cmp);
		ss->interval_ns = ss->segs[0].interval_ns;
	}
}

void stores_free(struct store_set *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		cpa_segment_info_free(&ss->segs[i]);
	free(ss->segs);
	free(ss->lost);
	memset(ss, 0, sizeof(*ss));
}

struct walk {
	uint64_t from, to, interval;
	unsigned column;
	const struct filter *f;
	struct filter_cache cache;
	const struct cpa_store_dict *d;
	struct sink *k;
	struct scan_stats *st;
	bool held;		/* scan_held: whole windows, netting kinds */
	struct cpa_store_entry *pass;	/* for k->window: those that pass */
	size_t cap_pass;
};

static int on_window(void *arg, uint64_t start, const struct cpa_store_entry *e,
		     uint32_t n)
{
	struct walk *w = arg;
	if (start >= w->to || start + w->interval <= w->from)
		return 0;
	if (w->held) {
		if (start + w->interval > w->to)
			return 0;	/* the range itself reads it */
		for (uint32_t i = 0; i < n; i++) {
			unsigned kind = w->d->labelsets[e[i].labelset].kind;
			if (cpa_kind_nets(kind) &&
			    filter_entry(w->f, &w->cache, w->d, e[i].labelset,
					 e[i].stack))
				w->k->entry(w->k, w->column, start,
					    e[i].labelset, e[i].stack,
					    e[i].weight);
		}
		return 0;
	}
	w->st->windows++;
	if (!w->st->first_ns || start < w->st->first_ns)
		w->st->first_ns = start;
	if (start + w->interval > w->st->last_ns)
		w->st->last_ns = start + w->interval;
	uint32_t np = 0;
	bool filtering = w->f->any_label || w->f->any_frame;
	if (w->k->window)
		CPA_GROW(w->pass, w->cap_pass, n);
	for (uint32_t i = 0; i < n; i++) {
		if (filtering && !filter_entry(w->f, &w->cache, w->d,
					       e[i].labelset, e[i].stack))
			continue;
		w->st->entries++;
		if (cpa_kind_nets(w->d->labelsets[e[i].labelset].kind))
			w->st->nets = true;
		if (w->k->window)
			w->pass[np++] = e[i];
		else
			w->k->entry(w->k, w->column, start, e[i].labelset,
				    e[i].stack, e[i].weight);
	}
	if (np)
		w->k->window(w->k, w->column, start, w->pass, np);
	return 0;
}

static void scan(const struct store_set *ss, uint64_t from, uint64_t to,
		 unsigned column, const struct filter *f, struct sink *k,
		 struct scan_stats *st, bool held)
{
	char err[512];
	for (size_t s = 0; s < ss->n; s++) {
		const struct cpa_segment_info *si = &ss->segs[s];
		if (si->min_start >= to || si->max_end <= from)
			continue;
		struct cpa_segment_reader r;
		if (cpa_segment_reader_open(&r, si, err, sizeof(err)) < 0) {
			cpa_warn("skipping %s", err);
			continue;
		}
		st->segments++;
		struct walk w = {.from = from, .to = to,
				 .interval = si->interval_ns,
				 .column = column, .f = f, .d = &r.dict,
				 .k = k, .st = st, .held = held};
		k->begin(k, si, &r.dict);
		for (size_t i = 0; i < si->n_idx; i++) {
			const struct cpa_store_index_entry *e = &si->idx[i];
			if (e->min_start >= to || e->max_end <= from)
				continue;
			st->blocks++;
			if (cpa_segment_reader_block(&r, i, on_window, &w, err,
						     sizeof(err)) < 0) {
				/* A broken dictionary block spoils what
				 * follows in this segment; a broken data
				 * block only itself. */
				cpa_warn("%s; skipping %s", err,
					 r.dict_upto <= i ? "the rest of the "
							    "segment"
							  : "its windows");
				if (r.dict_upto <= i)
					break;
			}
		}
		k->end(k, si, &r.dict);
		filter_cache_reset(&w.cache);
		free(w.pass);
		cpa_segment_reader_close(&r);
	}
}

void scan_range(const struct store_set *ss, uint64_t from, uint64_t to,
		unsigned column, const struct filter *f, struct sink *k,
		struct scan_stats *st)
{
	scan(ss, from, to, column, f, k, st, false);
}

void scan_held(const struct store_set *ss, uint64_t before, unsigned column,
	       const struct filter *f, struct sink *k)
{
	struct scan_stats st = {0};
	if (before)
		scan(ss, 0, before, column, f, k, &st, true);
}
