/* SPDX-License-Identifier: MIT */
/*
 * The store codec: file headers, index entries, compressed blocks and the
 * varint payloads of dictionary and data blocks. Everything here works on
 * memory so that the fuzz targets exercise exactly what readers run.
 * docs/store-format.md gives the layouts these functions implement.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "log.h"
#include "store.h"

const char *const cpa_store_file_names[3] = {"index", "dict", "data"};

static const char file_magic[3][8] = {
	{'\x89', 'C', 'P', 'A', 'I', 'D', 'X', '\n'},
	{'\x89', 'C', 'P', 'A', 'D', 'C', 'T', '\n'},
	{'\x89', 'C', 'P', 'A', 'D', 'A', 'T', '\n'},
};
static const char block_magic[4] = {'C', 'P', 'A', 'B'};

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- little-endian fixed fields and buffers ---------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void cpa_store_buf_reserve(struct cpa_store_buf *b, size_t more)
{
	if (b->cap - b->len >= more)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < more)
		cap *= 2;
	b->p = cpa_realloc(b->p, cap);
	b->cap = cap;
}

void cpa_store_buf_free(struct cpa_store_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void cpa_store_buf_varint(struct cpa_store_buf *b, uint64_t v)
{
	cpa_store_buf_reserve(b, 10);
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
}

static void buf_bytes(struct cpa_store_buf *b, const void *p, size_t len)
{
	cpa_store_buf_reserve(b, len);
	memcpy(b->p + b->len, p, len);
	b->len += len;
}

/* A read cursor over untrusted bytes: a short or overlong varint sets
 * bad and yields 0, so decoders check once per item, not per field. */
struct cursor {
	const uint8_t *p, *start, *end;
	bool bad;
};

static uint64_t cur_varint(struct cursor *c)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (c->p == c->end) {
			c->bad = true;
			return 0;
		}
		uint8_t byte = *c->p++;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			if (shift == 63 && byte > 1)
				break;
			return v;
		}
	}
	c->bad = true;
	return 0;
}

static uint32_t cur_u32(struct cursor *c)
{
	uint64_t v = cur_varint(c);
	if (v > UINT32_MAX) {
		c->bad = true;
		return 0;
	}
	return (uint32_t)v;
}

static size_t cur_left(const struct cursor *c)
{
	return (size_t)(c->end - c->p);
}

static size_t cur_off(const struct cursor *c)
{
	return (size_t)(c->p - c->start);
}

/* ---- CRC-32 (IEEE 802.3, as zlib and gzip) ----------------------------- */

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

uint32_t cpa_store_crc32(const void *data, size_t len)
{
	if (!crc_table[1])
		crc_init();
	const uint8_t *p = data;
	uint32_t c = 0xffffffffu;
	while (len--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* ---- file headers -------------------------------------------------------- */

void cpa_store_header_encode(uint8_t out[CPA_STORE_FILE_HEADER],
			     enum cpa_store_file which, uint64_t interval_ns,
			     uint64_t start_ns)
{
	memset(out, 0, CPA_STORE_FILE_HEADER);
	memcpy(out, file_magic[which], 8);
	put16(out + 8, CPA_STORE_MAJOR);
	put16(out + 10, CPA_STORE_MINOR);
	put32(out + 12, CPA_STORE_FILE_HEADER);
	put64(out + 16, interval_ns);
	put64(out + 24, start_ns);
	put32(out + 60, cpa_store_crc32(out, 60));
}

int cpa_store_header_decode(const uint8_t *buf, size_t len,
			    enum cpa_store_file which, uint16_t *major,
			    uint16_t *minor, uint64_t *interval_ns,
			    uint64_t *start_ns, char *err, size_t errlen)
{
	const char *what = cpa_store_file_names[which];
	if (len < 8 || memcmp(buf, file_magic[which], 8))
		return fail(err, errlen, "byte 0: not a cpa store %s file "
			    "(bad magic)", what);
	if (len < CPA_STORE_FILE_HEADER)
		return fail(err, errlen, "byte %zu: truncated %s header (%zu "
			    "of %d bytes)", len, what, len,
			    CPA_STORE_FILE_HEADER);
	*major = get16(buf + 8);
	*minor = get16(buf + 10);
	if (*major > CPA_STORE_MAJOR) {
		fail(err, errlen, "byte 8: store format %u.%u is newer than "
		     "this build reads (%u.x)", *major, *minor,
		     CPA_STORE_MAJOR);
		return -2;
	}
	if (*major < 1)
		return fail(err, errlen, "byte 8: bad format version %u.%u",
			    *major, *minor);
	if (get32(buf + 60) != cpa_store_crc32(buf, 60))
		return fail(err, errlen, "byte 60: %s header checksum "
			    "mismatch", what);
	if (get32(buf + 12) != CPA_STORE_FILE_HEADER)
		return fail(err, errlen, "byte 12: bad header length %u",
			    get32(buf + 12));
	*interval_ns = get64(buf + 16);
	*start_ns = get64(buf + 24);
	if (*interval_ns == 0)
		return fail(err, errlen, "byte 16: window interval is 0");
	return 0;
}

/* ---- index entries ------------------------------------------------------ */

void cpa_store_index_encode(uint8_t out[CPA_STORE_INDEX_ENTRY],
			    const struct cpa_store_index_entry *e)
{
	put64(out + 0, e->cover_from);
	put64(out + 8, e->cover_to);
	put64(out + 16, e->min_start);
	put64(out + 24, e->max_end);
	put64(out + 32, e->data_off);
	put64(out + 40, e->dict_off);
	put32(out + 48, e->data_len);
	put32(out + 52, e->dict_len);
	put32(out + 56, e->n_windows);
	put32(out + 60, cpa_store_crc32(out, 60));
}

int cpa_store_index_decode(const uint8_t in[CPA_STORE_INDEX_ENTRY],
			   struct cpa_store_index_entry *e, char *err,
			   size_t errlen)
{
	if (get32(in + 60) != cpa_store_crc32(in, 60))
		return fail(err, errlen, "index entry checksum mismatch");
	e->cover_from = get64(in + 0);
	e->cover_to = get64(in + 8);
	e->min_start = get64(in + 16);
	e->max_end = get64(in + 24);
	e->data_off = get64(in + 32);
	e->dict_off = get64(in + 40);
	e->data_len = get32(in + 48);
	e->dict_len = get32(in + 52);
	e->n_windows = get32(in + 56);
	if (e->n_windows == 0 || e->min_start >= e->max_end)
		return fail(err, errlen, "index entry with no windows");
	if (e->cover_from > e->cover_to)
		return fail(err, errlen, "index entry covers a negative span");
	if (e->data_len < CPA_STORE_BLOCK_HEADER ||
	    e->data_len > CPA_STORE_BLOCK_HEADER + CPA_STORE_BLOCK_MAX)
		return fail(err, errlen, "index entry data length %u out of "
			    "range", e->data_len);
	if (e->dict_len && (e->dict_len < CPA_STORE_BLOCK_HEADER ||
			    e->dict_len > CPA_STORE_BLOCK_HEADER +
						  CPA_STORE_BLOCK_MAX))
		return fail(err, errlen, "index entry dictionary length %u "
			    "out of range", e->dict_len);
	return 0;
}

/* ---- compressed blocks -------------------------------------------------- */

int cpa_store_block_pack(struct cpa_store_buf *out, const void *raw,
			 size_t len, int level, char *err, size_t errlen)
{
	if (len > CPA_STORE_BLOCK_MAX)
		return fail(err, errlen, "block of %zu bytes exceeds the "
			    "%u-byte limit", len, CPA_STORE_BLOCK_MAX);
	size_t bound = ZSTD_compressBound(len);
	cpa_store_buf_reserve(out, CPA_STORE_BLOCK_HEADER + bound);
	uint8_t *h = out->p + out->len;
	size_t n = ZSTD_compress(h + CPA_STORE_BLOCK_HEADER, bound, raw, len,
				 level);
	if (ZSTD_isError(n))
		return fail(err, errlen, "zstd: %s", ZSTD_getErrorName(n));
	if (n > CPA_STORE_BLOCK_MAX)
		return fail(err, errlen, "compressed block too large");
	memcpy(h, block_magic, 4);
	put32(h + 4, (uint32_t)len);
	put32(h + 8, (uint32_t)n);
	put32(h + 12, cpa_store_crc32(h + CPA_STORE_BLOCK_HEADER, n));
	out->len += CPA_STORE_BLOCK_HEADER + n;
	return 0;
}

int cpa_store_block_unpack(const uint8_t *block, size_t len,
			   struct cpa_store_buf *raw, char *err, size_t errlen)
{
	if (len < CPA_STORE_BLOCK_HEADER || memcmp(block, block_magic, 4))
		return fail(err, errlen, "not a block (bad magic)");
	uint32_t raw_len = get32(block + 4), comp_len = get32(block + 8);
	if (raw_len > CPA_STORE_BLOCK_MAX)
		return fail(err, errlen, "block size %u over the limit",
			    raw_len);
	if ((size_t)comp_len != len - CPA_STORE_BLOCK_HEADER)
		return fail(err, errlen, "block length %u does not match the "
			    "index (%zu)", comp_len,
			    len - CPA_STORE_BLOCK_HEADER);
	if (get32(block + 12) !=
	    cpa_store_crc32(block + CPA_STORE_BLOCK_HEADER, comp_len))
		return fail(err, errlen, "block checksum mismatch");
	/* The frame says its own size; believe a large raw_len only when
	 * the frame agrees, so a damaged header cannot make us allocate. */
	unsigned long long fsize = ZSTD_getFrameContentSize(
		block + CPA_STORE_BLOCK_HEADER, comp_len);
	if (fsize != raw_len)
		return fail(err, errlen, "block size %u does not match its "
			    "zstd frame", raw_len);
	raw->len = 0;
	cpa_store_buf_reserve(raw, raw_len ? raw_len : 1);
	size_t n = ZSTD_decompress(raw->p, raw_len,
				   block + CPA_STORE_BLOCK_HEADER, comp_len);
	if (ZSTD_isError(n))
		return fail(err, errlen, "zstd: %s", ZSTD_getErrorName(n));
	if (n != raw_len)
		return fail(err, errlen, "block decompressed to %zu bytes, "
			    "header says %u", n, raw_len);
	raw->len = n;
	return 0;
}

/* ---- dictionary blocks -------------------------------------------------- */

void cpa_store_dict_init(struct cpa_store_dict *sd)
{
	memset(sd, 0, sizeof(*sd));
	cpa_dict_init(&sd->d);
	sd->caplabelsets = 64;
	sd->labelsets = cpa_calloc(sd->caplabelsets, sizeof(*sd->labelsets));
	sd->nlabelsets = 1;
}

void cpa_store_dict_free(struct cpa_store_dict *sd)
{
	cpa_dict_free(&sd->d);
	free(sd->labelsets);
	memset(sd, 0, sizeof(*sd));
}

/* Feeds one entry to cpa_dict as the stream record it would have been, so
 * id order and frame references are checked by the one dictionary code. */
static int dict_add_record(struct cpa_store_dict *sd, uint16_t type,
			   struct cpa_store_buf *payload, char *err,
			   size_t errlen)
{
	struct cpa_record rec = {
		.type = type,
		.len = (uint32_t)payload->len,
		.payload = payload->p,
	};
	char why[200];
	if (cpa_dict_add(&sd->d, &rec, why, sizeof(why)) < 0) {
		/* cpa_dict's "byte 0: " means nothing here; drop it. */
		const char *msg = strncmp(why, "byte ", 5) ? why
			: strchr(why, ':') ? strchr(why, ':') + 2 : why;
		return fail(err, errlen, "%s", msg);
	}
	return 0;
}

int cpa_store_dict_decode(struct cpa_store_dict *sd, const uint8_t *raw,
			  size_t len, char *err, size_t errlen)
{
	struct cursor c = {raw, raw, raw + len, false};
	struct cpa_store_buf pl = {0};
	int ret = -1;
	uint8_t id4[4];

	uint32_t first = cur_u32(&c), n = cur_u32(&c);
	if (c.bad || first != sd->d.nstrs) {
		fail(err, errlen, "dictionary offset 0: strings start at id "
		     "%u, expected %u", first, sd->d.nstrs);
		goto out;
	}
	if (n > cur_left(&c)) {
		fail(err, errlen, "dictionary: %u strings in %zu bytes", n,
		     cur_left(&c));
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t at = cur_off(&c);
		uint64_t slen = cur_varint(&c);
		if (c.bad || slen > cur_left(&c) ||
		    slen > CPA_RECORD_MAX - 4) {
			fail(err, errlen, "dictionary offset %zu: string %u "
			     "length out of range", at, first + i);
			goto out;
		}
		pl.len = 0;
		put32(id4, first + i);
		buf_bytes(&pl, id4, 4);
		buf_bytes(&pl, c.p, slen);
		c.p += slen;
		if (dict_add_record(sd, CPA_REC_STRING, &pl, err, errlen) < 0)
			goto out;
	}

	first = cur_u32(&c);
	n = cur_u32(&c);
	if (c.bad || first != sd->d.nstacks || n > cur_left(&c)) {
		fail(err, errlen, "dictionary offset %zu: bad stack run (id "
		     "%u, expected %u)", cur_off(&c), first, sd->d.nstacks);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t at = cur_off(&c);
		uint32_t depth = cur_u32(&c);
		if (c.bad || depth > CPA_MAX_STACK_DEPTH ||
		    depth > cur_left(&c)) {
			fail(err, errlen, "dictionary offset %zu: stack %u "
			     "depth out of range", at, first + i);
			goto out;
		}
		pl.len = 0;
		put32(id4, first + i);
		buf_bytes(&pl, id4, 4);
		put32(id4, depth);
		buf_bytes(&pl, id4, 4);
		for (uint32_t k = 0; k < depth; k++) {
			put32(id4, cur_u32(&c));
			buf_bytes(&pl, id4, 4);
		}
		if (c.bad) {
			fail(err, errlen, "dictionary offset %zu: stack %u "
			     "truncated", at, first + i);
			goto out;
		}
		if (dict_add_record(sd, CPA_REC_STACK, &pl, err, errlen) < 0)
			goto out;
	}

	first = cur_u32(&c);
	n = cur_u32(&c);
	if (c.bad || first != sd->nlabelsets || n > cur_left(&c) / 10) {
		fail(err, errlen, "dictionary offset %zu: bad labelset run "
		     "(id %u, expected %u)", cur_off(&c), first,
		     sd->nlabelsets);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t at = cur_off(&c);
		struct cpa_store_labelset ls;
		uint64_t kind = cur_varint(&c), flags = cur_varint(&c);
		ls.pid = cur_u32(&c);
		ls.tid = cur_u32(&c);
		ls.cpu = cur_u32(&c);
		ls.cgroup_id = cur_varint(&c);
		ls.comm = cur_u32(&c);
		ls.thread = cur_u32(&c);
		ls.container = cur_u32(&c);
		ls.env = cur_u32(&c);
		if (c.bad || kind > UINT16_MAX || flags > UINT16_MAX) {
			fail(err, errlen, "dictionary offset %zu: labelset %u "
			     "truncated or out of range", at, first + i);
			goto out;
		}
		ls.kind = (uint16_t)kind;
		ls.flags = (uint16_t)flags;
		if (ls.comm >= sd->d.nstrs || ls.thread >= sd->d.nstrs ||
		    ls.container >= sd->d.nstrs || ls.env >= sd->d.nstrs) {
			fail(err, errlen, "dictionary offset %zu: labelset %u "
			     "names an undefined string", at, first + i);
			goto out;
		}
		if (sd->nlabelsets == sd->caplabelsets) {
			sd->caplabelsets *= 2;
			sd->labelsets = cpa_realloc(
				sd->labelsets,
				sd->caplabelsets * sizeof(*sd->labelsets));
		}
		sd->labelsets[sd->nlabelsets++] = ls;
	}
	if (cur_left(&c)) {
		fail(err, errlen, "dictionary offset %zu: %zu stray bytes at "
		     "the end", cur_off(&c), cur_left(&c));
		goto out;
	}
	ret = 0;
out:
	cpa_store_buf_free(&pl);
	return ret;
}

/* ---- data blocks -------------------------------------------------------- */

int cpa_store_windows_decode(const uint8_t *raw, size_t len,
			     const struct cpa_store_dict *sd,
			     const struct cpa_store_index_entry *ie,
			     uint64_t interval_ns, struct cpa_store_buf *scratch,
			     cpa_store_window_fn fn, void *arg, char *err,
			     size_t errlen)
{
	struct cursor c = {raw, raw, raw + len, false};
	uint32_t nw = cur_u32(&c);
	if (c.bad || nw != ie->n_windows)
		return fail(err, errlen, "data offset 0: %u windows, the index "
			    "says %u", nw, ie->n_windows);
	uint64_t start = ie->min_start;
	for (uint32_t w = 0; w < nw; w++) {
		size_t at = cur_off(&c);
		uint64_t delta = cur_varint(&c);
		uint32_t n = cur_u32(&c);
		if (c.bad || (w > 0 && delta == 0) ||
		    delta > UINT64_MAX - start)
			return fail(err, errlen, "data offset %zu: bad window "
				    "header", at);
		start += delta;
		if (start < ie->min_start || start > ie->max_end ||
		    ie->max_end - start < interval_ns)
			return fail(err, errlen, "data offset %zu: window "
				    "outside the span the index gives", at);
		/* Each entry takes at least three bytes: bound the
		 * allocation by the input before trusting n. */
		if (n == 0 || n > cur_left(&c) / 3)
			return fail(err, errlen, "data offset %zu: window of %u "
				    "entries in %zu bytes", at, n,
				    cur_left(&c));
		scratch->len = 0;
		cpa_store_buf_reserve(scratch,
				      (size_t)n * sizeof(struct cpa_store_entry));
		struct cpa_store_entry *e = (void *)scratch->p;
		uint32_t ls = 0, st = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t dl = cur_varint(&c), ds = cur_varint(&c);
			uint64_t wt = cur_varint(&c);
			if (c.bad)
				return fail(err, errlen, "data offset %zu: "
					    "truncated entry", cur_off(&c));
			if (dl > UINT32_MAX - ls)
				return fail(err, errlen, "data offset %zu: "
					    "labelset out of range",
					    cur_off(&c));
			if (dl) {
				ls += (uint32_t)dl;
				st = 0;
			} else if (i > 0 && ds == 0) {
				return fail(err, errlen, "data offset %zu: "
					    "repeated entry", cur_off(&c));
			}
			if (ds > UINT32_MAX - st)
				return fail(err, errlen, "data offset %zu: "
					    "stack out of range", cur_off(&c));
			st += (uint32_t)ds;
			if (ls == 0 || ls >= sd->nlabelsets)
				return fail(err, errlen, "data offset %zu: "
					    "undefined labelset %u",
					    cur_off(&c), ls);
			if (st == 0 || st >= sd->d.nstacks)
				return fail(err, errlen, "data offset %zu: "
					    "undefined stack %u", cur_off(&c),
					    st);
			e[i].labelset = ls;
			e[i].stack = st;
			e[i].weight = wt;
		}
		int r = fn(arg, start, e, n);
		if (r)
			return r;
	}
	if (cur_left(&c))
		return fail(err, errlen, "data offset %zu: %zu stray bytes at "
			    "the end", cur_off(&c), cur_left(&c));
	return 0;
}

/* ---- meta ------------------------------------------------------------------ */

static bool meta_key_ok(const char *k, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = k[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' ||
		      ch == '-'))
			return false;
	}
	return true;
}

int cpa_store_meta_parse(const char *text, size_t len, char ***kv, char *err,
			 size_t errlen)
{
	size_t n = 0, cap = 16;
	char **out = cpa_malloc(cap * sizeof(*out));
	const char *p = text, *end = text + len;
	unsigned line = 0;
	if (memchr(text, '\0', len)) {
		free(out);
		return fail(err, errlen, "NUL byte in meta");
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		line++;
		if (eol > p && *p != '#') {
			const char *eq = memchr(p, '=', (size_t)(eol - p));
			if (!eq || !meta_key_ok(p, (size_t)(eq - p))) {
				out[n] = NULL;
				cpa_store_meta_free(out);
				return fail(err, errlen, "line %u: expected "
					    "key=value", line);
			}
			if (n + 3 > cap) {
				cap *= 2;
				out = cpa_realloc(out, cap * sizeof(*out));
			}
			out[n++] = cpa_strndup(p, (size_t)(eq - p));
			out[n++] = cpa_strndup(eq + 1, (size_t)(eol - eq - 1));
		}
		p = nl ? nl + 1 : end;
	}
	out[n] = NULL;
	*kv = out;
	return 0;
}

const char *cpa_store_meta_get(char *const *kv, const char *key)
{
	const char *found = NULL;
	for (size_t i = 0; kv && kv[i]; i += 2)
		if (!strcmp(kv[i], key))
			found = kv[i + 1];	/* the last one wins */
	return found;
}

void cpa_store_meta_free(char **kv)
{
	for (size_t i = 0; kv && kv[i]; i++)
		free(kv[i]);
	free(kv);
}

/* ---- names -------------------------------------------------------------- */

void cpa_store_segment_name(uint64_t start_ns, unsigned seq, char *buf,
			    size_t len)
{
	time_t t = (time_t)(start_ns / 1000000000ull);
	struct tm tm;
	gmtime_r(&t, &tm);
	char base[24];
	strftime(base, sizeof(base), "%Y%m%dT%H%M%SZ", &tm);
	if (seq)
		snprintf(buf, len, "%s-%u", base, seq);
	else
		snprintf(buf, len, "%s", base);
}

bool cpa_store_is_segment_name(const char *name)
{
	/* YYYYMMDDTHHMMSSZ, optionally followed by -N */
	size_t i;
	for (i = 0; i < 16; i++) {
		char ch = name[i];
		if (!ch)
			return false;
		if (i == 8 ? ch != 'T'
		    : i == 15 ? ch != 'Z' : (ch < '0' || ch > '9'))
			return false;
	}
	if (!name[16])
		return true;
	if (name[16] != '-' || !name[17] || strlen(name) >= CPA_STORE_NAME_MAX)
		return false;
	for (i = 17; name[i]; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}
