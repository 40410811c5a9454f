/* SPDX-License-Identifier: MIT */
/*
 * Segment writer. A segment's files only ever grow by whole commits: the
 * dictionary block, the data block, its sums block, then the index entry
 * that makes them visible. Writes go to the committed lengths with pwrite, so after a
 * failure (a full disk) the files are cut back and the same windows can be
 * written again later without a hole or a duplicate.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* renameat2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"
#include "htab.h"
#include "intern.h"
#include "io.h"
#include "log.h"
#include "store.h"
#include "timeparse.h"

#define ZSTD_LEVEL 3

struct cpa_segment_writer {
	char *path;
	char name[CPA_STORE_NAME_MAX];
	int dirfd;
	int fd[4];
	uint64_t len[4];	/* committed length of each file */
	uint64_t meta_bytes;
	uint64_t start_ns, interval_ns;
	uint64_t min_start, max_end;

	struct cpa_strtab *strings;
	struct cpa_stacktab *stacks;
	struct cpa_store_labelset *ls;	/* ls[1..nls-1] */
	uint32_t nls, capls;
	struct cpa_htab ls_index;	/* labelset hash -> id */
	/* Ids up to these are in the dict file; later ones are pending. */
	uint32_t saved_strings, saved_stacks, saved_labelsets;

	/* sums: the side of each stack (0 not known yet, 1 user, 2
	 * kernel), and a window's totals with their keys' table */
	uint8_t *side;
	size_t capside;
	struct cpa_store_sum *tot;
	size_t captot;
	struct cpa_htab tot_index;

	struct cpa_buf raw, dict_block, data_block, sums_block;
};
#define NFILES 4


static int write_meta(struct cpa_segment_writer *sw, const char *extra,
		      char *err, size_t errlen)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "format=%d.%d\nsegment_start_ns=%llu\n"
			 "interval_ns=%llu\ncreated_ns=%llu\n",
			 CPA_STORE_MAJOR, CPA_STORE_MINOR,
			 (unsigned long long)sw->start_ns,
			 (unsigned long long)sw->interval_ns,
			 (unsigned long long)cpa_now_ns());
	size_t elen = extra ? strlen(extra) : 0;
	if ((size_t)n + elen > CPA_STORE_META_MAX) {
		/* the writer bounds what it gives; if it still did not fit,
		 * whole lines go, never half of one */
		elen = CPA_STORE_META_MAX - (size_t)n;
		while (elen && extra[elen - 1] != '\n')
			elen--;
		cpa_warn("%s/meta: %zu bytes over %u, cut", sw->path,
			 (size_t)n + strlen(extra) - CPA_STORE_META_MAX,
			 CPA_STORE_META_MAX);
	}
	int fd = openat(sw->dirfd, "meta.tmp",
			O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return cpa_fail_errno(err, errlen, errno, "%s/meta.tmp", sw->path);
	int r = cpa_pwrite_full(fd, head, (size_t)n, 0);
	if (!r && elen)
		r = cpa_pwrite_full(fd, extra, elen, (uint64_t)n);
	if (!r && fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	if (!r && renameat(sw->dirfd, "meta.tmp", sw->dirfd, "meta") < 0)
		r = -errno;
	if (r) {
		unlinkat(sw->dirfd, "meta.tmp", 0);
		return cpa_fail_errno(err, errlen, -r, "%s/meta", sw->path);
	}
	sw->meta_bytes = (uint64_t)n + elen;
	return 0;
}

int cpa_segment_write_meta(struct cpa_segment_writer *sw,
			   const char *meta_extra, char *err, size_t errlen)
{
	return write_meta(sw, meta_extra, err, errlen);
}

struct cpa_segment_writer *cpa_segment_create(const char *dir,
					      const char *name,
					      uint64_t start_ns,
					      uint64_t interval_ns,
					      const char *meta_extra,
					      char *err, size_t errlen)
{
	struct cpa_segment_writer *sw = cpa_calloc(1, sizeof(*sw));
	size_t plen = strlen(dir) + strlen(name) + 8;
	sw->path = cpa_malloc(plen);
	snprintf(sw->path, plen, "%s/%s", dir, name);
	/* The segment is made under a hidden name and renamed into place
	 * whole, so readers never meet a half-made one. */
	char *tmp = cpa_malloc(plen);
	snprintf(tmp, plen, "%s/.%s.tmp", dir, name);
	snprintf(sw->name, sizeof(sw->name), "%s", name);
	sw->start_ns = start_ns;
	sw->interval_ns = interval_ns;
	sw->dirfd = -1;
	for (int i = 0; i < NFILES; i++)
		sw->fd[i] = -1;
	int e = 0;

	if (access(sw->path, F_OK) == 0) {
		e = EEXIST;
		cpa_fail_errno(err, errlen, e, "%s", sw->path);
		goto fail_nodir;
	}
	if (mkdir(tmp, 0750) < 0) {
		e = errno;
		cpa_fail_errno(err, errlen, e, "%s", tmp);
		goto fail_nodir;
	}
	sw->dirfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sw->dirfd < 0) {
		e = errno;
		cpa_fail_errno(err, errlen, e, "%s", tmp);
		goto fail;
	}
	for (int i = 0; i < NFILES; i++) {
		const char *fname = cpa_store_file_names[i];
		sw->fd[i] = openat(sw->dirfd, fname,
				   O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		uint8_t h[CPA_STORE_FILE_HEADER];
		cpa_store_header_encode(h, (enum cpa_store_file)i, interval_ns,
					start_ns);
		int r = sw->fd[i] < 0 ? -errno
				      : cpa_pwrite_full(sw->fd[i], h, sizeof(h), 0);
		if (r) {
			e = -r;
			cpa_fail_errno(err, errlen, e, "%s/%s", sw->path, fname);
			goto fail;
		}
		sw->len[i] = CPA_STORE_FILE_HEADER;
	}
	int r = write_meta(sw, meta_extra, err, errlen);
	if (r) {
		e = -r;
		goto fail;
	}
	/* renameat2 without replacing: a segment of that name made since
	 * the check above wins, and the caller picks the next name. */
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, sw->path, RENAME_NOREPLACE) < 0) {
		e = errno;
		cpa_fail_errno(err, errlen, e, "%s", sw->path);
		goto fail;
	}
	/* Make the new directory entry durable along with its files. */
	int parent = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent >= 0) {
		fsync(parent);
		close(parent);
	}
	free(tmp);

	sw->strings = cpa_strtab_new();
	sw->stacks = cpa_stacktab_new();
	sw->capls = 64;
	sw->ls = cpa_calloc(sw->capls, sizeof(*sw->ls));
	sw->nls = 1;
	cpa_htab_init(&sw->ls_index, 64);
	cpa_htab_init(&sw->tot_index, 16);
	return sw;

fail:
	/* Leave nothing half-made behind: the directory was ours. */
	for (int i = 0; i < NFILES; i++) {
		if (sw->fd[i] >= 0)
			close(sw->fd[i]);
		if (sw->dirfd >= 0)
			unlinkat(sw->dirfd, cpa_store_file_names[i], 0);
	}
	if (sw->dirfd >= 0) {
		unlinkat(sw->dirfd, "meta", 0);
		unlinkat(sw->dirfd, "meta.tmp", 0);
		close(sw->dirfd);
	}
	rmdir(tmp);
fail_nodir:
	free(tmp);
	free(sw->path);
	free(sw);
	errno = e;
	return NULL;
}

uint32_t cpa_segment_string(struct cpa_segment_writer *sw, const char *s,
			    size_t len)
{
	if (!len)
		return 0;
	bool is_new;
	return cpa_strtab_intern(sw->strings, s, len, &is_new);
}

uint32_t cpa_segment_stack(struct cpa_segment_writer *sw,
			   const uint32_t *frames, uint32_t n)
{
	bool is_new;
	return cpa_stacktab_intern(sw->stacks, frames, n, &is_new);
}

uint32_t cpa_segment_find_string(const struct cpa_segment_writer *sw,
				 const char *s, size_t len)
{
	return len ? cpa_strtab_find(sw->strings, s, len) : 0;
}

uint32_t cpa_segment_find_stack(const struct cpa_segment_writer *sw,
				const uint32_t *frames, uint32_t n)
{
	return cpa_stacktab_find(sw->stacks, frames, n);
}

static uint64_t ls_hash(const struct cpa_store_labelset *ls)
{
	uint64_t words[6] = {
		ls->cgroup_id,
		(uint64_t)ls->pid << 32 | ls->tid,
		(uint64_t)ls->cpu << 32 | (uint64_t)ls->kind << 16 | ls->flags,
		(uint64_t)ls->comm << 32 | ls->thread,
		(uint64_t)ls->container << 32 | ls->env,
		0,
	};
	return cpa_hash(words, sizeof(words), 0x5eed);
}

static bool ls_equal(const struct cpa_store_labelset *a,
		     const struct cpa_store_labelset *b)
{
	return a->cgroup_id == b->cgroup_id && a->pid == b->pid &&
	       a->tid == b->tid && a->cpu == b->cpu && a->kind == b->kind &&
	       a->flags == b->flags && a->comm == b->comm &&
	       a->thread == b->thread && a->container == b->container &&
	       a->env == b->env;
}

uint32_t cpa_segment_labelset(struct cpa_segment_writer *sw,
			      const struct cpa_store_labelset *ls)
{
	struct cpa_htab_probe pr;
	for (uint32_t id = cpa_htab_first(&sw->ls_index, ls_hash(ls), &pr); id;
	     id = cpa_htab_next(&sw->ls_index, &pr))
		if (ls_equal(&sw->ls[id], ls))
			return id;
	CPA_GROW(sw->ls, sw->capls, (size_t)sw->nls + 1);
	uint32_t id = sw->nls++;
	sw->ls[id] = *ls;
	cpa_htab_add(&sw->ls_index, &pr, id);
	return id;
}

/* New dictionary entries since the last commit, as a raw dict block;
 * returns false when there is nothing new. */
static bool encode_dict(struct cpa_segment_writer *sw,
			struct cpa_buf *b)
{
	uint32_t nstr = cpa_strtab_count(sw->strings);
	uint32_t nstk = cpa_stacktab_count(sw->stacks);
	if (nstr == sw->saved_strings && nstk == sw->saved_stacks &&
	    sw->nls - 1 == sw->saved_labelsets)
		return false;
	b->len = 0;
	cpa_buf_uleb128(b, sw->saved_strings + 1);
	cpa_buf_uleb128(b, nstr - sw->saved_strings);
	for (uint32_t id = sw->saved_strings + 1; id <= nstr; id++) {
		uint32_t len;
		const char *s = cpa_strtab_get(sw->strings, id, &len);
		cpa_buf_uleb128(b, len);
		cpa_buf_add(b, s, len);
	}
	cpa_buf_uleb128(b, sw->saved_stacks + 1);
	cpa_buf_uleb128(b, nstk - sw->saved_stacks);
	for (uint32_t id = sw->saved_stacks + 1; id <= nstk; id++) {
		uint32_t n;
		const uint32_t *f = cpa_stacktab_get(sw->stacks, id, &n);
		cpa_buf_uleb128(b, n);
		for (uint32_t k = 0; k < n; k++)
			cpa_buf_uleb128(b, f[k]);
	}
	cpa_buf_uleb128(b, sw->saved_labelsets + 1);
	cpa_buf_uleb128(b, sw->nls - 1 - sw->saved_labelsets);
	for (uint32_t id = sw->saved_labelsets + 1; id < sw->nls; id++) {
		const struct cpa_store_labelset *ls = &sw->ls[id];
		cpa_buf_uleb128(b, ls->kind);
		cpa_buf_uleb128(b, ls->flags);
		cpa_buf_uleb128(b, ls->pid);
		cpa_buf_uleb128(b, ls->tid);
		cpa_buf_uleb128(b, ls->cpu);
		cpa_buf_uleb128(b, ls->cgroup_id);
		cpa_buf_uleb128(b, ls->comm);
		cpa_buf_uleb128(b, ls->thread);
		cpa_buf_uleb128(b, ls->container);
		cpa_buf_uleb128(b, ls->env);
	}
	return true;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct cpa_store_entry *x = a, *y = b;
	if (x->labelset != y->labelset)
		return x->labelset < y->labelset ? -1 : 1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static int window_cmp(const void *a, const void *b)
{
	const struct cpa_store_window *x = a, *y = b;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void encode_windows(struct cpa_buf *b,
			   struct cpa_store_window *w, size_t n)
{
	b->len = 0;
	cpa_buf_uleb128(b, n);
	uint64_t prev = w[0].start_ns;
	for (size_t i = 0; i < n; i++) {
		qsort(w[i].e, w[i].n, sizeof(*w[i].e), entry_cmp);
		cpa_buf_uleb128(b, w[i].start_ns - prev);
		prev = w[i].start_ns;
		/* Equal (labelset, stack) pairs are merged as they go. */
		size_t count_at = b->len;
		uint32_t m = 0;
		cpa_buf_uleb128(b, 0);	/* placeholder, fixed below */
		size_t body_at = b->len;
		uint32_t ls = 0, st = 0;
		for (uint32_t k = 0; k < w[i].n; k++) {
			const struct cpa_store_entry *e = &w[i].e[k];
			uint64_t weight = e->weight;
			while (k + 1 < w[i].n &&
			       w[i].e[k + 1].labelset == e->labelset &&
			       w[i].e[k + 1].stack == e->stack)
				weight += w[i].e[++k].weight;
			if (e->labelset != ls) {
				cpa_buf_uleb128(b, e->labelset - ls);
				cpa_buf_uleb128(b, e->stack);
			} else {
				cpa_buf_uleb128(b, 0);
				cpa_buf_uleb128(b, e->stack - st);
			}
			ls = e->labelset;
			st = e->stack;
			cpa_buf_uleb128(b, weight);
			m++;
		}
		/* Rewrite the count in front of the entries now that it is
		 * known: shift the body when its varint needs more bytes. */
		uint8_t tmp[CPA_LEB128_MAX];
		size_t tl = cpa_put_uleb128(tmp, m);
		size_t body = b->len - body_at;
		cpa_buf_reserve(b, tl);
		memmove(b->p + count_at + tl, b->p + body_at, body);
		memcpy(b->p + count_at, tmp, tl);
		b->len = count_at + tl + body;
	}
}

/* 1 user, 2 kernel: by the stack's leaf frame, as the trend tells them. */
static uint8_t stack_side(struct cpa_segment_writer *sw, uint32_t stack)
{
	CPA_GROW_ZERO(sw->side, sw->capside, (size_t)stack + 1);
	if (!sw->side[stack]) {
		uint32_t n, len = 0;
		const uint32_t *f = cpa_stacktab_get(sw->stacks, stack, &n);
		const char *leaf = n ? cpa_strtab_get(sw->strings, f[n - 1], &len)
				     : NULL;
		sw->side[stack] = cpa_frame_is_kernel(leaf, len) ? 2 : 1;
	}
	return sw->side[stack];
}

/* The sums block of windows w[0..n) (entries sorted by encode_windows):
 * each window's totals in the order their keys first appear. */
static void encode_sums(struct cpa_segment_writer *sw, struct cpa_buf *b,
			const struct cpa_store_window *w, size_t n)
{
	b->len = 0;
	cpa_buf_uleb128(b, n);
	uint64_t prev = w[0].start_ns;
	for (size_t i = 0; i < n; i++) {
		cpa_buf_uleb128(b, w[i].start_ns - prev);
		prev = w[i].start_ns;
		uint32_t nt = 0;
		cpa_htab_clear(&sw->tot_index);
		for (uint32_t k = 0; k < w[i].n; k++) {
			const struct cpa_store_entry *e = &w[i].e[k];
			const struct cpa_store_labelset *ls = &sw->ls[e->labelset];
			struct cpa_store_sum key = {
				.kind = ls->kind,
				.flags = ls->flags & CPA_SAMPLE_FLAGS,
				.kernel = stack_side(sw, e->stack) == 2,
			};
			uint64_t word = (uint64_t)key.kind << 32 |
					(uint64_t)key.flags << 1 | key.kernel;
			struct cpa_htab_probe pr;
			uint32_t id;
			for (id = cpa_htab_first(&sw->tot_index,
						 cpa_hash(&word, sizeof(word), 7),
						 &pr);
			     id; id = cpa_htab_next(&sw->tot_index, &pr))
				if (sw->tot[id - 1].kind == key.kind &&
				    sw->tot[id - 1].flags == key.flags &&
				    sw->tot[id - 1].kernel == key.kernel)
					break;
			if (!id) {
				CPA_GROW(sw->tot, sw->captot, (size_t)nt + 1);
				sw->tot[nt++] = key;
				id = nt;
				cpa_htab_add(&sw->tot_index, &pr, id);
			}
			sw->tot[id - 1].weight += e->weight;
		}
		cpa_buf_uleb128(b, nt);
		for (uint32_t t = 0; t < nt; t++) {
			cpa_buf_uleb128(b, sw->tot[t].kind);
			cpa_buf_uleb128(b, sw->tot[t].flags);
			cpa_buf_uleb128(b, sw->tot[t].kernel);
			cpa_buf_uleb128(b, sw->tot[t].weight);
		}
	}
}

int cpa_segment_append(struct cpa_segment_writer *sw,
		       struct cpa_store_window *w, size_t n,
		       uint64_t cover_from, uint64_t cover_to, char *err,
		       size_t errlen)
{
	if (!n)
		return 0;
	qsort(w, n, sizeof(*w), window_cmp);
	for (size_t i = 0; i < n; i++)
		if (!w[i].n || (i && w[i].start_ns == w[i - 1].start_ns)) {
			snprintf(err, errlen, "%s: internal error: empty or "
				 "repeated window", sw->path);
			return -EINVAL;
		}

	struct cpa_store_index_entry ie = {0};
	ie.n_windows = (uint32_t)n;
	ie.min_start = w[0].start_ns;
	ie.max_end = w[n - 1].start_ns + sw->interval_ns;
	ie.cover_to = cover_to > ie.max_end ? cover_to : ie.max_end;
	ie.cover_from = cover_from < ie.min_start ? cover_from : ie.min_start;

	sw->dict_block.len = 0;
	char why[160];
	if (encode_dict(sw, &sw->raw) &&
	    cpa_store_block_pack(&sw->dict_block, sw->raw.p, sw->raw.len,
				 ZSTD_LEVEL, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s/dict: %s", sw->path, why);
		return -EINVAL;
	}
	encode_windows(&sw->raw, w, n);
	sw->data_block.len = 0;
	if (cpa_store_block_pack(&sw->data_block, sw->raw.p, sw->raw.len,
				 ZSTD_LEVEL, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s/data: %s", sw->path, why);
		return -EINVAL;
	}
	encode_sums(sw, &sw->raw, w, n);
	sw->sums_block.len = 0;
	cpa_store_sums_block(&sw->sums_block, sw->raw.p, sw->raw.len);
	ie.dict_off = sw->len[CPA_STORE_DICT];
	ie.dict_len = (uint32_t)sw->dict_block.len;
	ie.data_off = sw->len[CPA_STORE_DATA];
	ie.data_len = (uint32_t)sw->data_block.len;
	uint8_t entry[CPA_STORE_INDEX_ENTRY];
	cpa_store_index_encode(entry, &ie);

	int r = 0;
	enum cpa_store_file at = CPA_STORE_DICT;
	if (ie.dict_len)
		r = cpa_pwrite_full(sw->fd[at], sw->dict_block.p, ie.dict_len,
			       ie.dict_off);
	if (!r) {
		at = CPA_STORE_DATA;
		r = cpa_pwrite_full(sw->fd[at], sw->data_block.p, ie.data_len,
			       ie.data_off);
	}
	if (!r) {
		at = CPA_STORE_SUMS;
		r = cpa_pwrite_full(sw->fd[at], sw->sums_block.p,
				    sw->sums_block.len, sw->len[at]);
	}
	if (!r) {
		at = CPA_STORE_INDEX;
		r = cpa_pwrite_full(sw->fd[at], entry, sizeof(entry),
			       sw->len[at]);
	}
	if (r) {
		/* Cut back to the last commit; truncation frees blocks,
		 * so it works on a full disk too. */
		for (int i = 0; i < NFILES; i++)
			if (ftruncate(sw->fd[i], (off_t)sw->len[i]) < 0)
				cpa_debug("%s/%s: truncate: %s", sw->path,
					  cpa_store_file_names[i],
					  strerror(errno));
		return cpa_fail_errno(err, errlen, -r, "%s/%s", sw->path,
			       cpa_store_file_names[at]);
	}
	sw->len[CPA_STORE_DICT] += ie.dict_len;
	sw->len[CPA_STORE_DATA] += ie.data_len;
	sw->len[CPA_STORE_SUMS] += sw->sums_block.len;
	sw->len[CPA_STORE_INDEX] += sizeof(entry);
	sw->saved_strings = cpa_strtab_count(sw->strings);
	sw->saved_stacks = cpa_stacktab_count(sw->stacks);
	sw->saved_labelsets = sw->nls - 1;
	if (!sw->min_start || ie.min_start < sw->min_start)
		sw->min_start = ie.min_start;
	if (ie.max_end > sw->max_end)
		sw->max_end = ie.max_end;
	return 0;
}

int cpa_segment_sync(struct cpa_segment_writer *sw)
{
	/* Data before index, so that after a power loss an index entry
	 * rarely points past what reached the disk; the block checksums
	 * catch the cases where it still does. */
	static const enum cpa_store_file order[] = {
		CPA_STORE_DICT, CPA_STORE_DATA, CPA_STORE_SUMS, CPA_STORE_INDEX};
	for (size_t i = 0; i < NFILES; i++)
		if (fdatasync(sw->fd[order[i]]) < 0)
			return -errno;
	return 0;
}

uint64_t cpa_segment_bytes(const struct cpa_segment_writer *sw)
{
	return sw->len[0] + sw->len[1] + sw->len[2] + sw->len[3] +
	       sw->meta_bytes;
}

size_t cpa_segment_dict_bytes(const struct cpa_segment_writer *sw)
{
	return cpa_strtab_bytes(sw->strings) + cpa_stacktab_bytes(sw->stacks) +
	       (size_t)sw->capls * sizeof(*sw->ls);
}

uint64_t cpa_segment_max_end(const struct cpa_segment_writer *sw)
{
	return sw->max_end;
}

const char *cpa_segment_name(const struct cpa_segment_writer *sw)
{
	return sw->name;
}

void cpa_segment_close(struct cpa_segment_writer *sw)
{
	if (!sw)
		return;
	for (int i = 0; i < NFILES; i++)
		if (sw->fd[i] >= 0)
			close(sw->fd[i]);
	if (sw->dirfd >= 0)
		close(sw->dirfd);
	cpa_strtab_free(sw->strings);
	cpa_stacktab_free(sw->stacks);
	free(sw->ls);
	cpa_htab_free(&sw->ls_index);
	cpa_htab_free(&sw->tot_index);
	free(sw->side);
	free(sw->tot);
	cpa_buf_free(&sw->raw);
	cpa_buf_free(&sw->sums_block);
	cpa_buf_free(&sw->dict_block);
	cpa_buf_free(&sw->data_block);
	free(sw->path);
	free(sw);
}
