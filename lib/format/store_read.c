/* SPDX-License-Identifier: MIT */
/*
 * Segment reader. The index is read first and trusted entry by entry: an
 * entry counts only when its checksum holds and the blocks it names lie
 * inside the files, contiguous with the entries before it. Whatever
 * follows the first entry that fails is a torn tail (a crash or a full
 * disk mid-commit) and is ignored. Because the writer writes blocks before
 * the entry that names them, a reader running beside the writer sees
 * complete commits only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "le.h"
#include "log.h"
#include "cpastore.h"
#include "store.h"

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t k = pread(fd, p, len, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -ENODATA;
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}


static int parse_u64(const char *s, uint64_t *v)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

static int read_meta(const char *path, struct cpa_segment_info *si,
		     char *err, size_t errlen)
{
	char file[4200];
	snprintf(file, sizeof(file), "%s/meta", path);
	struct cpa_buf b = {0};
	int r = cpa_buf_read_file(&b, file, CPA_STORE_META_MAX);
	if (r < 0) {
		cpa_buf_free(&b);
		return cpa_fail(err, errlen, "%s: %s", file,
			    r == -EFBIG ? "larger than a meta file can be"
					: strerror(-r));
	}
	char why[160];
	r = cpa_store_meta_parse((char *)b.p, b.len, &si->meta, why,
				 sizeof(why));
	cpa_buf_free(&b);
	if (r < 0)
		return cpa_fail(err, errlen, "%s: %s", file, why);
	const char *fmt = cpa_store_meta_get(si->meta, "format");
	unsigned major, minor;
	char tail;
	if (!fmt || sscanf(fmt, "%u.%u%c", &major, &minor, &tail) != 2)
		return cpa_fail(err, errlen, "%s: no valid format=MAJOR.MINOR line",
			    file);
	if (major > CPA_STORE_MAJOR) {
		cpa_fail(err, errlen, "%s: store format %u.%u is newer than this "
		     "build reads (%u.x); use a newer cpa", file, major, minor,
		     CPA_STORE_MAJOR);
		return -2;
	}
	si->major = (uint16_t)major;
	si->minor = (uint16_t)minor;
	if (parse_u64(cpa_store_meta_get(si->meta, "interval_ns"),
		      &si->interval_ns) < 0 || !si->interval_ns ||
	    parse_u64(cpa_store_meta_get(si->meta, "segment_start_ns"),
		      &si->start_ns) < 0)
		return cpa_fail(err, errlen, "%s: missing or bad interval_ns or "
			    "segment_start_ns", file);
	return 0;
}

/* Opens one of the segment files and checks its header against meta. */
static int open_checked(const char *path, enum cpa_store_file which,
			const struct cpa_segment_info *si, uint64_t *size,
			char *err, size_t errlen)
{
	char file[4200];
	snprintf(file, sizeof(file), "%s/%s", path,
		 cpa_store_file_names[which]);
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cpa_fail(err, errlen, "%s: %s", file, strerror(errno));
	uint8_t h[CPA_STORE_FILE_HEADER];
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cpa_fail(err, errlen, "%s: not a regular file", file);
	}
	size_t got = (uint64_t)st.st_size < sizeof(h) ? (size_t)st.st_size
						      : sizeof(h);
	if (pread_all(fd, h, got, 0) < 0) {
		close(fd);
		return cpa_fail(err, errlen, "%s: %s", file, strerror(errno));
	}
	uint16_t major, minor;
	uint64_t interval, start;
	char why[160];
	int r = cpa_store_header_decode(h, got, which, &major, &minor,
					&interval, &start, why, sizeof(why));
	if (r < 0) {
		close(fd);
		cpa_fail(err, errlen, "%s: %s", file, why);
		return r;
	}
	if (interval != si->interval_ns || start != si->start_ns) {
		close(fd);
		return cpa_fail(err, errlen, "%s: header does not match meta "
			    "(interval or start differ)", file);
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

int cpa_segment_info_read(const char *path, struct cpa_segment_info *si,
			  char *err, size_t errlen)
{
	if (cpa_cpastore_is_day(path))
		return cpa_cpastore_info_read(path, si, err, errlen);
	memset(si, 0, sizeof(*si));
	si->path = cpa_strdup(path);
	const char *slash = strrchr(path, '/');
	snprintf(si->name, sizeof(si->name), "%s", slash ? slash + 1 : path);
	int r = read_meta(path, si, err, errlen);
	if (r < 0)
		return r;

	/* Index first, then the sizes of dict and data: blocks are written
	 * before the entry that names them, so anything the index names is
	 * already inside the sizes seen after it. */
	uint64_t isize;
	int ifd = open_checked(path, CPA_STORE_INDEX, si, &isize, err, errlen);
	if (ifd < 0)
		return ifd;
	size_t n = isize > CPA_STORE_FILE_HEADER
			   ? (size_t)((isize - CPA_STORE_FILE_HEADER) /
				      CPA_STORE_INDEX_ENTRY)
			   : 0;
	/* cpa-store allows at most a million flushes per segment; an index
	 * far larger than that is damage, read only as far as the cap. */
	if (n > CPA_STORE_INDEX_MAX)
		n = CPA_STORE_INDEX_MAX;
	uint8_t *raw = cpa_malloc(n * CPA_STORE_INDEX_ENTRY + 1);
	r = pread_all(ifd, raw, n * CPA_STORE_INDEX_ENTRY,
		      CPA_STORE_FILE_HEADER);
	close(ifd);
	if (r < 0 && r != -ENODATA) {
		free(raw);
		return cpa_fail(err, errlen, "%s/index: %s", path, strerror(-r));
	}
	if (r == -ENODATA)	/* shrank under us: a concurrent recovery */
		n = 0;
	si->index_size = isize;

	int dfd = open_checked(path, CPA_STORE_DICT, si, &si->dict_size, err,
			       errlen);
	if (dfd < 0) {
		free(raw);
		return dfd;
	}
	close(dfd);
	int afd = open_checked(path, CPA_STORE_DATA, si, &si->data_size, err,
			       errlen);
	if (afd < 0) {
		free(raw);
		return afd;
	}
	close(afd);

	si->idx = cpa_calloc(n ? n : 1, sizeof(*si->idx));
	uint64_t want_dict = CPA_STORE_FILE_HEADER;
	uint64_t want_data = CPA_STORE_FILE_HEADER;
	size_t i;
	for (i = 0; i < n; i++) {
		struct cpa_store_index_entry *e = &si->idx[i];
		char why[120];
		uint64_t at = CPA_STORE_FILE_HEADER +
			      (uint64_t)i * CPA_STORE_INDEX_ENTRY;
		if (cpa_store_index_decode(raw + i * CPA_STORE_INDEX_ENTRY, e,
					   why, sizeof(why)) < 0) {
			snprintf(si->torn_why, sizeof(si->torn_why),
				 "index byte %llu: %s", (unsigned long long)at,
				 why);
			break;
		}
		if (e->data_off != want_data ||
		    e->data_off + e->data_len > si->data_size) {
			snprintf(si->torn_why, sizeof(si->torn_why),
				 "index byte %llu: data block at %llu+%u is "
				 "not in the data file (%llu bytes)",
				 (unsigned long long)at,
				 (unsigned long long)e->data_off, e->data_len,
				 (unsigned long long)si->data_size);
			break;
		}
		if (e->dict_len && (e->dict_off != want_dict ||
				    e->dict_off + e->dict_len > si->dict_size)) {
			snprintf(si->torn_why, sizeof(si->torn_why),
				 "index byte %llu: dictionary block at %llu+%u "
				 "is not in the dict file (%llu bytes)",
				 (unsigned long long)at,
				 (unsigned long long)e->dict_off, e->dict_len,
				 (unsigned long long)si->dict_size);
			break;
		}
		want_data += e->data_len;
		want_dict += e->dict_len;
		if (!si->min_start || e->min_start < si->min_start)
			si->min_start = e->min_start;
		if (e->max_end > si->max_end)
			si->max_end = e->max_end;
	}
	free(raw);
	si->n_idx = i;
	si->valid_index = CPA_STORE_FILE_HEADER +
			  (uint64_t)i * CPA_STORE_INDEX_ENTRY;
	si->valid_dict = want_dict;
	si->valid_data = want_data;
	if (isize > si->valid_index) {
		si->torn_bytes = isize - si->valid_index;
		if (!si->torn_why[0])
			snprintf(si->torn_why, sizeof(si->torn_why),
				 "index byte %llu: partial entry",
				 (unsigned long long)si->valid_index);
	}

	struct stat st;
	char file[4200];
	si->bytes = 0;
	static const char *const all[] = {"meta", "index", "dict", "data",
					  "sums"};
	for (size_t k = 0; k < 5; k++) {
		snprintf(file, sizeof(file), "%s/%s", path, all[k]);
		if (stat(file, &st) == 0)
			si->bytes += (uint64_t)st.st_size;
	}
	return 0;
}

void cpa_segment_info_free(struct cpa_segment_info *si)
{
	free(si->path);
	cpa_store_meta_free(si->meta);
	free(si->idx);
	cpa_cpastore_close(si->cpa);
	memset(si, 0, sizeof(*si));
}

/* Time order: the start time, then the sequence number of a segment that
 * began in the same second after one closed early (-2 before -10, which
 * strcmp would swap). */
int cpa_store_name_cmp(const char *x, const char *y)
{
	int c = strncmp(x, y, 16);
	if (c)
		return c;
	unsigned long sx = x[16] ? strtoul(x + 17, NULL, 10) : 0;
	unsigned long sy = y[16] ? strtoul(y + 17, NULL, 10) : 0;
	return sx < sy ? -1 : sx > sy;
}

static int name_cmp(const void *a, const void *b)
{
	return cpa_store_name_cmp(*(char *const *)a, *(char *const *)b);
}

int cpa_store_list_names(const char *dir, char ***names, size_t *n,
			 char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d)
		return cpa_fail(err, errlen, "%s: %s", dir, strerror(errno));
	size_t cnt = 0, cap = 16;
	char **out = cpa_malloc(cap * sizeof(*out));
	struct dirent *de;
	char path[4200];
	while ((de = readdir(d))) {
		if (!cpa_store_is_segment_name(de->d_name)) {
			/* a day directory of a CPA store root */
			if (!cpa_cpastore_day_name(de->d_name, NULL))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (!cpa_cpastore_is_day(path))
				continue;
		}
		CPA_GROW(out, cap, cnt + 1);
		out[cnt++] = cpa_strdup(de->d_name);
	}
	closedir(d);
	qsort(out, cnt, sizeof(*out), name_cmp);
	*names = out;
	*n = cnt;
	return 0;
}

void cpa_store_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* ---- blocks -------------------------------------------------------------- */

int cpa_segment_reader_open(struct cpa_segment_reader *r,
			    const struct cpa_segment_info *si, char *err,
			    size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->si = si;
	if (si->cpa)
		return cpa_cpastore_reader_open(r, err, errlen);
	char file[4200];
	snprintf(file, sizeof(file), "%s/dict", si->path);
	r->dict_fd = open(file, O_RDONLY | O_CLOEXEC);
	if (r->dict_fd < 0)
		return cpa_fail(err, errlen, "%s: %s", file, strerror(errno));
	snprintf(file, sizeof(file), "%s/data", si->path);
	r->data_fd = open(file, O_RDONLY | O_CLOEXEC);
	if (r->data_fd < 0) {
		close(r->dict_fd);
		return cpa_fail(err, errlen, "%s: %s", file, strerror(errno));
	}
	cpa_store_dict_init(&r->dict);
	return 0;
}

static int read_block(struct cpa_segment_reader *r, int fd, uint64_t off,
		      uint32_t len, const char *what, char *err, size_t errlen)
{
	r->comp.len = 0;
	cpa_buf_reserve(&r->comp, len);
	int e = pread_all(fd, r->comp.p, len, off);
	if (e < 0)
		return cpa_fail(err, errlen, "%s/%s: byte %llu: %s", r->si->path,
			    what, (unsigned long long)off,
			    e == -ENODATA ? "file ends inside the block"
					  : strerror(-e));
	char why[160];
	if (cpa_store_block_unpack(r->comp.p, len, &r->raw, why,
				   sizeof(why)) < 0)
		return cpa_fail(err, errlen, "%s/%s: byte %llu: %s", r->si->path,
			    what, (unsigned long long)off, why);
	return 0;
}

int cpa_segment_reader_dict(struct cpa_segment_reader *r, size_t entry,
			    char *err, size_t errlen)
{
	for (; r->dict_upto <= entry && r->dict_upto < r->si->n_idx;
	     r->dict_upto++) {
		const struct cpa_store_index_entry *e =
			&r->si->idx[r->dict_upto];
		if (!e->dict_len)
			continue;
		if (read_block(r, r->dict_fd, e->dict_off, e->dict_len, "dict",
			       err, errlen) < 0)
			return -1;
		char why[200];
		if (cpa_store_dict_decode(&r->dict, r->raw.p, r->raw.len, why,
					  sizeof(why)) < 0)
			return cpa_fail(err, errlen, "%s/dict: block at byte %llu: "
				    "%s", r->si->path,
				    (unsigned long long)e->dict_off, why);
	}
	return 0;
}

int cpa_segment_reader_block(struct cpa_segment_reader *r, size_t entry,
			     cpa_store_window_fn fn, void *arg, char *err,
			     size_t errlen)
{
	if (r->si->cpa)
		return cpa_cpastore_reader_block(r, entry, fn, arg, err, errlen);
	if (entry >= r->si->n_idx)
		return cpa_fail(err, errlen, "%s: no block %zu", r->si->path,
			    entry);
	if (cpa_segment_reader_dict(r, entry, err, errlen) < 0)
		return -1;
	const struct cpa_store_index_entry *e = &r->si->idx[entry];
	if (read_block(r, r->data_fd, e->data_off, e->data_len, "data", err,
		       errlen) < 0)
		return -1;
	char why[200];
	int ret = cpa_store_windows_decode(r->raw.p, r->raw.len, &r->dict, e,
					   r->si->interval_ns, &r->scratch, fn,
					   arg, why, sizeof(why));
	if (ret == -1)
		return cpa_fail(err, errlen, "%s/data: block at byte %llu: %s",
			    r->si->path, (unsigned long long)e->data_off, why);
	return ret;
}

/* Most a sums file may hold: far more than a segment's million flushes
 * of totals take. */
#define SUMS_FILE_MAX (256u << 20)

/* Reads the sums file and finds the block of each committed entry. 1 when
 * there are none to read, -1 with err when the file is damaged before the
 * block of an entry (those from there on have none). */
static int load_sums(struct cpa_segment_reader *r, char *err, size_t errlen)
{
	const struct cpa_segment_info *si = r->si;
	r->sums_read = true;
	if (si->cpa || (si->major == 1 && si->minor < 3) || !si->n_idx)
		return 1;
	char file[4200];
	snprintf(file, sizeof(file), "%s/sums", si->path);
	int e = cpa_buf_read_file(&r->sums, file, SUMS_FILE_MAX);
	if (e == -ENOENT)
		return 1;
	if (e < 0)
		return cpa_fail(err, errlen, "%s: %s", file,
				e == -EFBIG ? "larger than a sums file can be"
					    : strerror(-e));
	uint16_t major, minor;
	uint64_t interval, start;
	char why[160];
	if (cpa_store_header_decode(r->sums.p, r->sums.len, CPA_STORE_SUMS,
				    &major, &minor, &interval, &start, why,
				    sizeof(why)) < 0)
		return cpa_fail(err, errlen, "%s: %s", file, why);
	if (interval != si->interval_ns || start != si->start_ns)
		return cpa_fail(err, errlen, "%s: byte 16: header does not "
				"match meta (interval or start differ)", file);
	r->sums_at = cpa_calloc(si->n_idx, sizeof(*r->sums_at));
	uint64_t at = CPA_STORE_FILE_HEADER, len = r->sums.len;
	for (size_t i = 0; i < si->n_idx; i++) {
		/* the block's own header is checked when it is unpacked */
		if (len - at < CPA_STORE_BLOCK_HEADER ||
		    cpa_get_le32(r->sums.p + at + 8) >
			    len - at - CPA_STORE_BLOCK_HEADER)
			return cpa_fail(err, errlen, "%s: byte %llu: the file "
					"ends inside the sums of index entry "
					"%zu", file, (unsigned long long)at, i);
		r->sums_at[i] = at;
		at += CPA_STORE_BLOCK_HEADER + cpa_get_le32(r->sums.p + at + 8);
	}
	return 0;
}

static int sums_none(void *arg, uint64_t start_ns,
		     const struct cpa_store_sum *s, uint32_t n)
{
	(void)arg, (void)start_ns, (void)s, (void)n;
	return 0;
}

int cpa_segment_reader_sums(struct cpa_segment_reader *r, size_t entry,
			    cpa_store_sums_fn fn, void *arg, char *err,
			    size_t errlen)
{
	if (!r->sums_read) {
		int e = load_sums(r, err, errlen);
		if (e)
			return e;
	}
	if (entry >= r->si->n_idx || !r->sums_at || !r->sums_at[entry])
		return 1;
	uint64_t at = r->sums_at[entry];
	size_t blen = CPA_STORE_BLOCK_HEADER +
		      cpa_get_le32(r->sums.p + at + 8);
	char why[200];
	const uint8_t *raw;
	size_t len;
	if (cpa_store_sums_unblock(r->sums.p + at, blen, &raw, &len, why,
				   sizeof(why)) < 0)
		return cpa_fail(err, errlen, "%s/sums: byte %llu: %s",
				r->si->path, (unsigned long long)at, why);
	/* checked whole before fn sees a window: a caller that falls back
	 * to the data block must not have counted part of it */
	int ret = cpa_store_sums_decode(raw, len, &r->si->idx[entry],
					r->si->interval_ns, &r->scratch,
					sums_none, NULL, why, sizeof(why));
	if (!ret)
		ret = cpa_store_sums_decode(raw, len,
					    &r->si->idx[entry],
					    r->si->interval_ns, &r->scratch,
					    fn, arg, why, sizeof(why));
	if (ret == -1)
		return cpa_fail(err, errlen, "%s/sums: block at byte %llu: %s",
				r->si->path, (unsigned long long)at, why);
	return ret;
}

void cpa_segment_reader_close(struct cpa_segment_reader *r)
{
	cpa_buf_free(&r->sums);
	free(r->sums_at);
	cpa_cpastore_reader_close(r);
	if (r->dict_fd > 0)
		close(r->dict_fd);
	if (r->data_fd > 0)
		close(r->data_fd);
	cpa_store_dict_free(&r->dict);
	cpa_buf_free(&r->comp);
	cpa_buf_free(&r->raw);
	cpa_buf_free(&r->scratch);
}
