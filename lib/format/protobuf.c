/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "leb128.h"
#include "log.h"
#include "protobuf.h"

static void tag(struct cpa_buf *b, uint32_t field, enum cpa_pb_wire wire)
{
	cpa_buf_uleb128(b, (uint64_t)field << 3 | wire);
}

void cpa_pb_varint(struct cpa_buf *b, uint32_t field, uint64_t v)
{
	tag(b, field, PB_VARINT);
	cpa_buf_uleb128(b, v);
}

void cpa_pb_bytes(struct cpa_buf *b, uint32_t field, const void *p,
		  size_t len)
{
	tag(b, field, PB_LEN);
	cpa_buf_uleb128(b, len);
	cpa_buf_add(b, p, len);
}

void cpa_pb_packed(struct cpa_buf *b, uint32_t field, const int64_t *v,
		   size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	for (size_t i = 0; i < n; i++)
		len += cpa_uleb128_size((uint64_t)v[i]);
	tag(b, field, PB_LEN);
	cpa_buf_uleb128(b, len);
	cpa_buf_reserve(b, len);
	for (size_t i = 0; i < n; i++)
		b->len += cpa_put_uleb128(b->p + b->len, (uint64_t)v[i]);
}

void cpa_pb_init(struct cpa_pb_reader *r, const void *p, size_t len)
{
	r->base = r->p = p;
	r->end = r->p + len;
	r->depth = 0;
}

static size_t off(const struct cpa_pb_reader *r, const uint8_t *p)
{
	return (size_t)(p - r->base);
}

int cpa_pb_next(struct cpa_pb_reader *r, struct cpa_pb_field *f, char *err,
		size_t errlen)
{
	const uint8_t *at = r->p;
	uint64_t key, n;

	if (r->p >= r->end)
		return 0;
	memset(f, 0, sizeof(*f));
	f->offset = off(r, at);
	if (!cpa_uleb128(&r->p, r->end, &key))
		return cpa_fail(err, errlen, "byte %zu: a field's tag is cut "
				"short", f->offset);
	if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
		return cpa_fail(err, errlen, "byte %zu: field number %llu",
				f->offset, (unsigned long long)(key >> 3));
	f->number = (uint32_t)(key >> 3);
	f->wire = (enum cpa_pb_wire)(key & 7);
	switch (key & 7) {
	case PB_VARINT:
		if (!cpa_uleb128(&r->p, r->end, &f->v))
			return cpa_fail(err, errlen, "byte %zu: field %u's "
					"varint is cut short", f->offset,
					f->number);
		return 1;
	case PB_I64:
	case PB_I32:
		n = (key & 7) == PB_I64 ? 8 : 4;
		if ((uint64_t)(r->end - r->p) < n)
			return cpa_fail(err, errlen, "byte %zu: field %u's "
					"%u bytes are cut short", f->offset,
					f->number, (unsigned)n);
		for (unsigned i = 0; i < n; i++)
			f->v |= (uint64_t)r->p[i] << (8 * i);
		r->p += n;
		return 1;
	case PB_LEN:
		if (!cpa_uleb128(&r->p, r->end, &n))
			return cpa_fail(err, errlen, "byte %zu: field %u's "
					"length is cut short", f->offset,
					f->number);
		if (n > (uint64_t)(r->end - r->p))
			return cpa_fail(err, errlen, "byte %zu: field %u's %llu "
					"bytes run past the end (%zu left)",
					f->offset, f->number,
					(unsigned long long)n,
					(size_t)(r->end - r->p));
		f->p = r->p;
		f->len = (size_t)n;
		r->p += n;
		return 1;
	default:
		return cpa_fail(err, errlen, "byte %zu: field %u has wire type "
				"%u (groups are not proto3's)", f->offset,
				f->number, (unsigned)(key & 7));
	}
}

int cpa_pb_want(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		enum cpa_pb_wire want, char *err, size_t errlen)
{
	static const char *const names[8] = { "a varint", "64 bits",
					      "length-delimited", "", "", "32 bits",
					      "", "" };

	(void)r;
	if (f->wire == want)
		return 0;
	return cpa_fail(err, errlen, "byte %zu: field %u is %s, expected %s",
			f->offset, f->number, names[f->wire & 7], names[want]);
}

int cpa_pb_enter(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		 struct cpa_pb_reader *sub, char *err, size_t errlen)
{
	if (cpa_pb_want(r, f, PB_LEN, err, errlen))
		return -1;
	if (r->depth + 1 > CPA_PB_MAX_DEPTH)
		return cpa_fail(err, errlen, "byte %zu: messages nested more "
				"than %d deep", f->offset, CPA_PB_MAX_DEPTH);
	sub->base = r->base;
	sub->p = f->p;
	sub->end = f->p + f->len;
	sub->depth = r->depth + 1;
	return 0;
}

int cpa_pb_varints(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		   void (*fn)(uint64_t v, void *arg), void *arg, char *err,
		   size_t errlen)
{
	const uint8_t *p, *end;

	if (f->wire == PB_VARINT) {
		fn(f->v, arg);
		return 0;
	}
	if (cpa_pb_want(r, f, PB_LEN, err, errlen))
		return -1;
	p = f->p;
	end = f->p + f->len;
	while (p < end) {
		uint64_t v;
		const uint8_t *at = p;

		if (!cpa_uleb128(&p, end, &v))
			return cpa_fail(err, errlen, "byte %zu: field %u's "
					"packed varint is cut short",
					off(r, at), f->number);
		fn(v, arg);
	}
	return 0;
}

int cpa_pb_utf8(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		char *err, size_t errlen)
{
	const uint8_t *s = f->p, *end = f->p + f->len;

	if (cpa_pb_want(r, f, PB_LEN, err, errlen))
		return -1;
	while (s < end) {
		unsigned n = *s < 0x80 ? 0 : (*s & 0xe0) == 0xc0 ? 1
			   : (*s & 0xf0) == 0xe0 ? 2 : (*s & 0xf8) == 0xf0 ? 3
			   : 4;
		uint32_t c = n == 0 ? *s : n == 1 ? *s & 0x1f : n == 2
			     ? *s & 0x0f : *s & 0x07;

		if (n == 4 || (size_t)(end - s) <= n)
			goto bad;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				goto bad;
			c = c << 6 | (s[i] & 0x3f);
		}
		/* overlong forms, surrogates, past U+10FFFF */
		if ((n == 1 && c < 0x80) || (n == 2 && c < 0x800) ||
		    (n == 3 && c < 0x10000) || c > 0x10ffff ||
		    (c >= 0xd800 && c <= 0xdfff))
			goto bad;
		s += n + 1;
	}
	return 0;
bad:
	return cpa_fail(err, errlen, "byte %zu: field %u is not UTF-8 (at its "
			"byte %zu)", f->offset, f->number, (size_t)(s - f->p));
}

/* Whether the bytes of f parse whole as a message (one level). */
static bool parses(const struct cpa_pb_reader *r, const struct cpa_pb_field *f)
{
	struct cpa_pb_reader sub;
	struct cpa_pb_field g;
	char err[8];
	int k;

	if (cpa_pb_enter(r, f, &sub, err, sizeof(err)))
		return false;
	while ((k = cpa_pb_next(&sub, &g, err, sizeof(err))) > 0)
		;
	return k == 0 && f->len;
}

/* An explicit stack of readers: nesting costs no C stack. */
long cpa_pb_walk(const void *p, size_t len, char *err, size_t errlen)
{
	struct cpa_pb_reader stack[CPA_PB_MAX_DEPTH + 1];
	struct cpa_pb_field f;
	unsigned top = 0;
	long n = 0;

	cpa_pb_init(&stack[0], p, len);
	for (;;) {
		int k = cpa_pb_next(&stack[top], &f, err, errlen);

		if (k < 0)
			return -1;
		if (k == 0) {
			if (!top)
				return n;
			top--;
			continue;
		}
		n++;
		if (f.wire == PB_LEN && parses(&stack[top], &f)) {
			if (cpa_pb_enter(&stack[top], &f, &stack[top + 1], err,
					 errlen))
				return -1;
			top++;
		}
	}
}
