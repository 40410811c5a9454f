/* SPDX-License-Identifier: MIT */
/*
 * Following a store. cpa-store appends to one segment at a time and
 * closes it before it creates the next, so a segment that has a later one
 * beside it is complete once its index is read again; the current one is
 * read again every --poll for the blocks committed since. Only committed
 * blocks (an intact index entry) are ever read, so a crash of the writer
 * never shows here.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "store.h"

#include "follow.h"
#include "output.h"
#include "scan.h"

struct follow {
	const struct query_opts *o;
	const char *dir;
	struct stream_sink s;
	struct filter_cache cache;
	const struct cpa_store_dict *d;
	uint64_t interval;
	char seg[CPA_STORE_NAME_MAX];	/* the position: seg, done blocks */
	size_t done;
	bool finished;			/* seg has a later one, all sent */
	bool idle;			/* --once: the newest segment is out */
};

/* Reads a cursor file: "SEGMENT N". Missing: start at the oldest. */
static void read_cursor(struct follow *f, const char *path)
{
	FILE *fp = fopen(path, "re");
	if (!fp) {
		if (errno != ENOENT)
			cpa_die("%s: %s", path, strerror(errno));
		return;
	}
	char line[128], name[CPA_STORE_NAME_MAX + 1] = "";
	unsigned long long n;
	char tail;
	if (!fgets(line, sizeof(line), fp) ||
	    sscanf(line, "%32s %llu%c", name, &n, &tail) != 3 ||
	    tail != '\n' || !cpa_store_is_segment_name(name))
		cpa_die("%s: line 1: expected 'SEGMENT BLOCKS' (a position "
			"cpa-query --follow wrote)", path);
	fclose(fp);
	memcpy(f->seg, name, strlen(name) + 1);	/* checked: it fits */
	f->done = (size_t)n;
}

static int on_window(void *arg, uint64_t start, const struct cpa_store_entry *e,
		     uint32_t n)
{
	struct follow *f = arg;
	const struct filter *flt = &f->o->filter;
	bool filtering = flt->any_label || flt->any_frame;
	/* --from: windows ending before it are not written */
	if (start + f->interval <= f->o->from)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if (filtering && !filter_entry(flt, &f->cache, f->d,
					       e[i].labelset, e[i].stack))
			continue;
		f->s.k.entry(&f->s.k, 0, start, e[i].labelset, e[i].stack,
			     e[i].weight);
	}
	return f->s.w.w.err ? 1 : 0;
}

static void out_failed(struct follow *f)
{
	int e = f->s.w.w.err;
	if (e == EPIPE)		/* the consumer is gone: not an error */
		exit(0);
	cpa_die("<stdout>: %s", strerror(e));
}

static void position(struct follow *f)
{
	char v[CPA_STORE_NAME_MAX + 24];
	snprintf(v, sizeof(v), "%s %zu", f->seg, f->done);
	cpa_write_meta(&f->s.w.w, CPA_META_POSITION, v);
	if (cpa_writer_flush(&f->s.w.w) < 0 || f->s.w.w.err)
		out_failed(f);
}

/*
 * Writes the blocks from f->done on of the segment at path, then keeps
 * reading it again while it is the newest. Returns when a later segment
 * exists and every block of this one has been written.
 */
static void follow_segment(struct follow *f, const char *name)
{
	char path[4200], err[512];
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	struct cpa_segment_info si;
	if (cpa_segment_info_read(path, &si, err, sizeof(err)) < 0) {
		cpa_warn("%s; its blocks are not followed", err);
		cpa_segment_info_free(&si);
		return;
	}
	struct cpa_segment_reader r;
	if (cpa_segment_reader_open(&r, &si, err, sizeof(err)) < 0) {
		cpa_warn("%s; its blocks are not followed", err);
		cpa_segment_info_free(&si);
		return;
	}
	/* The output's dictionary starts over with each segment, so a
	 * stream that runs for months holds one segment's strings. */
	if (f->s.w.strings && cpa_symw_reset(&f->s.w) < 0)
		out_failed(f);
	f->s.k.begin(&f->s.k, &si, &r.dict);
	char iv[32];
	snprintf(iv, sizeof(iv), "%" PRIu64, si.interval_ns);
	cpa_write_meta(&f->s.w.w, CPA_META_INTERVAL_NS, iv);
	f->d = &r.dict;
	f->interval = si.interval_ns;
	filter_cache_reset(&f->cache);
	snprintf(f->seg, sizeof(f->seg), "%s", name);
	for (;;) {
		while (f->done < si.n_idx) {
			const struct cpa_store_index_entry *e = &si.idx[f->done];
			int rr = 0;
			if (e->max_end > f->o->from)
				rr = cpa_segment_reader_block(&r, f->done,
							      on_window, f,
							      err, sizeof(err));
			if (f->s.w.w.err)
				out_failed(f);
			if (rr < 0) {
				cpa_warn("%s; skipping its windows", err);
				if (r.dict_upto <= f->done) {
					cpa_warn("%s: the rest of the segment "
						 "is skipped", path);
					f->done = si.n_idx;
					position(f);
					goto out;
				}
			}
			f->done++;
			position(f);
		}
		/* a later segment: this one is closed; what its index says
		 * now is all it will ever hold */
		char **names;
		size_t nn;
		bool later = false;
		if (cpa_store_list_names(f->dir, &names, &nn, err,
					 sizeof(err)) < 0)
			cpa_die("%s", err);
		for (size_t i = 0; i < nn && !later; i++)
			later = cpa_store_name_cmp(names[i], name) > 0;
		cpa_store_names_free(names, nn);
		if (!later && f->o->once) {
			f->idle = true;	/* all the store holds now is out */
			break;
		}
		if (!later) {
			struct timespec ts = {
				.tv_sec = (time_t)(f->o->poll_ns / 1000000000),
				.tv_nsec = (long)(f->o->poll_ns % 1000000000),
			};
			nanosleep(&ts, NULL);
		}
		struct cpa_segment_info again;
		int rr = cpa_segment_info_read(path, &again, err, sizeof(err));
		if (rr < 0) {
			cpa_segment_info_free(&again);
			if (si.n_idx > f->done || !later)
				cpa_warn("%s: gone before it was followed to "
					 "its end (store retention?)", path);
			break;
		}
		if (again.n_idx < si.n_idx) {	/* cut back by a recovery */
			cpa_warn("%s: index shrank from %zu to %zu blocks",
				 path, si.n_idx, again.n_idx);
		}
		/* the reader keeps its dictionary; only the index grew */
		cpa_segment_info_free(&si);
		si = again;
		if (later && f->done >= si.n_idx)
			break;
	}
out:
	cpa_segment_reader_close(&r);
	cpa_segment_info_free(&si);
	filter_cache_reset(&f->cache);
}

int follow_run(const struct query_opts *o, int fd)
{
	struct follow f = { .o = o, .dir = o->dirs[0] };
	if (o->cursor)
		read_cursor(&f, o->cursor);
	/* the stream meta of the newest segment, read quietly: its tail is
	 * being written */
	struct store_set ss = {0};
	struct cpa_segment_info newest;
	char **names, err[512];
	size_t nn;
	if (cpa_store_list_names(f.dir, &names, &nn, err, sizeof(err)) < 0)
		cpa_die("%s", err);
	if (nn) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", f.dir, names[nn - 1]);
		if (cpa_segment_info_read(path, &newest, err, sizeof(err)) == 0) {
			ss.segs = &newest;
			ss.n = 1;
			ss.interval_ns = newest.interval_ns;
		} else {
			cpa_segment_info_free(&newest);
		}
	}
	cpa_store_names_free(names, nn);
	signal(SIGPIPE, SIG_IGN);
	if (stream_sink_init(&f.s, fd, &ss) < 0)
		cpa_die("<stdout>: %s", strerror(errno));
	if (ss.n)
		cpa_segment_info_free(&newest);
	if (f.seg[0])
		position(&f);
	for (;;) {
		if (cpa_store_list_names(f.dir, &names, &nn, err,
					 sizeof(err)) < 0)
			cpa_die("%s", err);
		/* the first segment at or after the position */
		char next[CPA_STORE_NAME_MAX] = "";
		for (size_t i = 0; i < nn; i++) {
			int c = f.seg[0] ? cpa_store_name_cmp(names[i], f.seg)
					 : 1;
			if (c > 0 || (c == 0 && !f.finished)) {
				snprintf(next, sizeof(next), "%s", names[i]);
				if (c > 0)
					f.done = 0;
				break;
			}
		}
		cpa_store_names_free(names, nn);
		if (next[0]) {
			/* returns once a later segment exists */
			follow_segment(&f, next);
			if (f.idle)
				break;
			snprintf(f.seg, sizeof(f.seg), "%s", next);
			f.finished = true;
			continue;
		}
		if (o->once)
			break;
		struct timespec ts = {
			.tv_sec = (time_t)(o->poll_ns / 1000000000),
			.tv_nsec = (long)(o->poll_ns % 1000000000),
		};
		nanosleep(&ts, NULL);
	}
	int r = stream_sink_finish(&f.s);
	if (r < 0 && r != -EPIPE)
		cpa_die("<stdout>: %s", strerror(-r));
	return 0;
}
