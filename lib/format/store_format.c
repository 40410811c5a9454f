/* SPDX-License-Identifier: MIT */
/*
 * The store codec: file headers, index entries, compressed blocks and the
 * varint payloads of dictionary and data blocks. Everything here works on
 * memory so that the fuzz targets exercise exactly what readers run.
 * docs/store-format.md gives the layouts these functions implement.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "le.h"
#include "leb128.h"
#include "buf.h"
#include "log.h"
#include "store.h"

const char *const cpa_store_file_names[4] = {"index", "dict", "data",
					    "sums"};

static const char file_magic[4][8] = {
	{'\x89', 'C', 'P', 'A', 'I', 'D', 'X', '\n'},
	{'\x89', 'C', 'P', 'A', 'D', 'C', 'T', '\n'},
	{'\x89', 'C', 'P', 'A', 'D', 'A', 'T', '\n'},
	{'\x89', 'C', 'P', 'A', 'S', 'U', 'M', '\n'},
};
static const char block_magic[4] = {'C', 'P', 'A', 'B'};

/* A read cursor over untrusted bytes: a short or overlong varint sets
 * bad and yields 0, so decoders check once per item, not per field. */
struct cursor {
	const uint8_t *p, *start, *end;
	bool bad;
};

static uint64_t cur_varint(struct cursor *c)
{
	uint64_t v;
	/* most numbers of a block are ids and deltas under 128 */
	if (c->p < c->end && *c->p < 0x80)
		return *c->p++;
	if (!cpa_uleb128(&c->p, c->end, &v)) {
		c->bad = true;
		return 0;
	}
	return v;
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

/* Eight bytes a step (slicing-by-8): every data block a query reads is
 * checked, and a byte at a time took a tenth of a day's scan. Table k
 * gives the CRC of a byte followed by k zero bytes. */
static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;	/* cpa-query reads
							 * on two threads */

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			crc_table[k][i] = crc_table[0][crc_table[k - 1][i] & 0xff] ^
					  crc_table[k - 1][i] >> 8;
}

uint32_t cpa_store_crc32(const void *data, size_t len)
{
	pthread_once(&crc_once, crc_init);
	const uint8_t *p = data;
	uint32_t c = 0xffffffffu;
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t lo = c ^ cpa_get_le32(p), hi = cpa_get_le32(p + 4);
		c = crc_table[7][lo & 0xff] ^ crc_table[6][lo >> 8 & 0xff] ^
		    crc_table[5][lo >> 16 & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][hi >> 8 & 0xff] ^
		    crc_table[1][hi >> 16 & 0xff] ^ crc_table[0][hi >> 24];
	}
	while (len--)
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* ---- file headers -------------------------------------------------------- */

void cpa_store_header_encode(uint8_t out[CPA_STORE_FILE_HEADER],
			     enum cpa_store_file which, uint64_t interval_ns,
			     uint64_t start_ns)
{
	memset(out, 0, CPA_STORE_FILE_HEADER);
	memcpy(out, file_magic[which], 8);
	cpa_put_le16(out + 8, CPA_STORE_MAJOR);
	cpa_put_le16(out + 10, CPA_STORE_MINOR);
	cpa_put_le32(out + 12, CPA_STORE_FILE_HEADER);
	cpa_put_le64(out + 16, interval_ns);
	cpa_put_le64(out + 24, start_ns);
	cpa_put_le32(out + 60, cpa_store_crc32(out, 60));
}

int cpa_store_header_decode(const uint8_t *buf, size_t len,
			    enum cpa_store_file which, uint16_t *major,
			    uint16_t *minor, uint64_t *interval_ns,
			    uint64_t *start_ns, char *err, size_t errlen)
{
	const char *what = cpa_store_file_names[which];
	if (len < 8 || memcmp(buf, file_magic[which], 8))
		return cpa_fail(err, errlen, "byte 0: not a cpa store %s file "
			    "(bad magic)", what);
	if (len < CPA_STORE_FILE_HEADER)
		return cpa_fail_at(err, errlen, len, "truncated %s header (%zu "
				   "of %d bytes)", what, len,
				   CPA_STORE_FILE_HEADER);
	*major = cpa_get_le16(buf + 8);
	*minor = cpa_get_le16(buf + 10);
	if (*major > CPA_STORE_MAJOR) {
		cpa_fail(err, errlen, "byte 8: store format %u.%u is newer than "
		     "this build reads (%u.x)", *major, *minor,
		     CPA_STORE_MAJOR);
		return -2;
	}
	if (*major < 1)
		return cpa_fail(err, errlen, "byte 8: bad format version %u.%u",
			    *major, *minor);
	if (cpa_get_le32(buf + 60) != cpa_store_crc32(buf, 60))
		return cpa_fail(err, errlen, "byte 60: %s header checksum "
			    "mismatch", what);
	if (cpa_get_le32(buf + 12) != CPA_STORE_FILE_HEADER)
		return cpa_fail(err, errlen, "byte 12: bad header length %u",
			    cpa_get_le32(buf + 12));
	*interval_ns = cpa_get_le64(buf + 16);
	*start_ns = cpa_get_le64(buf + 24);
	if (*interval_ns == 0)
		return cpa_fail(err, errlen, "byte 16: window interval is 0");
	return 0;
}

/* ---- index entries ------------------------------------------------------ */

void cpa_store_index_encode(uint8_t out[CPA_STORE_INDEX_ENTRY],
			    const struct cpa_store_index_entry *e)
{
	cpa_put_le64(out + 0, e->cover_from);
	cpa_put_le64(out + 8, e->cover_to);
	cpa_put_le64(out + 16, e->min_start);
	cpa_put_le64(out + 24, e->max_end);
	cpa_put_le64(out + 32, e->data_off);
	cpa_put_le64(out + 40, e->dict_off);
	cpa_put_le32(out + 48, e->data_len);
	cpa_put_le32(out + 52, e->dict_len);
	cpa_put_le32(out + 56, e->n_windows);
	cpa_put_le32(out + 60, cpa_store_crc32(out, 60));
}

int cpa_store_index_decode(const uint8_t in[CPA_STORE_INDEX_ENTRY],
			   struct cpa_store_index_entry *e, char *err,
			   size_t errlen)
{
	if (cpa_get_le32(in + 60) != cpa_store_crc32(in, 60))
		return cpa_fail(err, errlen, "index entry checksum mismatch");
	e->cover_from = cpa_get_le64(in + 0);
	e->cover_to = cpa_get_le64(in + 8);
	e->min_start = cpa_get_le64(in + 16);
	e->max_end = cpa_get_le64(in + 24);
	e->data_off = cpa_get_le64(in + 32);
	e->dict_off = cpa_get_le64(in + 40);
	e->data_len = cpa_get_le32(in + 48);
	e->dict_len = cpa_get_le32(in + 52);
	e->n_windows = cpa_get_le32(in + 56);
	if (e->n_windows == 0 || e->min_start >= e->max_end)
		return cpa_fail(err, errlen, "index entry with no windows");
	if (e->cover_from > e->cover_to)
		return cpa_fail(err, errlen, "index entry covers a negative span");
	if (e->data_len < CPA_STORE_BLOCK_HEADER ||
	    e->data_len > CPA_STORE_BLOCK_HEADER + CPA_STORE_BLOCK_MAX)
		return cpa_fail(err, errlen, "index entry data length %u out of "
			    "range", e->data_len);
	if (e->dict_len && (e->dict_len < CPA_STORE_BLOCK_HEADER ||
			    e->dict_len > CPA_STORE_BLOCK_HEADER +
						  CPA_STORE_BLOCK_MAX))
		return cpa_fail(err, errlen, "index entry dictionary length %u "
			    "out of range", e->dict_len);
	return 0;
}

/* ---- compressed blocks -------------------------------------------------- */

int cpa_store_block_pack(struct cpa_buf *out, const void *raw,
			 size_t len, int level, char *err, size_t errlen)
{
	if (len > CPA_STORE_BLOCK_MAX)
		return cpa_fail(err, errlen, "block of %zu bytes exceeds the "
			    "%u-byte limit", len, CPA_STORE_BLOCK_MAX);
	size_t bound = ZSTD_compressBound(len);
	cpa_buf_reserve(out, CPA_STORE_BLOCK_HEADER + bound);
	uint8_t *h = out->p + out->len;
	size_t n = ZSTD_compress(h + CPA_STORE_BLOCK_HEADER, bound, raw, len,
				 level);
	if (ZSTD_isError(n))
		return cpa_fail(err, errlen, "zstd: %s", ZSTD_getErrorName(n));
	if (n > CPA_STORE_BLOCK_MAX)
		return cpa_fail(err, errlen, "compressed block too large");
	memcpy(h, block_magic, 4);
	cpa_put_le32(h + 4, (uint32_t)len);
	cpa_put_le32(h + 8, (uint32_t)n);
	cpa_put_le32(h + 12, cpa_store_crc32(h + CPA_STORE_BLOCK_HEADER, n));
	out->len += CPA_STORE_BLOCK_HEADER + n;
	return 0;
}

static const char sums_magic[4] = {'C', 'P', 'A', 'T'};

void cpa_store_sums_block(struct cpa_buf *out, const void *raw, size_t len)
{
	cpa_buf_reserve(out, CPA_STORE_BLOCK_HEADER + len);
	uint8_t *h = out->p + out->len;
	memcpy(h, sums_magic, 4);
	cpa_put_le32(h + 4, (uint32_t)len);
	cpa_put_le32(h + 8, (uint32_t)len);
	cpa_put_le32(h + 12, cpa_store_crc32(raw, len));
	memcpy(h + CPA_STORE_BLOCK_HEADER, raw, len);
	out->len += CPA_STORE_BLOCK_HEADER + len;
}

int cpa_store_sums_unblock(const uint8_t *block, size_t len,
			   const uint8_t **raw, size_t *rawlen, char *err,
			   size_t errlen)
{
	if (len < CPA_STORE_BLOCK_HEADER || memcmp(block, sums_magic, 4))
		return cpa_fail(err, errlen, "not a sums block (bad magic)");
	uint32_t n = cpa_get_le32(block + 8);
	if (cpa_get_le32(block + 4) != n || n > CPA_STORE_BLOCK_MAX ||
	    (size_t)n != len - CPA_STORE_BLOCK_HEADER)
		return cpa_fail(err, errlen, "bad sums block length %u", n);
	if (cpa_get_le32(block + 12) !=
	    cpa_store_crc32(block + CPA_STORE_BLOCK_HEADER, n))
		return cpa_fail(err, errlen, "block checksum mismatch");
	*raw = block + CPA_STORE_BLOCK_HEADER;
	*rawlen = n;
	return 0;
}

/*
 * A decompression context per thread, made once: ZSTD_decompress makes
 * and frees one a call, and a day's 18000 blocks spent a tenth of a
 * query's time allocating and clearing those contexts' pages. The key's
 * destructor frees a reading thread's context when it ends.
 */
static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;

static void dctx_free(void *p)
{
	ZSTD_freeDCtx(p);
}

static void dctx_key_make(void)
{
	if (pthread_key_create(&dctx_key, dctx_free))
		cpa_die("pthread_key_create: out of keys");
}

static ZSTD_DCtx *thread_dctx(void)
{
	pthread_once(&dctx_once, dctx_key_make);
	ZSTD_DCtx *d = pthread_getspecific(dctx_key);
	if (!d) {
		if (!(d = ZSTD_createDCtx()))
			cpa_die("out of memory for a zstd context");
		pthread_setspecific(dctx_key, d);
	}
	return d;
}

int cpa_store_block_unpack(const uint8_t *block, size_t len,
			   struct cpa_buf *raw, char *err, size_t errlen)
{
	if (len < CPA_STORE_BLOCK_HEADER || memcmp(block, block_magic, 4))
		return cpa_fail(err, errlen, "not a block (bad magic)");
	uint32_t raw_len = cpa_get_le32(block + 4), comp_len = cpa_get_le32(block + 8);
	if (raw_len > CPA_STORE_BLOCK_MAX)
		return cpa_fail(err, errlen, "block size %u over the limit",
			    raw_len);
	if ((size_t)comp_len != len - CPA_STORE_BLOCK_HEADER)
		return cpa_fail(err, errlen, "block length %u does not match the "
			    "index (%zu)", comp_len,
			    len - CPA_STORE_BLOCK_HEADER);
	if (cpa_get_le32(block + 12) !=
	    cpa_store_crc32(block + CPA_STORE_BLOCK_HEADER, comp_len))
		return cpa_fail(err, errlen, "block checksum mismatch");
	/* The frame says its own size; believe a large raw_len only when
	 * the frame agrees, so a damaged header cannot make us allocate. */
	unsigned long long fsize = ZSTD_getFrameContentSize(
		block + CPA_STORE_BLOCK_HEADER, comp_len);
	if (fsize != raw_len)
		return cpa_fail(err, errlen, "block size %u does not match its "
			    "zstd frame", raw_len);
	raw->len = 0;
	cpa_buf_reserve(raw, raw_len ? raw_len : 1);
	size_t n = ZSTD_decompressDCtx(thread_dctx(), raw->p, raw_len,
				       block + CPA_STORE_BLOCK_HEADER,
				       comp_len);
	if (ZSTD_isError(n))
		return cpa_fail(err, errlen, "zstd: %s", ZSTD_getErrorName(n));
	if (n != raw_len)
		return cpa_fail(err, errlen, "block decompressed to %zu bytes, "
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
			   struct cpa_buf *payload, char *err,
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
		return cpa_fail(err, errlen, "%s", msg);
	}
	return 0;
}

int cpa_store_dict_decode(struct cpa_store_dict *sd, const uint8_t *raw,
			  size_t len, char *err, size_t errlen)
{
	struct cursor c = {raw, raw, raw + len, false};
	struct cpa_buf pl = {0};
	int ret = -1;
	uint8_t id4[4];

	uint32_t first = cur_u32(&c), n = cur_u32(&c);
	if (c.bad || first != sd->d.nstrs) {
		cpa_fail(err, errlen, "dictionary offset 0: strings start at id "
		     "%u, expected %u", first, sd->d.nstrs);
		goto out;
	}
	if (n > cur_left(&c)) {
		cpa_fail(err, errlen, "dictionary: %u strings in %zu bytes", n,
		     cur_left(&c));
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t at = cur_off(&c);
		uint64_t slen = cur_varint(&c);
		if (c.bad || slen > cur_left(&c) ||
		    slen > CPA_RECORD_MAX - 4) {
			cpa_fail(err, errlen, "dictionary offset %zu: string %u "
			     "length out of range", at, first + i);
			goto out;
		}
		pl.len = 0;
		cpa_put_le32(id4, first + i);
		cpa_buf_add(&pl, id4, 4);
		cpa_buf_add(&pl, c.p, slen);
		c.p += slen;
		if (dict_add_record(sd, CPA_REC_STRING, &pl, err, errlen) < 0)
			goto out;
	}

	first = cur_u32(&c);
	n = cur_u32(&c);
	if (c.bad || first != sd->d.nstacks || n > cur_left(&c)) {
		cpa_fail(err, errlen, "dictionary offset %zu: bad stack run (id "
		     "%u, expected %u)", cur_off(&c), first, sd->d.nstacks);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		size_t at = cur_off(&c);
		uint32_t depth = cur_u32(&c);
		if (c.bad || depth > CPA_MAX_STACK_DEPTH ||
		    depth > cur_left(&c)) {
			cpa_fail(err, errlen, "dictionary offset %zu: stack %u "
			     "depth out of range", at, first + i);
			goto out;
		}
		pl.len = 0;
		cpa_put_le32(id4, first + i);
		cpa_buf_add(&pl, id4, 4);
		cpa_put_le32(id4, depth);
		cpa_buf_add(&pl, id4, 4);
		for (uint32_t k = 0; k < depth; k++) {
			cpa_put_le32(id4, cur_u32(&c));
			cpa_buf_add(&pl, id4, 4);
		}
		if (c.bad) {
			cpa_fail(err, errlen, "dictionary offset %zu: stack %u "
			     "truncated", at, first + i);
			goto out;
		}
		if (dict_add_record(sd, CPA_REC_STACK, &pl, err, errlen) < 0)
			goto out;
	}

	first = cur_u32(&c);
	n = cur_u32(&c);
	if (c.bad || first != sd->nlabelsets || n > cur_left(&c) / 10) {
		cpa_fail(err, errlen, "dictionary offset %zu: bad labelset run "
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
			cpa_fail(err, errlen, "dictionary offset %zu: labelset %u "
			     "truncated or out of range", at, first + i);
			goto out;
		}
		ls.kind = (uint16_t)kind;
		ls.flags = (uint16_t)flags;
		if (ls.comm >= sd->d.nstrs || ls.thread >= sd->d.nstrs ||
		    ls.container >= sd->d.nstrs || ls.env >= sd->d.nstrs) {
			cpa_fail(err, errlen, "dictionary offset %zu: labelset %u "
			     "names an undefined string", at, first + i);
			goto out;
		}
		CPA_GROW(sd->labelsets, sd->caplabelsets,
			 (size_t)sd->nlabelsets + 1);
		sd->labelsets[sd->nlabelsets++] = ls;
	}
	if (cur_left(&c)) {
		cpa_fail(err, errlen, "dictionary offset %zu: %zu stray bytes at "
		     "the end", cur_off(&c), cur_left(&c));
		goto out;
	}
	ret = 0;
out:
	cpa_buf_free(&pl);
	return ret;
}

/* ---- data blocks -------------------------------------------------------- */

/*
 * The head of window w of a data or sums block (what): its start, from
 * the previous one's in *start, inside the index entry's span, and its
 * count of items, each at least min_bytes long, bounded by the input
 * before any allocation trusts it. 0, or -1 with err.
 */
static int window_head(struct cursor *c, uint32_t w,
		       const struct cpa_store_index_entry *ie,
		       uint64_t interval_ns, size_t min_bytes,
		       const char *what, uint64_t *start, uint32_t *n,
		       char *err, size_t errlen)
{
	size_t at = cur_off(c);
	uint64_t delta = cur_varint(c);
	*n = cur_u32(c);
	if (c->bad || (w > 0 && delta == 0) || delta > UINT64_MAX - *start)
		return cpa_fail(err, errlen, "%s offset %zu: bad window header",
				what, at);
	*start += delta;
	if (*start < ie->min_start || *start > ie->max_end ||
	    ie->max_end - *start < interval_ns)
		return cpa_fail(err, errlen, "%s offset %zu: window outside the "
				"span the index gives", what, at);
	if (*n == 0 || *n > cur_left(c) / min_bytes)
		return cpa_fail(err, errlen, "%s offset %zu: window of %u %s in "
				"%zu bytes", what, at, *n,
				min_bytes == 3 ? "entries" : "totals",
				cur_left(c));
	return 0;
}

int cpa_store_windows_decode(const uint8_t *raw, size_t len,
			     const struct cpa_store_dict *sd,
			     const struct cpa_store_index_entry *ie,
			     uint64_t interval_ns, struct cpa_buf *scratch,
			     cpa_store_window_fn fn, void *arg, char *err,
			     size_t errlen)
{
	struct cursor c = {raw, raw, raw + len, false};
	uint32_t nw = cur_u32(&c);
	if (c.bad || nw != ie->n_windows)
		return cpa_fail(err, errlen, "data offset 0: %u windows, the index "
			    "says %u", nw, ie->n_windows);
	uint64_t start = ie->min_start;
	for (uint32_t w = 0; w < nw; w++) {
		uint32_t n;
		/* each entry takes at least three bytes */
		if (window_head(&c, w, ie, interval_ns, 3, "data", &start, &n,
				err, errlen) < 0)
			return -1;
		scratch->len = 0;
		cpa_buf_reserve(scratch,
				      (size_t)n * sizeof(struct cpa_store_entry));
		struct cpa_store_entry *e = (void *)scratch->p;
		uint32_t ls = 0, st = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t dl = cur_varint(&c), ds = cur_varint(&c);
			uint64_t wt = cur_varint(&c);
			if (c.bad)
				return cpa_fail(err, errlen, "data offset %zu: "
					    "truncated entry", cur_off(&c));
			if (dl > UINT32_MAX - ls)
				return cpa_fail(err, errlen, "data offset %zu: "
					    "labelset out of range",
					    cur_off(&c));
			if (dl) {
				ls += (uint32_t)dl;
				st = 0;
			} else if (i > 0 && ds == 0) {
				return cpa_fail(err, errlen, "data offset %zu: "
					    "repeated entry", cur_off(&c));
			}
			if (ds > UINT32_MAX - st)
				return cpa_fail(err, errlen, "data offset %zu: "
					    "stack out of range", cur_off(&c));
			st += (uint32_t)ds;
			if (ls == 0 || ls >= sd->nlabelsets)
				return cpa_fail(err, errlen, "data offset %zu: "
					    "undefined labelset %u",
					    cur_off(&c), ls);
			if (st == 0 || st >= sd->d.nstacks)
				return cpa_fail(err, errlen, "data offset %zu: "
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
		return cpa_fail(err, errlen, "data offset %zu: %zu stray bytes at "
			    "the end", cur_off(&c), cur_left(&c));
	return 0;
}

int cpa_store_sums_decode(const uint8_t *raw, size_t len,
			  const struct cpa_store_index_entry *ie,
			  uint64_t interval_ns, struct cpa_buf *scratch,
			  cpa_store_sums_fn fn, void *arg, char *err,
			  size_t errlen)
{
	struct cursor c = {raw, raw, raw + len, false};
	uint32_t nw = cur_u32(&c);
	if (c.bad || nw != ie->n_windows)
		return cpa_fail(err, errlen, "sums offset 0: %u windows, the "
				"index says %u", nw, ie->n_windows);
	uint64_t start = ie->min_start;
	for (uint32_t w = 0; w < nw; w++) {
		uint32_t n;
		/* each total takes at least four bytes */
		if (window_head(&c, w, ie, interval_ns, 4, "sums", &start, &n,
				err, errlen) < 0)
			return -1;
		scratch->len = 0;
		cpa_buf_reserve(scratch, (size_t)n * sizeof(struct cpa_store_sum));
		struct cpa_store_sum *s = (void *)scratch->p;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t kind = cur_varint(&c), flags = cur_varint(&c);
			uint64_t kernel = cur_varint(&c), wt = cur_varint(&c);
			if (c.bad || kind > UINT16_MAX || flags > UINT16_MAX ||
			    kernel > 1)
				return cpa_fail(err, errlen, "sums offset %zu: "
						"bad total", cur_off(&c));
			s[i] = (struct cpa_store_sum){ .weight = wt,
				.kind = (uint16_t)kind, .flags = (uint16_t)flags,
				.kernel = (uint8_t)kernel };
		}
		int r = fn(arg, start, s, n);
		if (r)
			return r;
	}
	if (cur_left(&c))
		return cpa_fail(err, errlen, "sums offset %zu: %zu stray bytes at "
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
		return cpa_fail(err, errlen, "NUL byte in meta");
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
				return cpa_fail(err, errlen, "line %u: expected "
					    "key=value", line);
			}
			CPA_GROW(out, cap, n + 3);
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

/* ---- lost windows ------------------------------------------------------ */

static void lost_join(struct cpa_store_lost *r, uint64_t from, uint64_t to,
		      uint64_t count)
{
	if (from < r->from)
		r->from = from;
	if (to > r->to)
		r->to = to;
	r->count += count;
}

void cpa_store_lost_add(struct cpa_store_lost *r, size_t *n, uint64_t from,
			uint64_t to, uint64_t count)
{
	size_t i = 0;
	while (i < *n && r[i].to < from)
		i++;
	if (i < *n && r[i].from <= to) {
		lost_join(&r[i], from, to, count);
		while (i + 1 < *n && r[i + 1].from <= r[i].to) {
			lost_join(&r[i], r[i + 1].from, r[i + 1].to,
				  r[i + 1].count);
			memmove(r + i + 1, r + i + 2,
				(*n - i - 2) * sizeof(*r));
			(*n)--;
		}
		return;
	}
	if (*n == CPA_STORE_LOST_MAX) {
		/* Bounded meta: a scattered loss coarsens into fewer, longer
		 * runs. Joining the nearer neighbour overlaps no other. */
		size_t j = i;
		if (i == *n || (i > 0 && from - r[i - 1].to < r[i].from - to))
			j = i - 1;
		lost_join(&r[j], from, to, count);
		return;
	}
	memmove(r + i + 1, r + i, (*n - i) * sizeof(*r));
	r[i] = (struct cpa_store_lost){from, to, count};
	(*n)++;
}

void cpa_store_lost_format(const struct cpa_store_lost *r, size_t n,
			   struct cpa_buf *out)
{
	for (size_t i = 0; i < n; i++) {
		cpa_buf_reserve(out, 64);
		out->len += (size_t)snprintf((char *)out->p + out->len, 64,
					     "%s%llu-%llu:%llu", i ? "," : "",
					     (unsigned long long)r[i].from,
					     (unsigned long long)r[i].to,
					     (unsigned long long)r[i].count);
	}
}

static bool lost_number(const char **p, char stop, uint64_t *v)
{
	char *end;
	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	unsigned long long x = strtoull(*p, &end, 10);
	if (errno || *end != stop)
		return false;
	*v = x;
	*p = end + (stop != 0);
	return true;
}

int cpa_store_lost_parse(const char *value, struct cpa_store_lost **r,
			 size_t *n, size_t *cap, char *err, size_t errlen)
{
	const char *p = value;
	for (unsigned k = 1; *p; k++) {
		const char *comma = strchr(p, ',');
		struct cpa_store_lost l;
		if (!lost_number(&p, '-', &l.from) ||
		    !lost_number(&p, ':', &l.to) ||
		    !lost_number(&p, comma ? ',' : 0, &l.count) ||
		    l.from >= l.to)
			return cpa_fail(err, errlen, "lost run %u: expected "
					"FROM-TO:COUNT with FROM < TO", k);
		/* a run of no sample says nothing: writers before 1.2 noted
		 * one at the epoch when their upstream was cut off */
		if (!l.count)
			continue;
		CPA_GROW(*r, *cap, *n + 1);
		(*r)[(*n)++] = l;
	}
	return 0;
}

/* ---- processes over budget ---------------------------------------------- */

bool cpa_store_over_add(struct cpa_store_over *r, size_t *n, uint32_t pid,
			const char *comm, uint64_t stacks, uint64_t bytes)
{
	static const char others[] = "(others)";
	bool is_new = false;
	size_t i = 0;
	while (i < *n && (r[i].pid != pid || strcmp(r[i].comm, comm)))
		i++;
	if (i == *n && *n + 1 < CPA_STORE_OVER_MAX) {
		r[i] = (struct cpa_store_over){.pid = pid};
		snprintf(r[i].comm, sizeof(r[i].comm), "%s", comm);
		(*n)++;
		is_new = true;
	} else if (i == *n) {
		/* the last place sums the processes past the others */
		i = 0;
		while (i < *n && (r[i].pid || strcmp(r[i].comm, others)))
			i++;
		if (i == *n) {
			r[i] = (struct cpa_store_over){.pid = 0};
			memcpy(r[i].comm, others, sizeof(others));
			(*n)++;
		}
	}
	r[i].stacks += stacks;
	r[i].bytes += bytes;
	return is_new;
}

void cpa_store_over_format(const struct cpa_store_over *r, size_t n,
			   struct cpa_buf *out)
{
	for (size_t i = 0; i < n; i++) {
		cpa_buf_reserve(out, 64);
		out->len += (size_t)snprintf((char *)out->p + out->len, 64,
					     "%s%u:%llu:%llu:", i ? "," : "",
					     r[i].pid,
					     (unsigned long long)r[i].stacks,
					     (unsigned long long)r[i].bytes);
		for (const char *c = r[i].comm; *c; c++) {
			if (*c == ',' || *c == '%') {
				char e[4];
				snprintf(e, sizeof(e), "%%%02X",
					 (unsigned char)*c);
				cpa_buf_add(out, e, 3);
			} else {
				cpa_buf_add(out, c, 1);
			}
		}
	}
}

int cpa_store_over_parse(const char *value, struct cpa_store_over **r,
			 size_t *n, size_t *cap, char *err, size_t errlen)
{
	const char *p = value;
	for (unsigned k = 1; *p; k++) {
		uint64_t pid, stacks, bytes;
		if (!lost_number(&p, ':', &pid) || pid > UINT32_MAX ||
		    !lost_number(&p, ':', &stacks) ||
		    !lost_number(&p, ':', &bytes))
			return cpa_fail(err, errlen, "over_budget process %u: "
					"expected PID:STACKS:BYTES:COMM", k);
		char comm[64];
		size_t len = 0;
		for (; *p && *p != ','; p++) {
			unsigned x;
			char c = *p;
			if (c == '%' && sscanf(p + 1, "%2x", &x) == 1) {
				c = (char)x;
				p += 2;
			}
			if (len + 1 < sizeof(comm))
				comm[len++] = c;
		}
		comm[len] = 0;
		if (*p == ',')
			p++;
		size_t i = 0;
		while (i < *n && ((*r)[i].pid != pid || strcmp((*r)[i].comm, comm)))
			i++;
		if (i == *n) {
			CPA_GROW(*r, *cap, *n + 1);
			(*r)[i] = (struct cpa_store_over){.pid = (uint32_t)pid};
			memcpy((*r)[i].comm, comm, len + 1);
			(*n)++;
		}
		(*r)[i].stacks += stacks;
		(*r)[i].bytes += bytes;
	}
	return 0;
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
