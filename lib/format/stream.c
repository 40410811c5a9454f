/* SPDX-License-Identifier: MIT */
/*
 * The cpa stream codec. Encoding writes fields one by one in little-endian
 * order, so the wire format never depends on struct layout or host byte
 * order; decoding checks every count and length before it reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "io.h"
#include "le.h"
#include "leb128.h"
#include "log.h"
#include "stream.h"

#define WRITER_BUF (256u * 1024u)
#define READER_BUF (512u * 1024u)

/* Linux's, not in the POSIX headers this build asks for */
#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ 1031
#define F_GETPIPE_SZ 1032
#endif
#define PIPE_ROOM (1u << 20)

/* Fixed parts of each payload; docs/stream-format.md has the layouts. */
#define RAW_FIXED 88
#define RAW_PY_FIXED 8		/* Python section: version, n, flags */
#define RAW_PY_FRAME 16
#define RAW_NAMED_FIXED 8	/* named section: n, reserved, bytes */
#define TASK_FIXED 40
#define MMAP_FIXED 80
#define LOST_FIXED 24
#define STRING_FIXED 4
#define STACK_FIXED 8
#define SAMPLE_FIXED 64
#define END_FIXED 24

/* ---- writer ------------------------------------------------------------ */

static int write_all(struct cpa_writer *w, const uint8_t *p, size_t n)
{
	int rc = cpa_write_full(w->fd, p, n);

	if (rc < 0)
		w->err = -rc;
	return rc;
}

int cpa_writer_flush(struct cpa_writer *w)
{
	if (w->err)
		return -w->err;
	if (w->len == 0)
		return 0;
	int rc = write_all(w, w->buf, w->len);
	w->len = 0;
	return rc;
}

/* Reserves n bytes in the buffer, flushing first if needed. */
static uint8_t *reserve(struct cpa_writer *w, size_t n)
{
	if (w->err)
		return NULL;
	if (w->len + n > w->cap && cpa_writer_flush(w) < 0)
		return NULL;
	if (n > w->cap) {
		uint8_t *nb = realloc(w->buf, n);
		if (!nb) {
			w->err = ENOMEM;
			return NULL;
		}
		w->buf = nb;
		w->cap = n;
	}
	uint8_t *p = w->buf + w->len;
	w->len += n;
	return p;
}

/*
 * A stage writes a poll cycle's records at once, often more than a pipe's
 * default 64 KiB: the write then stops half way, the reader wakes for the
 * first part and passes it on, and every stage down the pipe wakes twice.
 * A pipe of 1 MiB (the unprivileged limit, fs.pipe-max-size) takes a
 * cycle in one write. Not a pipe, or refused: the default stays.
 */
static void widen_pipe(int fd)
{
	int now = fcntl(fd, F_GETPIPE_SZ);

	if (now > 0 && (unsigned)now < PIPE_ROOM)
		(void)fcntl(fd, F_SETPIPE_SZ, (int)PIPE_ROOM);
}

int cpa_writer_init(struct cpa_writer *w, int fd)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	widen_pipe(fd);
	w->cap = WRITER_BUF;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return -ENOMEM;
	uint8_t *h = reserve(w, CPA_STREAM_HEADER_SIZE);
	memcpy(h, CPA_STREAM_MAGIC, CPA_STREAM_MAGIC_LEN);
	cpa_put_le16(h + 4, CPA_STREAM_MAJOR);
	cpa_put_le16(h + 6, CPA_STREAM_MINOR);
	cpa_put_le32(h + 8, CPA_STREAM_HEADER_SIZE);
	cpa_put_le32(h + 12, 0);
	return 0;
}

int cpa_writer_close(struct cpa_writer *w)
{
	int rc = cpa_writer_flush(w);
	free(w->buf);
	w->buf = NULL;
	w->cap = w->len = 0;
	return rc;
}

/* Starts a record of payload length len; returns the payload pointer. */
static uint8_t *begin_record(struct cpa_writer *w, uint16_t type, uint32_t len)
{
	if (len > CPA_RECORD_MAX) {
		if (!w->err)
			w->err = EMSGSIZE;
		return NULL;
	}
	uint8_t *p = reserve(w, CPA_RECORD_HEADER_SIZE + (size_t)len);
	if (!p)
		return NULL;
	cpa_put_le16(p, type);
	cpa_put_le16(p + 2, 0);
	cpa_put_le32(p + 4, len);
	w->records++;
	return p + CPA_RECORD_HEADER_SIZE;
}

int cpa_write_record(struct cpa_writer *w, uint16_t type, const void *payload,
		     uint32_t len)
{
	uint8_t *p = begin_record(w, type, len);
	if (!p)
		return -w->err;
	if (len)
		memcpy(p, payload, len);
	if (type == CPA_REC_RAW_SAMPLE || type == CPA_REC_SAMPLE)
		w->samples++;
	return 0;
}

static void put_comm(uint8_t *p, const char *comm)
{
	size_t n = strnlen(comm, CPA_COMM_LEN);
	memcpy(p, comm, n);
	memset(p + n, 0, CPA_COMM_LEN - n);
}

/*
 * Snapshots are mostly zeros (fresh thread stacks, the unused tail of a
 * frame, padding), and every byte of one crosses two pipes, so a run of
 * zero words is stored as its length. A shorter run stays literal: each
 * run costs two varints.
 */
#define ZRUN_MIN_WORDS 4

static inline uint64_t word_at(const uint8_t *p, size_t w)
{
	uint64_t v;
	memcpy(&v, p + 8 * w, 8);
	return v;
}

/* The end of the run of zero words starting at word w, four at a time
 * while it lasts. */
static size_t zero_run_end(const uint8_t *p, size_t w, size_t nwords)
{
	while (w + 4 <= nwords && !(word_at(p, w) | word_at(p, w + 1) |
				    word_at(p, w + 2) | word_at(p, w + 3)))
		w += 4;
	while (w < nwords && !word_at(p, w))
		w++;
	return w;
}

/* Appends the pair (zero words, literal bytes) and the literal bytes, or
 * returns NULL when that would reach end. */
static uint8_t *put_run(uint8_t *q, const uint8_t *end, size_t zeros,
			const uint8_t *lit, size_t n)
{
	/* two varints of at most 3 bytes each: a snapshot is <= 64 KiB */
	if ((size_t)(end - q) <= 6 + n)
		return NULL;
	q += cpa_put_uleb128(q, zeros);
	q += cpa_put_uleb128(q, n);
	memcpy(q, lit, n);
	return q + n;
}

size_t cpa_stack_zruns(const uint8_t *src, size_t len, uint8_t *out)
{
	const uint8_t *end = out + len;
	size_t nwords = len / 8, zeros = 0, lit = 0, w = 0;
	uint8_t *q = out;

	while (w < nwords) {
		size_t r;

		if (word_at(src, w)) {
			w++;
			continue;
		}
		r = zero_run_end(src, w, nwords);
		if (r - w >= ZRUN_MIN_WORDS) {
			if (zeros || 8 * w > lit) {
				q = put_run(q, end, zeros, src + lit,
					    8 * w - lit);
				if (!q)
					return 0;
			}
			zeros = r - w;
			lit = 8 * r;
		}
		w = r;
	}
	q = put_run(q, end, zeros, src + lit, len - lit);
	return q ? (size_t)(q - out) : 0;
}

/* The inverse of cpa_stack_zruns: fills out with exactly len bytes, or
 * returns -1 when in does not decode to that. */
static int zruns_decode(const uint8_t *in, size_t in_len, uint8_t *out,
			size_t len)
{
	const uint8_t *p = in, *end = in + in_len;
	size_t pos = 0;

	while (p < end) {
		uint64_t z, lit;

		if (!cpa_uleb128(&p, end, &z) || !cpa_uleb128(&p, end, &lit))
			return -1;
		if (z > (len - pos) / 8)
			return -1;
		memset(out + pos, 0, 8 * z);
		pos += 8 * z;
		if (lit > len - pos || lit > (size_t)(end - p))
			return -1;
		memcpy(out + pos, p, lit);
		pos += lit;
		p += lit;
	}
	return pos == len ? 0 : -1;
}

/* The Python section of a raw sample, after its snapshot. */
static void put_py_frames(uint8_t *q, const struct cpa_raw_sample *s)
{
	cpa_put_le16(q, s->py_version);
	cpa_put_le16(q + 2, s->n_py);
	cpa_put_le32(q + 4, s->py_flags);
	q += RAW_PY_FIXED;
	for (unsigned i = 0; i < s->n_py; i++, q += RAW_PY_FRAME) {
		cpa_put_le64(q, s->py[i].code);
		cpa_put_le32(q + 8, s->py[i].instr);
		cpa_put_le32(q + 12, s->py[i].flags);
	}
}

/* The named section, after the Python section. */
static void put_named_frames(uint8_t *q, const struct cpa_raw_sample *s)
{
	cpa_put_le16(q, s->n_named);
	cpa_put_le16(q + 2, 0);
	cpa_put_le32(q + 4, s->named_len);
	memcpy(q + RAW_NAMED_FIXED, s->named, s->named_len);
}

int cpa_write_raw_sample(struct cpa_writer *w, const struct cpa_raw_sample *s)
{
	if (s->n_kernel > CPA_MAX_FRAMES || s->n_user > CPA_MAX_FRAMES ||
	    s->n_regs > CPA_MAX_REGS || s->stack_len > CPA_MAX_STACK_BYTES ||
	    (s->stack_len && !s->stack) ||
	    ((s->flags & CPA_RAW_PY_FRAMES) && s->n_py > CPA_MAX_PY_FRAMES) ||
	    ((s->flags & CPA_RAW_NAMED_FRAMES) &&
	     (s->n_named > CPA_MAX_NAMED_FRAMES ||
	      s->named_len > CPA_RECORD_MAX / 2 || !s->named)) ||
	    ((s->flags & CPA_RAW_STACK_ZRUNS) &&
	     (s->stack_stored > s->stack_len || !s->stack ||
	      (s->stack_len && !s->stack_stored)))) {
		if (!w->err)
			w->err = EINVAL;
		return -w->err;
	}
	uint32_t id_len = (s->flags & CPA_RAW_ALLOC_ID) ? 8 : 0;
	uint32_t py_len = (s->flags & CPA_RAW_PY_FRAMES) ?
				  RAW_PY_FIXED + RAW_PY_FRAME * s->n_py : 0;
	uint32_t named_len = (s->flags & CPA_RAW_NAMED_FRAMES) ?
				     RAW_NAMED_FIXED + s->named_len : 0;
	uint32_t len = RAW_FIXED + id_len +
		       8u * (s->n_kernel + s->n_user + s->n_regs) +
		       s->stack_len + py_len + named_len;
	uint8_t *p = begin_record(w, CPA_REC_RAW_SAMPLE, len);
	if (!p)
		return -w->err;
	cpa_put_le64(p, s->time_ns);
	cpa_put_le64(p + 8, s->cgroup_id);
	cpa_put_le64(p + 16, s->weight);
	cpa_put_le32(p + 24, s->pid);
	cpa_put_le32(p + 28, s->tid);
	cpa_put_le32(p + 32, s->cpu);
	cpa_put_le16(p + 36, s->kind);
	put_comm(p + 40, s->comm);
	put_comm(p + 56, s->pcomm);
	cpa_put_le16(p + 72, s->n_kernel);
	cpa_put_le16(p + 74, s->n_user);
	cpa_put_le16(p + 76, s->n_regs);
	cpa_put_le16(p + 78, 0);
	cpa_put_le32(p + 80, s->stack_len);
	uint8_t *q = p + RAW_FIXED;
	if (id_len) {
		cpa_put_le64(q, s->alloc_id);
		q += 8;
	}
	for (unsigned i = 0; i < s->n_kernel; i++, q += 8)
		cpa_put_le64(q, s->kernel_ips[i]);
	for (unsigned i = 0; i < s->n_user; i++, q += 8)
		cpa_put_le64(q, s->user_ips[i]);
	for (unsigned i = 0; i < s->n_regs; i++, q += 8)
		cpa_put_le64(q, s->regs[i]);
	uint16_t flags = s->flags;
	size_t stored = 0;
	if (flags & CPA_RAW_STACK_ZRUNS) {
		stored = s->stack_stored;	/* encoded by the caller */
		memcpy(q, s->stack, stored);
	} else if (s->stack_len) {
		stored = cpa_stack_zruns(s->stack, s->stack_len, q);
		if (stored)
			flags |= CPA_RAW_STACK_ZRUNS;
		else
			memcpy(q, s->stack, s->stack_len);
	}
	if (py_len)
		put_py_frames(flags & CPA_RAW_STACK_ZRUNS ? q + stored :
							    q + s->stack_len,
			      s);
	if (named_len)
		put_named_frames((flags & CPA_RAW_STACK_ZRUNS ? q + stored :
							       q + s->stack_len) +
				 py_len, s);
	if (flags & CPA_RAW_STACK_ZRUNS) {
		/* give back the part of the reservation not used */
		w->len -= s->stack_len - stored;
		cpa_put_le32(p - CPA_RECORD_HEADER_SIZE + 4,
		      len - s->stack_len + (uint32_t)stored);
	}
	cpa_put_le16(p + 38, flags);
	cpa_put_le32(p + 84, (uint32_t)stored);
	w->samples++;
	return 0;
}

int cpa_write_task(struct cpa_writer *w, const struct cpa_task *t)
{
	uint8_t *p = begin_record(w, CPA_REC_TASK, TASK_FIXED);
	if (!p)
		return -w->err;
	cpa_put_le64(p, t->time_ns);
	cpa_put_le32(p + 8, t->pid);
	cpa_put_le32(p + 12, t->tid);
	cpa_put_le32(p + 16, t->ppid);
	cpa_put_le16(p + 20, t->event);
	cpa_put_le16(p + 22, 0);
	put_comm(p + 24, t->comm);
	return 0;
}

int cpa_write_mmap(struct cpa_writer *w, const struct cpa_mmap *m)
{
	if (m->build_id_len > CPA_BUILD_ID_MAX || m->path_len > CPA_PATH_MAX) {
		if (!w->err)
			w->err = EINVAL;
		return -w->err;
	}
	uint8_t *p = begin_record(w, CPA_REC_MMAP, MMAP_FIXED + m->path_len);
	if (!p)
		return -w->err;
	cpa_put_le64(p, m->time_ns);
	cpa_put_le64(p + 8, m->start);
	cpa_put_le64(p + 16, m->len);
	cpa_put_le64(p + 24, m->pgoff);
	cpa_put_le64(p + 32, m->inode);
	cpa_put_le32(p + 40, m->pid);
	cpa_put_le32(p + 44, m->prot);
	cpa_put_le32(p + 48, m->flags);
	p[52] = m->build_id_len;
	memset(p + 53, 0, 3);
	memset(p + 56, 0, CPA_BUILD_ID_MAX);
	memcpy(p + 56, m->build_id, m->build_id_len);
	cpa_put_le16(p + 76, m->path_len);
	cpa_put_le16(p + 78, 0);
	if (m->path_len)
		memcpy(p + MMAP_FIXED, m->path, m->path_len);
	return 0;
}

int cpa_write_lost(struct cpa_writer *w, const struct cpa_lost *l)
{
	uint8_t *p = begin_record(w, CPA_REC_LOST, LOST_FIXED);
	if (!p)
		return -w->err;
	cpa_put_le64(p, l->time_ns);
	cpa_put_le64(p + 8, l->count);
	cpa_put_le32(p + 16, l->reason);
	cpa_put_le32(p + 20, l->cpu);
	w->lost += l->count;
	return 0;
}

int cpa_write_string(struct cpa_writer *w, uint32_t id, const char *s,
		     uint32_t len)
{
	if (len > CPA_RECORD_MAX - STRING_FIXED) {
		if (!w->err)
			w->err = EMSGSIZE;
		return -w->err;
	}
	uint8_t *p = begin_record(w, CPA_REC_STRING, STRING_FIXED + len);
	if (!p)
		return -w->err;
	cpa_put_le32(p, id);
	if (len)
		memcpy(p + STRING_FIXED, s, len);
	return 0;
}

int cpa_write_stack(struct cpa_writer *w, uint32_t id, const uint32_t *frames,
		    uint32_t n)
{
	if (n > CPA_MAX_STACK_DEPTH) {
		if (!w->err)
			w->err = EMSGSIZE;
		return -w->err;
	}
	uint8_t *p = begin_record(w, CPA_REC_STACK, STACK_FIXED + 4 * n);
	if (!p)
		return -w->err;
	cpa_put_le32(p, id);
	cpa_put_le32(p + 4, n);
	for (uint32_t i = 0; i < n; i++)
		cpa_put_le32(p + STACK_FIXED + 4 * i, frames[i]);
	return 0;
}

int cpa_write_sample(struct cpa_writer *w, const struct cpa_sample *s)
{
	uint8_t *p = begin_record(w, CPA_REC_SAMPLE, SAMPLE_FIXED);
	if (!p)
		return -w->err;
	cpa_put_le64(p, s->time_ns);
	cpa_put_le64(p + 8, s->weight);
	cpa_put_le64(p + 16, s->cgroup_id);
	cpa_put_le32(p + 24, s->pid);
	cpa_put_le32(p + 28, s->tid);
	cpa_put_le32(p + 32, s->cpu);
	cpa_put_le16(p + 36, s->kind);
	/* the alloc id is resolved to a stack before a sample is symbolized */
	cpa_put_le16(p + 38, s->flags & ~CPA_RAW_ALLOC_ID);
	cpa_put_le32(p + 40, s->stack_id);
	cpa_put_le32(p + 44, s->comm_id);
	cpa_put_le32(p + 48, s->thread_id);
	cpa_put_le32(p + 52, s->container_id);
	cpa_put_le32(p + 56, s->env_id);
	cpa_put_le32(p + 60, 0);
	w->samples++;
	return 0;
}

int cpa_write_meta(struct cpa_writer *w, const char *key, const char *value)
{
	size_t kl = strlen(key), vl = strlen(value);
	if (kl + 1 + vl > CPA_RECORD_MAX || memchr(key, '=', kl)) {
		if (!w->err)
			w->err = EINVAL;
		return -w->err;
	}
	uint8_t *p = begin_record(w, CPA_REC_META, (uint32_t)(kl + 1 + vl));
	if (!p)
		return -w->err;
	memcpy(p, key, kl);
	p[kl] = '\0';
	memcpy(p + kl + 1, value, vl);
	return 0;
}

int cpa_write_end(struct cpa_writer *w)
{
	uint64_t records = w->records;
	uint8_t *p = begin_record(w, CPA_REC_END, END_FIXED);
	if (!p)
		return -w->err;
	cpa_put_le64(p, w->samples);
	cpa_put_le64(p + 8, w->lost);
	cpa_put_le64(p + 16, records);
	return cpa_writer_flush(w);
}

/* ---- reader ------------------------------------------------------------ */

static int reader_fail(struct cpa_reader *r, uint64_t off, const char *fmt,
		       ...) __attribute__((format(printf, 3, 4)));

static int reader_fail(struct cpa_reader *r, uint64_t off, const char *fmt,
		       ...)
{
	va_list ap;
	va_start(ap, fmt);
	cpa_vfail_in(r->err, sizeof(r->err), r->name, off, fmt, ap);
	va_end(ap);
	return -1;
}

/* Ensures at least want bytes are buffered unless input ends first.
 * Returns the number available (may be < want at EOF), or -1. */
static long fill(struct cpa_reader *r, size_t want)
{
	if (r->end - r->start >= want)
		return (long)(r->end - r->start);
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (want > r->cap) {
		size_t ncap = cpa_grow_cap(r->cap, want, READER_BUF, 1);
		uint8_t *nb = ncap ? realloc(r->buf, ncap) : NULL;
		if (!nb)
			return reader_fail(r, r->offset, "out of memory");
		r->buf = nb;
		r->cap = ncap;
	}
	while (r->end < want && !r->eof) {
		ssize_t k = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return reader_fail(r, r->offset + (r->end - r->start),
					   "read error: %s", strerror(errno));
		}
		if (k == 0)
			r->eof = true;
		r->end += (size_t)k;
	}
	return (long)(r->end - r->start);
}

int cpa_reader_init(struct cpa_reader *r, int fd, const char *name,
		    const void *prefix, size_t prefix_len)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->name = name ? name : "<input>";
	r->cap = READER_BUF;
	if (prefix_len > r->cap)
		r->cap = prefix_len;
	r->buf = malloc(r->cap);
	if (!r->buf)
		return reader_fail(r, 0, "out of memory");
	if (prefix_len)
		memcpy(r->buf, prefix, prefix_len);
	r->end = prefix_len;

	long n = fill(r, CPA_STREAM_HEADER_SIZE);
	if (n < 0)
		return -1;
	if (n == 0)
		return reader_fail(r, 0, "empty input, expected a cpa stream");
	const uint8_t *h = r->buf;
	size_t cmp = (size_t)n < CPA_STREAM_MAGIC_LEN ? (size_t)n
						      : CPA_STREAM_MAGIC_LEN;
	if (memcmp(h, CPA_STREAM_MAGIC, cmp) != 0)
		return reader_fail(r, 0, "not a cpa stream (bad magic)");
	if (n < CPA_STREAM_HEADER_SIZE)
		return reader_fail(r, (uint64_t)n,
				   "truncated stream header (%ld of %d bytes)",
				   n, CPA_STREAM_HEADER_SIZE);
	r->major = cpa_get_le16(h + 4);
	r->minor = cpa_get_le16(h + 6);
	uint32_t hlen = cpa_get_le32(h + 8);
	if (r->major != CPA_STREAM_MAJOR)
		return reader_fail(r, 4,
				   "stream version %u.%u not supported "
				   "(this build reads %u.x)",
				   r->major, r->minor, CPA_STREAM_MAJOR);
	if (hlen < CPA_STREAM_HEADER_SIZE || hlen > 4096)
		return reader_fail(r, 8, "bad header length %u", hlen);
	/* A later minor version may grow the header; skip what we don't know. */
	n = fill(r, hlen);
	if (n < 0)
		return -1;
	if ((size_t)n < hlen)
		return reader_fail(r, (uint64_t)n, "truncated stream header");
	r->start += hlen;
	r->offset += hlen;
	return 0;
}

bool cpa_reader_ready(const struct cpa_reader *r)
{
	size_t have = r->end - r->start;
	if (r->eof)
		return true;
	if (have < CPA_RECORD_HEADER_SIZE)
		return false;
	uint32_t len = cpa_get_le32(r->buf + r->start + 4);
	/* an oversized length fails at once, without reading more */
	return len > CPA_RECORD_MAX ||
	       have >= CPA_RECORD_HEADER_SIZE + (size_t)len;
}

int cpa_reader_next(struct cpa_reader *r, struct cpa_record *rec)
{
	long n = fill(r, CPA_RECORD_HEADER_SIZE);
	if (n < 0)
		return -1;
	if (n == 0)
		return 0;
	if (r->ended)
		return reader_fail(r, r->offset, "data after the end record");
	if (n < CPA_RECORD_HEADER_SIZE)
		return reader_fail(r, r->offset,
				   "truncated record header (%ld of %d bytes)",
				   n, CPA_RECORD_HEADER_SIZE);
	const uint8_t *h = r->buf + r->start;
	uint16_t type = cpa_get_le16(h);
	uint32_t len = cpa_get_le32(h + 4);
	if (type == 0)
		return reader_fail(r, r->offset, "record type 0 is invalid");
	if (len > CPA_RECORD_MAX)
		return reader_fail(r, r->offset,
				   "record length %u exceeds the maximum %u",
				   len, CPA_RECORD_MAX);
	n = fill(r, CPA_RECORD_HEADER_SIZE + (size_t)len);
	if (n < 0)
		return -1;
	if ((size_t)n < CPA_RECORD_HEADER_SIZE + (size_t)len)
		return reader_fail(r, r->offset,
				   "truncated %s record: length %u, %ld bytes "
				   "left",
				   cpa_record_type_name(type), len,
				   n - CPA_RECORD_HEADER_SIZE);
	h = r->buf + r->start;
	rec->type = type;
	rec->flags = cpa_get_le16(h + 2);
	rec->len = len;
	rec->offset = r->offset;
	rec->payload = h + CPA_RECORD_HEADER_SIZE;
	r->start += CPA_RECORD_HEADER_SIZE + (size_t)len;
	r->offset += CPA_RECORD_HEADER_SIZE + (uint64_t)len;
	if (type == CPA_REC_END) {
		char err[192];
		if (cpa_decode_end(rec, &r->totals, err, sizeof(err)) < 0) {
			snprintf(r->err, sizeof(r->err), "%s: %s", r->name,
				 err);
			return -1;
		}
		r->ended = true;
	}
	r->records++;
	return 1;
}

void cpa_reader_free(struct cpa_reader *r)
{
	free(r->buf);
	r->buf = NULL;
}

void cpa_reader_warn_unended(const struct cpa_reader *r,
			     const char *consequence)
{
	cpa_warn("%s: byte %llu: stream ended without an end record (%s)",
		 r->name, (unsigned long long)r->offset, consequence);
}

/* ---- typed decoders ---------------------------------------------------- */

static int dec_fail(const struct cpa_record *rec, char *err, size_t errlen,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int dec_fail(const struct cpa_record *rec, char *err, size_t errlen,
		    const char *fmt, ...)
{
	char msg[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cpa_fail_at(err, errlen, rec->offset, "%s record: %s",
			   cpa_record_type_name(rec->type), msg);
}

static int want_type(const struct cpa_record *rec, uint16_t type, char *err,
		     size_t errlen)
{
	if (rec->type != type)
		return dec_fail(rec, err, errlen, "expected a %s record",
				cpa_record_type_name(type));
	return 0;
}

static void get_comm(char *dst, const uint8_t *src)
{
	memcpy(dst, src, CPA_COMM_LEN);
	dst[CPA_COMM_LEN - 1] = '\0';
}

/* The named section at q: every frame non-empty and within its bound,
 * the lengths adding up to the section's. */
static int decode_named(const struct cpa_record *rec, const uint8_t *q,
			struct cpa_raw_sample *s, char *err, size_t errlen)
{
	const uint8_t *end = rec->payload + rec->len;
	s->n_named = cpa_get_le16(q);
	s->named_len = cpa_get_le32(q + 4);
	s->named = q + RAW_NAMED_FIXED;
	if (s->n_named > CPA_MAX_NAMED_FRAMES)
		return dec_fail(rec, err, errlen, "%u named frames, at most %d",
				s->n_named, CPA_MAX_NAMED_FRAMES);
	if (s->named_len > (size_t)(end - s->named))
		return dec_fail(rec, err, errlen, "named frames of %u bytes "
				"past the record's end", s->named_len);
	size_t pos = 0;
	for (unsigned i = 0; i < s->n_named; i++) {
		uint16_t len;
		if (s->named_len - pos < 2)
			return dec_fail(rec, err, errlen, "named frame %u "
					"past the section's end", i);
		len = cpa_get_le16(s->named + pos);
		if (!len || len > CPA_NAMED_FRAME_MAX ||
		    len > s->named_len - pos - 2)
			return dec_fail(rec, err, errlen, "named frame %u of "
					"%u bytes: expected 1 to %d within "
					"the section", i, len,
					CPA_NAMED_FRAME_MAX);
		pos += 2u + len;
	}
	if (pos != s->named_len)
		return dec_fail(rec, err, errlen, "named frames take %zu of "
				"the section's %u bytes", pos, s->named_len);
	return 0;
}

int cpa_decode_raw_sample(const struct cpa_record *rec,
			  struct cpa_raw_sample *s, uint8_t *stack_buf,
			  char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_RAW_SAMPLE, err, errlen))
		return -1;
	const uint8_t *p = rec->payload;
	if (rec->len < RAW_FIXED)
		return dec_fail(rec, err, errlen, "length %u below the fixed "
				"part (%d)", rec->len, RAW_FIXED);
	s->time_ns = cpa_get_le64(p);
	s->cgroup_id = cpa_get_le64(p + 8);
	s->weight = cpa_get_le64(p + 16);
	s->pid = cpa_get_le32(p + 24);
	s->tid = cpa_get_le32(p + 28);
	s->cpu = cpa_get_le32(p + 32);
	s->kind = cpa_get_le16(p + 36);
	s->flags = cpa_get_le16(p + 38);
	get_comm(s->comm, p + 40);
	get_comm(s->pcomm, p + 56);
	s->n_kernel = cpa_get_le16(p + 72);
	s->n_user = cpa_get_le16(p + 74);
	s->n_regs = cpa_get_le16(p + 76);
	s->stack_len = cpa_get_le32(p + 80);
	if (s->n_kernel > CPA_MAX_FRAMES || s->n_user > CPA_MAX_FRAMES)
		return dec_fail(rec, err, errlen,
				"%u kernel / %u user frames, at most %d each",
				s->n_kernel, s->n_user, CPA_MAX_FRAMES);
	if (s->n_regs > CPA_MAX_REGS)
		return dec_fail(rec, err, errlen, "%u registers, at most %d",
				s->n_regs, CPA_MAX_REGS);
	if (s->stack_len > CPA_MAX_STACK_BYTES)
		return dec_fail(rec, err, errlen,
				"stack snapshot of %u bytes, at most %u",
				s->stack_len, CPA_MAX_STACK_BYTES);
	bool zruns = s->flags & CPA_RAW_STACK_ZRUNS;
	uint32_t stored = zruns ? cpa_get_le32(p + 84) : s->stack_len;
	unsigned id_len = (s->flags & CPA_RAW_ALLOC_ID) ? 8 : 0;
	uint64_t want = RAW_FIXED + id_len +
			8ull * (s->n_kernel + s->n_user + s->n_regs) +
			stored;
	s->n_py = 0;
	s->py_flags = 0;
	s->py_version = 0;
	if ((s->flags & CPA_RAW_PY_FRAMES) && want + RAW_PY_FIXED <= rec->len) {
		const uint8_t *py = p + want;
		s->py_version = cpa_get_le16(py);
		s->n_py = cpa_get_le16(py + 2);
		s->py_flags = cpa_get_le32(py + 4);
		if (s->n_py > CPA_MAX_PY_FRAMES)
			return dec_fail(rec, err, errlen,
					"%u Python frames, at most %d",
					s->n_py, CPA_MAX_PY_FRAMES);
		py += RAW_PY_FIXED;
		for (unsigned i = 0; i < s->n_py; i++, py += RAW_PY_FRAME) {
			s->py[i].code = cpa_get_le64(py);
			s->py[i].instr = cpa_get_le32(py + 8);
			s->py[i].flags = cpa_get_le32(py + 12);
		}
		want += RAW_PY_FIXED + RAW_PY_FRAME * s->n_py;
	} else if (s->flags & CPA_RAW_PY_FRAMES) {
		want += RAW_PY_FIXED;	/* too short: the check below says so */
	}
	s->n_named = 0;
	s->named_len = 0;
	s->named = NULL;
	if ((s->flags & CPA_RAW_NAMED_FRAMES) &&
	    want + RAW_NAMED_FIXED <= rec->len) {
		if (decode_named(rec, p + want, s, err, errlen) < 0)
			return -1;
		want += RAW_NAMED_FIXED + s->named_len;
	} else if (s->flags & CPA_RAW_NAMED_FRAMES) {
		want += RAW_NAMED_FIXED;
	}
	if (want != rec->len)
		return dec_fail(rec, err, errlen,
				"length %u does not match its counts "
				"(expected %llu)",
				rec->len, (unsigned long long)want);
	const uint8_t *q = p + RAW_FIXED;
	s->alloc_id = id_len ? cpa_get_le64(q) : 0;
	q += id_len;
	for (unsigned i = 0; i < s->n_kernel; i++, q += 8)
		s->kernel_ips[i] = cpa_get_le64(q);
	for (unsigned i = 0; i < s->n_user; i++, q += 8)
		s->user_ips[i] = cpa_get_le64(q);
	for (unsigned i = 0; i < s->n_regs; i++, q += 8)
		s->regs[i] = cpa_get_le64(q);
	s->stack = s->stack_len ? q : NULL;
	if (zruns) {
		s->flags &= ~CPA_RAW_STACK_ZRUNS;
		if (!stack_buf || zruns_decode(q, stored, stack_buf,
					       s->stack_len) < 0)
			return dec_fail(rec, err, errlen,
					"zero-run snapshot of %u bytes does "
					"not decode to stack_len %u",
					stored, s->stack_len);
		s->stack = s->stack_len ? stack_buf : NULL;
	}
	return 0;
}

int cpa_decode_task(const struct cpa_record *rec, struct cpa_task *t,
		    char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_TASK, err, errlen))
		return -1;
	if (rec->len != TASK_FIXED)
		return dec_fail(rec, err, errlen, "length %u, expected %d",
				rec->len, TASK_FIXED);
	const uint8_t *p = rec->payload;
	t->time_ns = cpa_get_le64(p);
	t->pid = cpa_get_le32(p + 8);
	t->tid = cpa_get_le32(p + 12);
	t->ppid = cpa_get_le32(p + 16);
	t->event = cpa_get_le16(p + 20);
	get_comm(t->comm, p + 24);
	if (t->event < CPA_TASK_SEEN || t->event > CPA_TASK_FORK)
		return dec_fail(rec, err, errlen, "unknown task event %u",
				t->event);
	return 0;
}

int cpa_decode_mmap(const struct cpa_record *rec, struct cpa_mmap *m,
		    char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_MMAP, err, errlen))
		return -1;
	if (rec->len < MMAP_FIXED)
		return dec_fail(rec, err, errlen, "length %u below the fixed "
				"part (%d)", rec->len, MMAP_FIXED);
	const uint8_t *p = rec->payload;
	m->time_ns = cpa_get_le64(p);
	m->start = cpa_get_le64(p + 8);
	m->len = cpa_get_le64(p + 16);
	m->pgoff = cpa_get_le64(p + 24);
	m->inode = cpa_get_le64(p + 32);
	m->pid = cpa_get_le32(p + 40);
	m->prot = cpa_get_le32(p + 44);
	m->flags = cpa_get_le32(p + 48);
	m->build_id_len = p[52];
	if (m->build_id_len > CPA_BUILD_ID_MAX)
		return dec_fail(rec, err, errlen, "build id of %u bytes, at "
				"most %d", m->build_id_len, CPA_BUILD_ID_MAX);
	memcpy(m->build_id, p + 56, CPA_BUILD_ID_MAX);
	m->path_len = cpa_get_le16(p + 76);
	if (m->path_len > CPA_PATH_MAX ||
	    MMAP_FIXED + (uint32_t)m->path_len != rec->len)
		return dec_fail(rec, err, errlen,
				"path length %u does not match record length "
				"%u", m->path_len, rec->len);
	m->path = (const char *)p + MMAP_FIXED;
	if (memchr(m->path, '\0', m->path_len))
		return dec_fail(rec, err, errlen, "NUL byte in path");
	if (m->start + m->len < m->start)
		return dec_fail(rec, err, errlen, "mapping wraps the address "
				"space");
	return 0;
}

int cpa_decode_lost(const struct cpa_record *rec, struct cpa_lost *l,
		    char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_LOST, err, errlen))
		return -1;
	if (rec->len != LOST_FIXED)
		return dec_fail(rec, err, errlen, "length %u, expected %d",
				rec->len, LOST_FIXED);
	const uint8_t *p = rec->payload;
	l->time_ns = cpa_get_le64(p);
	l->count = cpa_get_le64(p + 8);
	l->reason = cpa_get_le32(p + 16);
	l->cpu = cpa_get_le32(p + 20);
	return 0;
}

int cpa_decode_string(const struct cpa_record *rec, struct cpa_string *s,
		      char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_STRING, err, errlen))
		return -1;
	if (rec->len < STRING_FIXED)
		return dec_fail(rec, err, errlen, "length %u, at least %d",
				rec->len, STRING_FIXED);
	s->id = cpa_get_le32(rec->payload);
	s->len = rec->len - STRING_FIXED;
	s->str = (const char *)rec->payload + STRING_FIXED;
	if (s->id == 0)
		return dec_fail(rec, err, errlen, "string id 0 is reserved");
	if (memchr(s->str, '\0', s->len))
		return dec_fail(rec, err, errlen, "NUL byte in string %u",
				s->id);
	return 0;
}

int cpa_decode_stack(const struct cpa_record *rec, struct cpa_stack *s,
		     char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_STACK, err, errlen))
		return -1;
	if (rec->len < STACK_FIXED)
		return dec_fail(rec, err, errlen, "length %u, at least %d",
				rec->len, STACK_FIXED);
	s->id = cpa_get_le32(rec->payload);
	s->n = cpa_get_le32(rec->payload + 4);
	if (s->id == 0)
		return dec_fail(rec, err, errlen, "stack id 0 is reserved");
	if (s->n > CPA_MAX_STACK_DEPTH)
		return dec_fail(rec, err, errlen, "%u frames, at most %d",
				s->n, CPA_MAX_STACK_DEPTH);
	if (STACK_FIXED + 4ull * s->n != rec->len)
		return dec_fail(rec, err, errlen,
				"length %u does not match %u frames",
				rec->len, s->n);
	s->frames = rec->payload + STACK_FIXED;
	return 0;
}

int cpa_decode_sample(const struct cpa_record *rec, struct cpa_sample *s,
		      char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_SAMPLE, err, errlen))
		return -1;
	if (rec->len != SAMPLE_FIXED)
		return dec_fail(rec, err, errlen, "length %u, expected %d",
				rec->len, SAMPLE_FIXED);
	const uint8_t *p = rec->payload;
	s->time_ns = cpa_get_le64(p);
	s->weight = cpa_get_le64(p + 8);
	s->cgroup_id = cpa_get_le64(p + 16);
	s->pid = cpa_get_le32(p + 24);
	s->tid = cpa_get_le32(p + 28);
	s->cpu = cpa_get_le32(p + 32);
	s->kind = cpa_get_le16(p + 36);
	s->flags = cpa_get_le16(p + 38);
	s->stack_id = cpa_get_le32(p + 40);
	s->comm_id = cpa_get_le32(p + 44);
	s->thread_id = cpa_get_le32(p + 48);
	s->container_id = cpa_get_le32(p + 52);
	s->env_id = cpa_get_le32(p + 56);
	if (s->flags & CPA_RAW_ALLOC_ID)
		return dec_fail(rec, err, errlen, "sample with flag 0x%x "
				"(allocation id), a raw-sample only flag",
				CPA_RAW_ALLOC_ID);
	return 0;
}

int cpa_decode_meta(const struct cpa_record *rec, struct cpa_meta *m,
		    char *err, size_t errlen)
{
	if (want_type(rec, CPA_REC_META, err, errlen))
		return -1;
	const char *p = (const char *)rec->payload;
	const char *nul = memchr(p, '\0', rec->len);
	if (!nul)
		return dec_fail(rec, err, errlen, "no NUL after the key");
	m->key = p;
	m->key_len = (uint32_t)(nul - p);
	m->value = nul + 1;
	m->value_len = rec->len - m->key_len - 1;
	if (m->key_len == 0)
		return dec_fail(rec, err, errlen, "empty key");
	if (memchr(m->value, '\0', m->value_len))
		return dec_fail(rec, err, errlen, "NUL byte in value");
	return 0;
}

bool cpa_meta_is(const struct cpa_meta *m, const char *key)
{
	size_t n = strlen(key);

	return m->key_len == n && !memcmp(m->key, key, n);
}

bool cpa_meta_u64(const struct cpa_meta *m, uint64_t *v)
{
	char buf[32];
	size_t n = m->value_len < sizeof(buf) - 1 ? m->value_len
						  : sizeof(buf) - 1;

	if (!n || m->value[0] < '0' || m->value[0] > '9')
		return false;
	memcpy(buf, m->value, n);
	buf[n] = '\0';
	*v = strtoull(buf, NULL, 10);
	return true;
}

bool cpa_meta_frequency(const struct cpa_meta *m, uint64_t *hz)
{
	uint64_t n;

	if (!cpa_meta_is(m, CPA_META_FREQUENCY) && !cpa_meta_is(m, CPA_META_FREQ))
		return false;
	if (!cpa_meta_u64(m, &n) || n == 0 || n > 1000000)
		return false;
	*hz = n;
	return true;
}

int cpa_decode_end(const struct cpa_record *rec, struct cpa_end *e, char *err,
		   size_t errlen)
{
	if (want_type(rec, CPA_REC_END, err, errlen))
		return -1;
	if (rec->len != END_FIXED)
		return dec_fail(rec, err, errlen, "length %u, expected %d",
				rec->len, END_FIXED);
	e->samples = cpa_get_le64(rec->payload);
	e->lost = cpa_get_le64(rec->payload + 8);
	e->records = cpa_get_le64(rec->payload + 16);
	return 0;
}

/* ---- names ------------------------------------------------------------- */

static const struct {
	const char *name, *marker;
	enum cpa_unit unit;
} kinds[CPA_KIND_COUNT] = {
	[CPA_KIND_ONCPU] = {"oncpu", NULL, CPA_UNIT_SAMPLES},
	[CPA_KIND_OFFCPU_BLOCKED] = {"offcpu-blocked", "off-CPU blocked",
				     CPA_UNIT_NS},
	[CPA_KIND_SCHED_PREEMPTED] = {"offcpu-preempted",
				      "scheduling delay (preempted)",
				      CPA_UNIT_NS},
	[CPA_KIND_SCHED_YIELDED] = {"offcpu-yielded",
				    "scheduling delay (yielded)", CPA_UNIT_NS},
	[CPA_KIND_SCHED_DELAY] = {"offcpu-delay", "scheduling delay",
				  CPA_UNIT_NS},
	[CPA_KIND_IRQOFF] = {"irqoff", "IRQ off", CPA_UNIT_NS},
	[CPA_KIND_PROBE] = {"probe", "probe hits", CPA_UNIT_COUNT},
	[CPA_KIND_MEM_VIRT] = {"mem-virt", "memory virtual", CPA_UNIT_BYTES},
	[CPA_KIND_MEM_PHYS] = {"mem-phys", "memory physical", CPA_UNIT_BYTES},
	[CPA_KIND_MEM_USAGE] = {"mem-usage", "memory usage", CPA_UNIT_BYTES},
	[CPA_KIND_HEAP_ALLOC] = {"heap-alloc", "heap allocated",
				 CPA_UNIT_BYTES},
	[CPA_KIND_HEAP_INUSE] = {"heap-inuse", "heap in use", CPA_UNIT_BYTES},
	[CPA_KIND_JAVA_ALLOC] = {"java-alloc", "Java allocated",
				 CPA_UNIT_BYTES},
	[CPA_KIND_JAVA_LIVE] = {"java-live", "Java live", CPA_UNIT_BYTES},
};

const char *cpa_kind_name(unsigned kind)
{
	return kind < CPA_KIND_COUNT ? kinds[kind].name : NULL;
}

const char *cpa_kind_marker(unsigned kind)
{
	return kind < CPA_KIND_COUNT ? kinds[kind].marker : NULL;
}

int cpa_kind_parse(const char *name)
{
	for (int i = 0; i < CPA_KIND_COUNT; i++)
		if (kinds[i].name && !strcmp(name, kinds[i].name))
			return i;
	/* the name before 1.3, when nothing produced the kind */
	if (!strcmp(name, "mem-rss"))
		return CPA_KIND_MEM_USAGE;
	return -1;
}

bool cpa_kind_nets(unsigned kind)
{
	return kind == CPA_KIND_MEM_USAGE || kind == CPA_KIND_HEAP_INUSE ||
	       kind == CPA_KIND_JAVA_LIVE;
}

enum cpa_unit cpa_kind_unit(unsigned kind)
{
	return kind < CPA_KIND_COUNT ? kinds[kind].unit : CPA_UNIT_COUNT;
}

const char *cpa_unit_name(enum cpa_unit unit)
{
	switch (unit) {
	case CPA_UNIT_SAMPLES: return "samples";
	case CPA_UNIT_NS: return "ns";
	case CPA_UNIT_COUNT: return "count";
	case CPA_UNIT_BYTES: return "bytes";
	case CPA_UNIT_PAGES: return "pages";
	}
	return "count";
}

const char *cpa_lost_reason_name(unsigned reason)
{
	static const char *const names[CPA_LOST_REASON_COUNT] = {
		[CPA_LOST_RINGBUF] = "ringbuf",
		[CPA_LOST_STACK_COPY] = "stack-copy",
		[CPA_LOST_PROBE_RATE] = "probe-rate",
		[CPA_LOST_STATE_FULL] = "state-full",
		[CPA_LOST_BACKPRESSURE] = "backpressure",
		[CPA_LOST_UNWIND] = "unwind",
		[CPA_LOST_PERF] = "perf",
		[CPA_LOST_UPSTREAM] = "upstream",
		[CPA_LOST_ALLOC_TABLE] = "alloc-table",
	};
	if (reason < CPA_LOST_REASON_COUNT && names[reason])
		return names[reason];
	return "unknown";
}

const char *cpa_record_type_name(unsigned type)
{
	switch (type) {
	case CPA_REC_RAW_SAMPLE: return "raw-sample";
	case CPA_REC_TASK: return "task";
	case CPA_REC_MMAP: return "mmap";
	case CPA_REC_LOST: return "lost";
	case CPA_REC_STRING: return "string";
	case CPA_REC_STACK: return "stack";
	case CPA_REC_SAMPLE: return "sample";
	case CPA_REC_META: return "meta";
	case CPA_REC_RESET: return "reset";
	case CPA_REC_END: return "end";
	}
	return "unknown";
}

bool cpa_stream_detect(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	return len >= 1 && p[0] == (uint8_t)CPA_STREAM_MAGIC[0];
}

int cpa_record_check(const struct cpa_record *rec, char *err, size_t errlen)
{
	union {
		struct cpa_task t;
		struct cpa_mmap m;
		struct cpa_lost l;
		struct cpa_string s;
		struct cpa_stack k;
		struct cpa_sample x;
		struct cpa_meta e;
		struct cpa_end n;
	} u;
	switch (rec->type) {
	case CPA_REC_RAW_SAMPLE: {
		/* a snapshot stored as zero runs is checked by decoding it */
		struct cpa_raw_sample *s = cpa_malloc(sizeof(*s));
		uint8_t *stack = cpa_malloc(CPA_MAX_STACK_BYTES);
		int r = cpa_decode_raw_sample(rec, s, stack, err, errlen);
		free(stack);
		free(s);
		return r;
	}
	case CPA_REC_TASK:
		return cpa_decode_task(rec, &u.t, err, errlen);
	case CPA_REC_MMAP:
		return cpa_decode_mmap(rec, &u.m, err, errlen);
	case CPA_REC_LOST:
		return cpa_decode_lost(rec, &u.l, err, errlen);
	case CPA_REC_STRING:
		return cpa_decode_string(rec, &u.s, err, errlen);
	case CPA_REC_STACK:
		return cpa_decode_stack(rec, &u.k, err, errlen);
	case CPA_REC_SAMPLE:
		return cpa_decode_sample(rec, &u.x, err, errlen);
	case CPA_REC_META:
		return cpa_decode_meta(rec, &u.e, err, errlen);
	case CPA_REC_RESET:
		if (rec->len)
			return dec_fail(rec, err, errlen, "length %u, "
					"expected 0", rec->len);
		return 0;
	case CPA_REC_END:
		return cpa_decode_end(rec, &u.n, err, errlen);
	default:
		return 0;
	}
}
