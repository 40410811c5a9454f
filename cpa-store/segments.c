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
#include "hash.h"
#include "log.h"
#include "segments.h"
#include "timeparse.h"

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
					    "dict", "data", "sums"};
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
	cpa_htab_init(&st->budget_index, 64);
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
	/* What the store itself records comes before the stream's meta,
	 * and every part is bounded (lost runs, the stream's keys), so the
	 * whole stays under what a reader takes (CPA_STORE_META_MAX). */
	cpa_buf_add(&b, st->meta_base, strlen(st->meta_base));
	if (st->n_lost) {
		cpa_buf_add(&b, "lost=", 5);
		cpa_store_lost_format(st->lost, st->n_lost, &b);
		cpa_buf_add(&b, "\n", 1);
	}
	if (st->n_over) {
		cpa_buf_add(&b, "over_budget=", 12);
		cpa_store_over_format(st->over, st->n_over, &b);
		cpa_buf_add(&b, "\n", 1);
	}
	input_meta_text(in, &b);
	cpa_buf_add(&b, "", 1);
	return (char *)b.p;
}

/* Closes the current segment. keep_notes: its lost windows and processes
 * over budget could not be written into its meta, and go into the next
 * one's (readers join the notes of all segments). */
static void close_current(struct store *st, bool keep_notes)
{
	if (!st->cur)
		return;
	if (cpa_segment_sync(st->cur) < 0)
		cpa_warn("%s/%s: sync: %s", st->o->dir,
			 cpa_segment_name(st->cur), strerror(errno));
	uint64_t end = cpa_segment_max_end(st->cur);
	if (end || st->n_lost || st->n_over)
		add_old(st, cpa_segment_name(st->cur),
			cpa_segment_bytes(st->cur), end ? end : st->cur_period);
	else
		remove_segment_files(st->o->dir, cpa_segment_name(st->cur));
	cpa_segment_close(st->cur);
	st->cur = NULL;
	st->cover_to = 0;
	if (!keep_notes) {
		st->n_lost = 0;
		st->n_over = 0;
	}
	/* a new segment names everything again: every budget is full */
	st->n_budgets = 0;
	cpa_htab_clear(&st->budget_index);
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

/*
 * What one process may add to one window: --max-process-stacks stacks
 * new to the segment, and names and stacks new to it within its budget
 * (--max-process-bytes a window, saved up to BUDGET_WINDOWS windows'
 * worth). Past that, each of its stacks is stored as one "[over budget]"
 * stack under the same labels with the same weight: the totals stay
 * true, the detail is what a flood of never-repeating names loses, and it
 * cannot push others' history out of a store of bounded size.
 */
/* A process's budget saves up to this many windows' worth of
 * --max-process-bytes: a program starting up names its code at once. */
#define BUDGET_WINDOWS 16

/* Forgets processes whose budget has been full for a while: a budget
 * refills by itself, so one not charged for BUDGET_WINDOWS windows is
 * the same as none. */
static void budgets_sweep(struct store *st)
{
	uint64_t idle = BUDGET_WINDOWS * st->o->interval_ns;
	size_t k = 1;
	cpa_htab_clear(&st->budget_index);
	for (size_t i = 1; i < st->n_budgets; i++) {
		struct proc_budget *b = &st->budgets[i];
		if (b->window + idle < st->newest_window)
			continue;
		st->budgets[k] = *b;
		struct cpa_htab_probe pr;
		uint32_t pid = b->pid;
		for (uint32_t id = cpa_htab_first(&st->budget_index,
						  cpa_hash(&pid, 4, 0), &pr);
		     id; id = cpa_htab_next(&st->budget_index, &pr))
			;
		cpa_htab_add(&st->budget_index, &pr, (uint32_t)k);
		k++;
	}
	st->n_budgets = k;
}

/* The budget of pid for the window starting at start, refilled for the
 * windows since it was last charged. */
static struct proc_budget *budget_of(struct store *st, uint32_t pid,
				     uint64_t start)
{
	const uint64_t rate = st->o->max_proc_bytes;
	const uint64_t full = rate * BUDGET_WINDOWS;
	struct cpa_htab_probe pr;
	uint64_t h = cpa_hash(&pid, 4, 0);
	if (start > st->newest_window)
		st->newest_window = start;
	for (uint32_t id = cpa_htab_first(&st->budget_index, h, &pr); id;
	     id = cpa_htab_next(&st->budget_index, &pr)) {
		struct proc_budget *b = &st->budgets[id];
		if (b->pid != pid)
			continue;
		/* a late part of an older window counts with the newest */
		if (start > b->window) {
			uint64_t windows = (start - b->window) /
					   st->o->interval_ns;
			b->bytes = windows >= BUDGET_WINDOWS ||
						   b->bytes + windows * rate > full
					   ? full
					   : b->bytes + windows * rate;
			b->window = start;
			b->stacks = 0;
			b->added = 0;
		}
		return b;
	}
	if (st->n_budgets > 4096 && st->n_budgets == st->cap_budgets) {
		budgets_sweep(st);
		cpa_htab_first(&st->budget_index, h, &pr);
		while (cpa_htab_next(&st->budget_index, &pr))
			;
	}
	if (!st->n_budgets)
		st->n_budgets = 1;
	CPA_GROW(st->budgets, st->cap_budgets, st->n_budgets + 1);
	uint32_t id = (uint32_t)st->n_budgets++;
	st->budgets[id] = (struct proc_budget){.pid = pid, .window = start,
					       .bytes = full};
	cpa_htab_add(&st->budget_index, &pr, id);
	return &st->budgets[id];
}

static bool string_mapped(const struct store *st, uint32_t id)
{
	return !id || (id < st->str_map_n && st->str_map[id]);
}

/* A stack the segment holds adds nothing: only new ones are counted, so
 * that an input renumbering its stacks (a reset) is not charged again. */
static bool within_budget(const struct store_opts *o,
			  const struct proc_budget *pb, uint64_t cost)
{
	if (!cost)
		return true;
	return (!o->max_proc_stacks || pb->stacks < o->max_proc_stacks) &&
	       (!o->max_proc_bytes || cost <= pb->bytes);
}

/* Whether the segment holds input string id already. One the input
 * renumbered (a reset of its dictionaries) is found by its content and
 * mapped at no cost: a reset must not charge a process again for names
 * the segment has. */
static bool string_known(struct store *st, const struct input *in,
			 uint32_t id)
{
	if (string_mapped(st, id))
		return true;
	uint32_t len;
	const char *s = input_string(in, id, &len);
	uint32_t sid = s ? cpa_segment_find_string(st->cur, s, len) : 0;
	if (!sid)
		return false;
	CPA_GROW_ZERO(st->str_map, st->str_map_n, (size_t)id + 1);
	st->str_map[id] = sid;
	return true;
}

/* Whether the segment holds input stack id already, by content when the
 * input renumbered it; its strings are known (string_known). */
static bool stack_known(struct store *st, const uint32_t *f, uint32_t n)
{
	uint32_t frames[CPA_MAX_STACK_DEPTH];
	if (n > CPA_MAX_STACK_DEPTH)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		frames[i] = f[i] ? st->str_map[f[i]] : 0;
		if (!frames[i])	/* as map_stack writes an empty frame */
			frames[i] = cpa_segment_find_string(st->cur,
							    "[unknown]", 9);
		if (!frames[i])
			return false;
	}
	return cpa_segment_find_stack(st->cur, frames, n) != 0;
}

/* Bytes the dictionary of the segment grows by when it takes the input
 * stack id: its new strings, and the stack when it is new. */
static uint64_t stack_cost(struct store *st, const struct input *in,
			   uint32_t id)
{
	if (id < st->stk_map_n && st->stk_map[id])
		return 0;
	uint32_t n = 0, len;
	const uint32_t *f = input_stack(in, id, &n);
	if (!f)
		n = 0;
	uint64_t cost = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!string_known(st, in, f[i]) &&
		    input_string(in, f[i], &len))
			cost += len + 2;
	if (!cost && stack_known(st, f, n))
		return 0;
	return cost + 2 + 2 * (uint64_t)n;
}

static uint32_t over_budget(struct store *st, const struct input *in,
			    const struct wentry *e, uint64_t cost)
{
	uint32_t len = 0;
	const char *comm = e->ls.comm ? input_string(in, e->ls.comm, &len)
				      : NULL;
	char name[64];
	snprintf(name, sizeof(name), "%.*s", comm ? (int)len : 0,
		 comm ? comm : "");
	if (cpa_store_over_add(st->over, &st->n_over, e->ls.pid, name, 1,
			       cost))
		cpa_warn("pid %u (%s): over the budget of one process in one "
			 "window (--max-process-stacks %llu, "
			 "--max-process-bytes %llu); its further stacks in "
			 "%s/%s are stored as [over budget], their weight kept",
			 e->ls.pid, name,
			 (unsigned long long)st->o->max_proc_stacks,
			 (unsigned long long)st->o->max_proc_bytes, st->o->dir,
			 cpa_segment_name(st->cur));
	st->over_changed = true;
	st->over_stacks++;
	st->over_bytes += cost;
	uint32_t f = cpa_segment_string(st->cur, "[over budget]", 13);
	return cpa_segment_stack(st->cur, &f, 1);
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
		/* an import of folded text is the user's own: no budget */
		bool budget = !in->folded && (st->o->max_proc_bytes ||
					      st->o->max_proc_stacks);
		for (uint32_t k = 0; k < w[i]->n; k++) {
			const struct wentry *e = &w[i]->e[k];
			struct cpa_store_labelset ls = e->ls;
			ls.comm = map_string(st, in, ls.comm);
			ls.thread = map_string(st, in, ls.thread);
			ls.container = map_string(st, in, ls.container);
			ls.env = map_string(st, in, ls.env);
			uint32_t stack;
			if (!budget) {
				stack = map_stack(st, in, e->stack);
			} else {
				struct proc_budget *pb = budget_of(
					st, e->ls.pid, w[i]->start_ns);
				uint64_t cost = stack_cost(st, in, e->stack);
				if (within_budget(st->o, pb, cost)) {
					stack = map_stack(st, in, e->stack);
					pb->stacks += cost != 0;
					pb->bytes -= st->o->max_proc_bytes ? cost : 0;
					pb->added += cost;
					if (pb->added > st->proc_window_max)
						st->proc_window_max = pb->added;
				} else {
					stack = over_budget(st, in, e, cost);
				}
			}
			bw->e[bw->n++] = (struct cpa_store_entry){
				.labelset = cpa_segment_labelset(st->cur, &ls),
				.stack = stack,
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
	if (per_block < 1 || st->failed)
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
			close_current(st, false);
		}
		/* After a failed write (a full disk) the dictionary entries of
		 * every window tried stay pending in the segment writer, those
		 * of windows the backlog dropped since included, and the next
		 * block would carry them all: larger than the space that comes
		 * back, it would never fit. A new segment holds only what the
		 * windows written from now on name, one window a block until a
		 * write succeeds. */
		if (st->cur && st->failed) {
			bool kept = store_write_lost(st, in, err, errlen) == 0;
			close_current(st, !kept);
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
		st->failed = r != 0;
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
	if (!st->lost_changed && !st->over_changed)
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
		st->over_changed = false;
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
		while (st->n_old && store_bytes(st) > o->max_size) {
			/* history that --retain would keep: the store is too
			 * small for what comes in, or something floods it */
			if (o->retain_ns && st->old[0].max_end + o->retain_ns >
						     now_ns) {
				char t[40];
				cpa_format_time(st->old[0].max_end, t, sizeof(t));
				cpa_warn("%s/%s: deleted with history up to %s, "
					 "younger than --retain: the store is "
					 "over --max-size (%llu bytes)", o->dir,
					 st->old[0].name, t,
					 (unsigned long long)o->max_size);
				st->segments_deleted_early++;
			}
			delete_old(st, 0, "store over --max-size");
		}
	}
}

void store_close(struct store *st)
{
	close_current(st, false);
	free(st->old);
	free(st->str_map);
	free(st->stk_map);
	free(st->batch);
	free(st->pool);
	free(st->budgets);
	cpa_htab_free(&st->budget_index);
	if (st->lock_fd >= 0)
		close(st->lock_fd);	/* releases the flock */
}
