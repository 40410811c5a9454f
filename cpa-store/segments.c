/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "config.h"
#include "buf.h"
#include "log.h"
#include "segments.h"

static void lock_store(struct store *st)
{
	const char *dir = st->o->dir;
	if (mkdir(dir, 0750) < 0 && errno != EEXIST)
		cpa_die("%s: %s", dir, strerror(errno));
	char path[4200];
	snprintf(path, sizeof(path), "%s/lock", dir);
	st->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (st->lock_fd < 0)
		cpa_die("%s: %s", path, strerror(errno));
	if (flock(st->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		char pid[32] = "";
		ssize_t k = pread(st->lock_fd, pid, sizeof(pid) - 1, 0);
		if (k > 0)
			pid[strcspn(pid, "\n")] = 0;
		cpa_die("%s is in use by another cpa-store (pid %s, holding "
			"%s); only one may write a store", dir,
			k > 0 ? pid : "unknown", path);
	}
	char line[32];
	int n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (ftruncate(st->lock_fd, 0) < 0 ||
	    pwrite(st->lock_fd, line, (size_t)n, 0) != n)
		cpa_warn("%s: cannot record the pid: %s", path,
			 strerror(errno));
}

static void remove_files(const char *dir, const char *name)
{
	static const char *const files[] = {"meta", "meta.tmp", "index",
					    "dict", "data"};
	char path[4200];
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", dir, name, files[i]);
		if (unlink(path) < 0 && errno != ENOENT)
			cpa_warn("%s: %s", path, strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (rmdir(path) < 0)
		cpa_warn("%s: not removed: %s", path, strerror(errno));
}

/* Deletes a segment: first renamed to its hidden ".NAME.tmp" so that a
 * crash half way leaves nothing a reader would try to read, and the next
 * writer finishes the job (remove_unfinished). */
static void remove_segment_files(const char *dir, const char *name)
{
	char from[4200], to[4200], hidden[CPA_STORE_NAME_MAX + 8];
	snprintf(hidden, sizeof(hidden), ".%s.tmp", name);
	snprintf(from, sizeof(from), "%s/%s", dir, name);
	snprintf(to, sizeof(to), "%s/%s", dir, hidden);
	if (rename(from, to) < 0) {
		cpa_warn("%s: not removed: %s", from, strerror(errno));
		return;
	}
	remove_files(dir, hidden);
}

static void add_old(struct store *st, const char *name, uint64_t bytes,
		    uint64_t max_end)
{
	CPA_GROW(st->old, st->cap_old, st->n_old + 1);
	struct segment_ref *r = &st->old[st->n_old++];
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->bytes = bytes;
	r->max_end = max_end;
}

/* Cuts a file back to its committed length. */
static void cut(const char *path, const char *file, uint64_t len)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", path, file);
	if (truncate(p, (off_t)len) < 0)
		cpa_warn("%s: cannot cut the torn tail: %s", p,
			 strerror(errno));
}

/* A writer that died while creating a segment leaves its hidden
 * ".NAME.tmp" directory: remove it. */
static void remove_unfinished(struct store *st)
{
	DIR *d = opendir(st->o->dir);
	if (!d)
		cpa_die("%s: %s", st->o->dir, strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char name[CPA_STORE_NAME_MAX];
		if (de->d_name[0] != '.' || n < 6 || n - 5 >= sizeof(name) ||
		    strcmp(de->d_name + n - 4, ".tmp"))
			continue;
		memcpy(name, de->d_name + 1, n - 5);
		name[n - 5] = 0;
		if (!cpa_store_is_segment_name(name))
			continue;
		cpa_debug("%s/%s: removing an unfinished segment", st->o->dir,
			  de->d_name);
		remove_files(st->o->dir, de->d_name);
	}
	closedir(d);
}

/* The previous writer may have died mid-commit: keep what its index
 * committed, cut the rest, and drop segments that never committed. */
static void recover(struct store *st)
{
	remove_unfinished(st);
	char **names;
	size_t n;
	char err[512];
	if (cpa_store_list_names(st->o->dir, &names, &n, err, sizeof(err)) < 0)
		cpa_die("%s", err);
	for (size_t i = 0; i < n; i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s", st->o->dir, names[i]);
		struct cpa_segment_info si;
		int r = cpa_segment_info_read(path, &si, err, sizeof(err));
		if (r == -2)
			cpa_die("%s; refusing to write into this store", err);
		if (r < 0) {
			cpa_warn("%s: left alone, not a segment this build can "
				 "read: %s", path, err);
			cpa_segment_info_free(&si);
			continue;
		}
		/* a segment opened to note lost windows has no blocks */
		if (si.n_idx == 0 && !cpa_store_meta_get(si.meta, "lost")) {
			cpa_debug("%s: removing a segment with no commit",
				  path);
			remove_segment_files(st->o->dir, names[i]);
			cpa_segment_info_free(&si);
			continue;
		}
		if (si.torn_bytes)
			cpa_warn("%s: cut a torn tail of %llu index bytes (%s)",
				 path, (unsigned long long)si.torn_bytes,
				 si.torn_why);
		if (si.index_size > si.valid_index)
			cut(path, "index", si.valid_index);
		if (si.dict_size > si.valid_dict)
			cut(path, "dict", si.valid_dict);
		if (si.data_size > si.valid_data)
			cut(path, "data", si.valid_data);
		uint64_t bytes = si.bytes - (si.index_size - si.valid_index) -
				 (si.dict_size - si.valid_dict) -
				 (si.data_size - si.valid_data);
		add_old(st, names[i], bytes,
			si.max_end ? si.max_end : si.start_ns);
		cpa_segment_info_free(&si);
	}
	cpa_store_names_free(names, n);
}

void store_open(struct store *st, const struct store_opts *o)
{
	memset(st, 0, sizeof(*st));
	st->o = o;
	lock_store(st);
	recover(st);
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	int n = snprintf(st->meta_base, sizeof(st->meta_base),
			 "writer=cpa-store %s\nhost=%s\nkernel=%s\n"
			 "segment_ns=%llu\nunits=",
			 PACKAGE_VERSION, u.nodename, u.release,
			 (unsigned long long)o->segment_ns);
	/* The unit of each event kind's weights, for readers of the files */
	for (unsigned k = 0; k < CPA_KIND_COUNT && n > 0 &&
			     (size_t)n < sizeof(st->meta_base); k++)
		n += snprintf(st->meta_base + n, sizeof(st->meta_base) - (size_t)n,
			      "%s%s:%s", k ? "," : "", cpa_kind_name(k),
			      cpa_unit_name(cpa_kind_unit(k)));
	if (n > 0 && (size_t)n < sizeof(st->meta_base) - 1)
		strcat(st->meta_base, "\n");
}

uint64_t store_bytes(const struct store *st)
{
	uint64_t b = st->cur ? cpa_segment_bytes(st->cur) : 0;
	for (size_t i = 0; i < st->n_old; i++)
		b += st->old[i].bytes;
	return b;
}

static char *meta_text(const struct store *st, const struct input *in)
{
	struct cpa_buf b = {0};
	cpa_buf_add(&b, st->meta_base, strlen(st->meta_base));
	cpa_buf_add(&b, in->meta, in->meta_len);
	if (st->n_lost) {
		cpa_buf_add(&b, "lost=", 5);
		cpa_store_lost_format(st->lost, st->n_lost, &b);
		cpa_buf_add(&b, "\n", 1);
	}
	cpa_buf_add(&b, "", 1);
	return (char *)b.p;
}

static void close_current(struct store *st)
{
	if (!st->cur)
		return;
	if (cpa_segment_sync(st->cur) < 0)
		cpa_warn("%s/%s: sync: %s", st->o->dir,
			 cpa_segment_name(st->cur), strerror(errno));
	uint64_t end = cpa_segment_max_end(st->cur);
	if (end || st->n_lost)
		add_old(st, cpa_segment_name(st->cur),
			cpa_segment_bytes(st->cur), end ? end : st->cur_period);
	else
		remove_segment_files(st->o->dir, cpa_segment_name(st->cur));
	cpa_segment_close(st->cur);
	st->cur = NULL;
	st->cover_to = 0;
	st->n_lost = 0;
	/* Ids of the next segment start again from 1. */
	store_forget_input_ids(st);
}

void store_forget_input_ids(struct store *st)
{
	if (st->str_map)
		memset(st->str_map, 0, st->str_map_n * sizeof(*st->str_map));
	if (st->stk_map)
		memset(st->stk_map, 0, st->stk_map_n * sizeof(*st->stk_map));
}

static int open_segment(struct store *st, struct input *in, uint64_t period,
			char *err, size_t errlen)
{
	char *meta = meta_text(st, in);
	for (unsigned seq = 0; seq < 1000; seq++) {
		char name[CPA_STORE_NAME_MAX];
		cpa_store_segment_name(period, seq, name, sizeof(name));
		st->cur = cpa_segment_create(st->o->dir, name, period,
					     st->o->interval_ns, meta, err,
					     errlen);
		if (st->cur) {
			free(meta);
			in->meta_changed = false;
			st->cur_period = period;
			st->segments_created++;
			cpa_debug("new segment %s/%s", st->o->dir, name);
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	int e = errno ? errno : EEXIST;
	free(meta);
	return -e;
}

static uint32_t map_string(struct store *st, const struct input *in,
			   uint32_t id)
{
	if (!id)
		return 0;
	CPA_GROW_ZERO(st->str_map, st->str_map_n, (size_t)id + 1);
	if (!st->str_map[id]) {
		uint32_t len;
		const char *s = input_string(in, id, &len);
		st->str_map[id] = cpa_segment_string(st->cur, s, len);
	}
	return st->str_map[id];
}

static uint32_t map_stack(struct store *st, const struct input *in,
			  uint32_t id)
{
	CPA_GROW_ZERO(st->stk_map, st->stk_map_n, (size_t)id + 1);
	if (!st->stk_map[id]) {
		uint32_t n;
		const uint32_t *f = input_stack(in, id, &n);
		uint32_t frames[CPA_MAX_STACK_DEPTH];
		if (!f)
			n = 0;
		for (uint32_t i = 0; i < n; i++) {
			frames[i] = map_string(st, in, f[i]);
			if (!frames[i])	/* a frame may not be empty */
				frames[i] = cpa_segment_string(
					st->cur, "[unknown]", 9);
		}
		st->stk_map[id] = cpa_segment_stack(st->cur, frames, n);
	}
	return st->stk_map[id];
}

static int window_cmp(const void *a, const void *b)
{
	const struct window *x = *(struct window *const *)a;
	const struct window *y = *(struct window *const *)b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* Appends windows w[0..n-1], all of the current segment, as one block. */
static int append_group(struct store *st, struct input *in, struct window **w,
			size_t n, char *err, size_t errlen)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += w[i]->n;
	if (total > st->pool_cap) {
		st->pool_cap = total;
		st->pool = cpa_realloc(st->pool, total * sizeof(*st->pool));
	}
	if (n > st->batch_cap) {
		st->batch_cap = n;
		st->batch = cpa_realloc(st->batch, n * sizeof(*st->batch));
	}
	size_t nb = 0, used = 0;
	for (size_t i = 0; i < n; i++) {
		/* A late part of a window already queued joins it. */
		if (!nb || st->batch[nb - 1].start_ns != w[i]->start_ns) {
			st->batch[nb] = (struct cpa_store_window){
				.start_ns = w[i]->start_ns,
				.e = st->pool + used,
			};
			nb++;
		}
		struct cpa_store_window *bw = &st->batch[nb - 1];
		for (uint32_t k = 0; k < w[i]->n; k++) {
			const struct wentry *e = &w[i]->e[k];
			struct cpa_store_labelset ls = e->ls;
			ls.comm = map_string(st, in, ls.comm);
			ls.thread = map_string(st, in, ls.thread);
			ls.container = map_string(st, in, ls.container);
			ls.env = map_string(st, in, ls.env);
			bw->e[bw->n++] = (struct cpa_store_entry){
				.labelset = cpa_segment_labelset(st->cur, &ls),
				.stack = map_stack(st, in, e->stack),
				.weight = e->weight,
			};
			used++;
		}
	}
	/* Coverage runs on from the previous block: windows without
	 * samples were watched too. Only a new writer (or segment) starts a
	 * new span, so --list shows the gaps when nothing was recording. */
	uint64_t from = w[0]->start_ns;
	if (st->cover_to && st->cover_to <= from)
		from = st->cover_to;
	uint64_t to = w[n - 1]->start_ns + st->o->interval_ns;
	uint64_t before = cpa_segment_bytes(st->cur);
	int r = cpa_segment_append(st->cur, st->batch, nb, from, to, err,
				   errlen);
	if (!r) {
		st->bytes_written += cpa_segment_bytes(st->cur) - before;
		if (to > st->cover_to)
			st->cover_to = to;
		st->blocks++;
		st->windows += nb;
	}
	return r;
}

/*
 * A segment's dictionaries hold every distinct string and stack of its
 * period, in memory while it is written: on a host of churning programs
 * an hour's grew without bound. Past --max-dict the segment closes and
 * the next one (the same period, the next sequence number) starts with
 * empty dictionaries; readers merge segments of one period as they do
 * after a restart.
 */
static bool dict_full(const struct store *st)
{
	return cpa_segment_dict_bytes(st->cur) > st->o->max_dict;
}

int store_write(struct store *st, struct input *in, struct window **w,
		size_t n, size_t *written, char *err, size_t errlen)
{
	*written = 0;
	qsort(w, n, sizeof(*w), window_cmp);
	const uint64_t seg = st->o->segment_ns;
	/* At most this many windows per block, so that a block stays as
	 * fine-grained for queries when replaying as when live. */
	size_t per_block = (size_t)(st->o->flush_ns / st->o->interval_ns);
	if (per_block < 1)
		per_block = 1;
	size_t i = 0;
	while (i < n) {
		uint64_t period = w[i]->start_ns - w[i]->start_ns % seg;
		/* Windows of a later period, or more than one period
		 * behind, start a new segment; slightly late ones join the
		 * current one. */
		if (st->cur && (period > st->cur_period ||
				period + seg < st->cur_period ||
				dict_full(st))) {
			int r = store_write_lost(st, in, err, errlen);
			if (r)
				return r;
			close_current(st);
		}
		if (!st->cur) {
			int r = open_segment(st, in, period, err, errlen);
			if (r)
				return r;
		}
		if (in->meta_changed) {
			char *meta = meta_text(st, in);
			int r = cpa_segment_write_meta(st->cur, meta, err,
						       errlen);
			free(meta);
			if (r)
				return r;
			in->meta_changed = false;
		}
		size_t j = i + 1, distinct = 1;
		while (j < n) {
			uint64_t p = w[j]->start_ns - w[j]->start_ns % seg;
			if (p > st->cur_period || p + seg < st->cur_period)
				break;
			if (w[j]->start_ns != w[j - 1]->start_ns) {
				if (distinct == per_block)
					break;
				distinct++;
			}
			j++;
		}
		int r = append_group(st, in, w + i, j - i, err, errlen);
		if (r)
			return r;
		i = j;
		*written = i;
	}
	return 0;
}

void store_note_lost(struct store *st, uint64_t time_ns, uint64_t count)
{
	uint64_t from = time_ns - time_ns % st->o->interval_ns;
	cpa_store_lost_add(st->lost, &st->n_lost, from,
			   from + st->o->interval_ns, count);
	st->lost_changed = true;
}

int store_write_lost(struct store *st, struct input *in, char *err,
		     size_t errlen)
{
	if (!st->lost_changed)
		return 0;
	if (!st->cur) {
		uint64_t from = st->lost[0].from;
		int r = open_segment(st, in, from - from % st->o->segment_ns,
				     err, errlen);
		if (r)
			return r;
	}
	char *meta = meta_text(st, in);
	int r = cpa_segment_write_meta(st->cur, meta, err, errlen);
	free(meta);
	if (!r) {
		st->lost_changed = false;
		in->meta_changed = false;
	}
	return r;
}

int store_sync(struct store *st)
{
	return st->cur ? cpa_segment_sync(st->cur) : 0;
}

static void delete_old(struct store *st, size_t i, const char *why)
{
	cpa_debug("deleting segment %s/%s (%s)", st->o->dir, st->old[i].name,
		  why);
	remove_segment_files(st->o->dir, st->old[i].name);
	memmove(st->old + i, st->old + i + 1,
		(st->n_old - i - 1) * sizeof(*st->old));
	st->n_old--;
	st->segments_deleted++;
}

void store_retention(struct store *st, uint64_t now_ns)
{
	const struct store_opts *o = st->o;
	/* Age counts back from the newest data when that is older than the
	 * clock, so an imported recording is not deleted as it is written
	 * and a store left idle keeps its last days. */
	uint64_t newest = st->cur ? cpa_segment_max_end(st->cur) : 0;
	for (size_t i = 0; i < st->n_old; i++)
		if (st->old[i].max_end > newest)
			newest = st->old[i].max_end;
	if (newest && newest < now_ns)
		now_ns = newest;
	if (o->retain_ns && now_ns > o->retain_ns) {
		uint64_t cutoff = now_ns - o->retain_ns;
		for (size_t i = 0; i < st->n_old;) {
			if (st->old[i].max_end <= cutoff)
				delete_old(st, i, "older than --retain");
			else
				i++;
		}
	}
	if (o->max_size) {
		while (st->n_old && store_bytes(st) > o->max_size)
			delete_old(st, 0, "store over --max-size");
	}
}

void store_close(struct store *st)
{
	close_current(st);
	free(st->old);
	free(st->str_map);
	free(st->stk_map);
	free(st->batch);
	free(st->pool);
	if (st->lock_fd >= 0)
		close(st->lock_fd);	/* releases the flock */
}
