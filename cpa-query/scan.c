/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "intern.h"
#include "log.h"
#include "cpastore.h"
#include "scan.h"

static int seg_cmp(const void *a, const void *b)
{
	const struct cpa_segment_info *x = a, *y = b;
	if (x->min_start != y->min_start)
		return x->min_start < y->min_start ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Why dir is neither a cpa store nor one CPA wrote, naming what it
 * holds; NULL when it may be a store (empty, or only a store's lock). */
static const char *foreign(const char *dir, char *buf, size_t len)
{
	DIR *d = opendir(dir);
	if (!d)
		return NULL;
	size_t n = 0, at = 0;
	struct dirent *de;
	buf[0] = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "lock"))
			continue;
		if (n++ < 3)
			at += (size_t)snprintf(buf + at, at < len ? len - at : 0,
					       "%s'%.60s'", n > 1 ? ", " : "",
					       de->d_name);
	}
	closedir(d);
	if (!n)
		return NULL;
	if (n > 3 && at < len)
		snprintf(buf + at, len - at, " and %zu more", n - 3);
	return buf;
}

/* Reads the segment at path into ss; a torn tail is warned about. -1
 * with err when it is not a readable segment, -2 when it is newer. */
static int add_segment(struct store_set *ss, size_t *cap, const char *path,
		       char *err, size_t errlen)
{
	CPA_GROW(ss->segs, *cap, ss->n + 1);
	struct cpa_segment_info *si = &ss->segs[ss->n];
	int r = cpa_segment_info_read(path, si, err, errlen);
	if (r < 0) {
		cpa_segment_info_free(si);
		return r;
	}
	if (si->torn_bytes)
		cpa_warn("%s: ignoring a torn tail of %llu bytes (%s)", path,
			 (unsigned long long)si->torn_bytes, si->torn_why);
	const char *lost = cpa_store_meta_get(si->meta, "lost");
	size_t before = ss->n_lost;
	if (lost && cpa_store_lost_parse(lost, &ss->lost, &ss->n_lost,
					 &ss->cap_lost, err, errlen) < 0) {
		cpa_warn("%s/meta: %s; its lost windows are not listed", path,
			 err);
		ss->n_lost = before;
	}
	const char *over = cpa_store_meta_get(si->meta, "over_budget");
	before = ss->n_over;
	if (over && cpa_store_over_parse(over, &ss->over, &ss->n_over,
					 &ss->cap_over, err, errlen) < 0) {
		cpa_warn("%s/meta: %s; its processes over budget are not "
			 "listed", path, err);
		ss->n_over = before;
	}
	if (!si->n_idx)
		cpa_segment_info_free(si);
	else
		ss->n++;
	return 0;
}

void stores_open(struct store_set *ss, const char *const *dirs, size_t n)
{
	memset(ss, 0, sizeof(*ss));
	size_t cap = 0;
	char err[512];
	for (size_t d = 0; d < n; d++) {
		/* one day directory of a store CPA wrote (cpa show --read) */
		if (cpa_cpastore_is_day(dirs[d])) {
			if (add_segment(ss, &cap, dirs[d], err,
					sizeof(err)) < 0)
				cpa_die("%s", err);
			continue;
		}
		char **names;
		size_t nn;
		if (cpa_store_list_names(dirs[d], &names, &nn, err,
					 sizeof(err)) < 0)
			cpa_die("%s", err);
		char what[256];
		if (!nn && foreign(dirs[d], what, sizeof(what)))
			cpa_die("%s: not a store: no segment directory of "
				"cpa's (YYYYMMDDTHHMMSSZ) nor day directory of "
				"CPA's (cpa_YYMMDD) in it, found %s", dirs[d],
				what);
		for (size_t i = 0; i < nn; i++) {
			char path[4200];
			snprintf(path, sizeof(path), "%s/%s", dirs[d],
				 names[i]);
			int r = add_segment(ss, &cap, path, err, sizeof(err));
			if (r == -2)
				cpa_die("%s", err);
			if (r < 0)
				cpa_warn("skipping %s: %s", path, err);
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
	free(ss->over);
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

/* How the window at start is read: 0 not, 1 by scan_held, 2 as part of
 * the range, counted in w->st. */
static int window_read(struct walk *w, uint64_t start)
{
	if (start >= w->to || start + w->interval <= w->from)
		return 0;
	if (w->held)	/* the range itself reads a window it meets */
		return start + w->interval > w->to ? 0 : 1;
	w->st->windows++;
	if (!w->st->first_ns || start < w->st->first_ns)
		w->st->first_ns = start;
	if (start + w->interval > w->st->last_ns)
		w->st->last_ns = start + w->interval;
	return 2;
}

static int on_window(void *arg, uint64_t start, const struct cpa_store_entry *e,
		     uint32_t n)
{
	struct walk *w = arg;
	int how = window_read(w, start);
	if (!how)
		return 0;
	if (how == 1) {
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

/* on_window's walk over the totals of a window (sink's sums). */
static int on_sums(void *arg, uint64_t start, const struct cpa_store_sum *t,
		   uint32_t n)
{
	struct walk *w = arg;
	int how = window_read(w, start);
	if (!how)
		return 0;
	if (how == 1) {
		for (uint32_t i = 0; i < n; i++)
			if (cpa_kind_nets(t[i].kind))
				w->k->sums(w->k, w->column, start, t + i, 1);
		return 0;
	}
	w->st->entries += n;
	for (uint32_t i = 0; i < n; i++)
		if (cpa_kind_nets(t[i].kind))
			w->st->nets = true;
	w->k->sums(w->k, w->column, start, t, n);
	return 0;
}

/* True when the walk may take a block's sums for its entries: the sink
 * wants no more, the filters pass everything, and CPA_QUERY_NO_SUMS=1
 * (the slow path tests compare against) is not set. */
static bool takes_sums(const struct sink *k, const struct filter *f)
{
	const char *no = getenv("CPA_QUERY_NO_SUMS");
	return k->sums && !f->any_label && !f->any_frame && !f->kinds &&
	       !(no && *no && strcmp(no, "0"));
}

/* Reads the blocks of the reader's segment that meet [from, to) through
 * w, warning about and skipping a damaged block. */
static void read_segment(struct cpa_segment_reader *r, struct walk *w,
			 uint64_t from, uint64_t to)
{
	const struct cpa_segment_info *si = r->si;
	char err[512];
	bool sums = takes_sums(w->k, w->f);
	for (size_t i = 0; i < si->n_idx; i++) {
		const struct cpa_store_index_entry *e = &si->idx[i];
		if (e->min_start >= to || e->max_end <= from)
			continue;
		w->st->blocks++;
		if (sums) {
			int got = cpa_segment_reader_sums(r, i, on_sums, w, err,
							  sizeof(err));
			if (!got) {
				w->st->summed++;
				continue;
			}
			if (got < 0) {
				cpa_warn("%s; reading the data blocks instead",
					 err);
				w->st->sums_damaged++;
			}
		}
		if (cpa_segment_reader_block(r, i, on_window, w, err,
					     sizeof(err)) < 0) {
			/* A broken dictionary block spoils what follows
			 * in this segment; a broken data block only
			 * itself. */
			cpa_warn("%s; skipping %s", err,
				 r->dict_upto <= i ? "the rest of the segment"
						   : "its windows");
			if (r->dict_upto <= i)
				break;
		}
	}
	filter_cache_reset(&w->cache);
	free(w->pass);
	w->pass = NULL;
	w->cap_pass = 0;
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
		read_segment(&r, &w, from, to);
		k->end(k, si, &r.dict);
		cpa_segment_reader_close(&r);
	}
}

/*
 * Reading ahead. A range of several segments is read on a second thread,
 * a segment at a time, into a tape: its reader (so its dictionary) and
 * the entries of its windows that pass the filters. The calling thread
 * plays each tape into the sink in segment order, so the sink sees what
 * scan() would have shown it, call for call, while the next segment's
 * blocks are read, checked, decompressed and decoded beside it. At most
 * TAPES_AHEAD tapes wait, which bounds the memory to a few segments.
 * For a sink that takes stack ids, the second thread also interns each
 * stack of the segment by its frames' text, which the calling thread
 * would otherwise redo for every segment.
 */
#define TAPES_AHEAD 2

struct tape {
	struct sink k;			/* records windows into e and w */
	struct cpa_segment_reader r;
	struct cpa_store_entry *e;
	size_t n, cap;
	struct tape_window {
		uint64_t start;
		uint32_t n;
	} *w;
	size_t nw, capw;
	uint32_t *ids;			/* stack -> id across segments */
	uint32_t nids;
	struct scan_stats st;
	struct tape *next;
};

struct ahead {
	const struct store_set *ss;
	uint64_t from, to;
	const struct filter *f;
	/* the sink's stack ids: stacks of string ids of strs */
	struct cpa_strtab *strs;
	struct cpa_stacktab *stacks;
	uint32_t *str_ids, *frames;
	size_t str_cap, frames_cap;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tape *head, **tail;	/* read, not yet played */
	size_t waiting;
	bool done;
};

static void tape_window(struct sink *k, unsigned column, uint64_t start,
			const struct cpa_store_entry *e, uint32_t n)
{
	struct tape *t = (struct tape *)k;
	(void)column;
	CPA_GROW(t->e, t->cap, t->n + n);
	memcpy(t->e + t->n, e, n * sizeof(*e));
	t->n += n;
	CPA_GROW(t->w, t->capw, t->nw + 1);
	t->w[t->nw++] = (struct tape_window){ start, n };
}

static void tape_free(struct tape *t)
{
	cpa_segment_reader_close(&t->r);
	free(t->e);
	free(t->w);
	free(t->ids);
	free(t);
}

/* The id of each stack of the tape's segment, by the text of its
 * frames. */
static void tape_stack_ids(struct ahead *a, struct tape *t)
{
	const struct cpa_dict *d = &t->r.dict.d;
	CPA_GROW(a->str_ids, a->str_cap, (size_t)d->nstrs + 1);
	for (uint32_t i = 0; i < d->nstrs; i++)
		a->str_ids[i] = cpa_strtab_intern(a->strs, d->strs[i],
						  d->str_lens[i], NULL);
	t->nids = d->nstacks;
	t->ids = cpa_calloc((size_t)t->nids + 1, sizeof(*t->ids));
	for (uint32_t i = 1; i < d->nstacks; i++) {
		uint32_t n;
		const uint32_t *f = cpa_dict_stack(d, i, &n);
		if (!f)
			continue;
		CPA_GROW(a->frames, a->frames_cap, (size_t)n + 1);
		for (uint32_t j = 0; j < n; j++)
			a->frames[j] = a->str_ids[f[j]];
		t->ids[i] = cpa_stacktab_intern(a->stacks, a->frames, n, NULL);
	}
}

static void *read_ahead(void *arg)
{
	struct ahead *a = arg;
	char err[512];
	for (size_t s = 0; s < a->ss->n; s++) {
		const struct cpa_segment_info *si = &a->ss->segs[s];
		if (si->min_start >= a->to || si->max_end <= a->from)
			continue;
		struct tape *t = cpa_calloc(1, sizeof(*t));
		if (cpa_segment_reader_open(&t->r, si, err, sizeof(err)) < 0) {
			cpa_warn("skipping %s", err);
			free(t);
			continue;
		}
		t->k.window = tape_window;
		t->st.segments = 1;
		struct walk w = {.from = a->from, .to = a->to,
				 .interval = si->interval_ns, .f = a->f,
				 .d = &t->r.dict, .k = &t->k, .st = &t->st};
		read_segment(&t->r, &w, a->from, a->to);
		if (a->stacks)
			tape_stack_ids(a, t);
		pthread_mutex_lock(&a->lock);
		while (a->waiting >= TAPES_AHEAD)
			pthread_cond_wait(&a->cond, &a->lock);
		*a->tail = t;
		a->tail = &t->next;
		a->waiting++;
		pthread_cond_broadcast(&a->cond);
		pthread_mutex_unlock(&a->lock);
	}
	pthread_mutex_lock(&a->lock);
	a->done = true;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

static void play(struct tape *t, unsigned column, struct sink *k,
		 struct scan_stats *st)
{
	const struct cpa_segment_info *si = t->r.si;
	k->begin(k, si, &t->r.dict);
	if (t->ids)
		k->stack_ids(k, t->ids, t->nids);
	const struct cpa_store_entry *e = t->e;
	for (size_t i = 0; i < t->nw; i++) {
		const struct tape_window *tw = &t->w[i];
		if (k->window)
			k->window(k, column, tw->start, e, tw->n);
		else
			for (uint32_t j = 0; j < tw->n; j++)
				k->entry(k, column, tw->start, e[j].labelset,
					 e[j].stack, e[j].weight);
		e += tw->n;
	}
	k->end(k, si, &t->r.dict);
	st->segments += t->st.segments;
	st->blocks += t->st.blocks;
	st->windows += t->st.windows;
	st->entries += t->st.entries;
	st->summed += t->st.summed;
	st->sums_damaged += t->st.sums_damaged;
	if (t->st.first_ns && (!st->first_ns || t->st.first_ns < st->first_ns))
		st->first_ns = t->st.first_ns;
	if (t->st.last_ns > st->last_ns)
		st->last_ns = t->st.last_ns;
	st->nets |= t->st.nets;
}

/* True when the range meets more than one segment and a second CPU can
 * read ahead; CPA_QUERY_NO_AHEAD=1 reads on one thread. */
static bool worth_reading_ahead(const struct store_set *ss, uint64_t from,
				uint64_t to)
{
	const char *no = getenv("CPA_QUERY_NO_AHEAD");
	if ((no && *no && strcmp(no, "0")) || sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return false;
	size_t n = 0;
	for (size_t s = 0; s < ss->n && n < 2; s++)
		if (ss->segs[s].min_start < to && ss->segs[s].max_end > from)
			n++;
	return n >= 2;
}

static void scan_ahead(const struct store_set *ss, uint64_t from, uint64_t to,
		       unsigned column, const struct filter *f,
		       struct sink *k, struct scan_stats *st)
{
	struct ahead a = {.ss = ss, .from = from, .to = to, .f = f};
	pthread_t th;
	a.tail = &a.head;
	if (k->stack_ids) {
		a.strs = cpa_strtab_new();
		a.stacks = cpa_stacktab_new();
	}
	pthread_mutex_init(&a.lock, NULL);
	pthread_cond_init(&a.cond, NULL);
	if (pthread_create(&th, NULL, read_ahead, &a)) {
		scan(ss, from, to, column, f, k, st, false);
		goto out;
	}
	for (;;) {
		pthread_mutex_lock(&a.lock);
		while (!a.head && !a.done)
			pthread_cond_wait(&a.cond, &a.lock);
		struct tape *t = a.head;
		if (t) {
			a.head = t->next;
			if (!a.head)
				a.tail = &a.head;
			a.waiting--;
			pthread_cond_broadcast(&a.cond);
		}
		pthread_mutex_unlock(&a.lock);
		if (!t)
			break;
		play(t, column, k, st);
		tape_free(t);
	}
	pthread_join(th, NULL);
out:
	pthread_cond_destroy(&a.cond);
	pthread_mutex_destroy(&a.lock);
	if (a.stacks) {
		cpa_strtab_free(a.strs);
		cpa_stacktab_free(a.stacks);
	}
	free(a.str_ids);
	free(a.frames);
}

void scan_range(const struct store_set *ss, uint64_t from, uint64_t to,
		unsigned column, const struct filter *f, struct sink *k,
		struct scan_stats *st)
{
	/* sums are read in a moment: reading ahead would decode the
	 * blocks of segments that have them */
	if (!takes_sums(k, f) && worth_reading_ahead(ss, from, to))
		scan_ahead(ss, from, to, column, f, k, st);
	else
		scan(ss, from, to, column, f, k, st, false);
}

void scan_held(const struct store_set *ss, uint64_t before, unsigned column,
	       const struct filter *f, struct sink *k)
{
	struct scan_stats st = {0};
	if (before)
		scan(ss, 0, before, column, f, k, &st, true);
}
