/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * Protocol Buffers' wire format, as small as the messages cpa reads and
 * writes need (Pyroscope's querier.v1 and types.v1 in cpa-serve): no
 * schema compiler, the caller knows its field numbers.
 *
 * Rules of this layer:
 * - Encoding appends to a struct cpa_buf: a varint field, a bytes (or
 *   string) field, a nested message given as bytes already encoded, a
 *   packed repeated varint field. int64 values are two's complement
 *   varints, as protobuf's int64 (not sint64) is.
 * - Decoding never reads past its buffer and never recurses on its own:
 *   a reader walks one message's fields; cpa_pb_enter opens a nested
 *   message as a reader one level deeper, refusing past CPA_PB_MAX_DEPTH.
 *   A truncated varint or length, a length past the end, a field number
 *   0, or a group (wire types 3 and 4, which proto3 has not) is an error
 *   naming the byte offset from the start of the outermost message.
 * - Varints are LEB128 (lib/base/leb128.h is the one codec of them).
 */
#ifndef CPA_PROTOBUF_H
#define CPA_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum cpa_pb_wire { PB_VARINT = 0, PB_I64 = 1, PB_LEN = 2, PB_I32 = 5 };

#define CPA_PB_MAX_DEPTH 32

/* ---- encoding ---------------------------------------------------------- */

void cpa_pb_varint(struct cpa_buf *b, uint32_t field, uint64_t v);
void cpa_pb_bytes(struct cpa_buf *b, uint32_t field, const void *p,
		  size_t len);
static inline void cpa_pb_string(struct cpa_buf *b, uint32_t field,
				 const char *s)
{
	cpa_pb_bytes(b, field, s, __builtin_strlen(s));
}
/* A packed repeated int64 field of n values (nothing when n is 0). */
void cpa_pb_packed(struct cpa_buf *b, uint32_t field, const int64_t *v,
		   size_t n);

/* ---- decoding ---------------------------------------------------------- */

struct cpa_pb_reader {
	const uint8_t *p, *end;
	const uint8_t *base;	/* the outermost message, for offsets */
	unsigned depth;
};

struct cpa_pb_field {
	uint32_t number;
	enum cpa_pb_wire wire;
	uint64_t v;		/* PB_VARINT, PB_I64, PB_I32 */
	const uint8_t *p;	/* PB_LEN */
	size_t len;
	size_t offset;		/* of its tag, from base */
};

void cpa_pb_init(struct cpa_pb_reader *r, const void *p, size_t len);
/* The next field: 1, 0 at the message's end, -1 with err. */
int cpa_pb_next(struct cpa_pb_reader *r, struct cpa_pb_field *f, char *err,
		size_t errlen);
/* The message in field f (PB_LEN) of r: 0, or -1 with err when f is
 * not length-delimited or the nesting is past CPA_PB_MAX_DEPTH. */
int cpa_pb_enter(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		 struct cpa_pb_reader *sub, char *err, size_t errlen);
/* The values of a repeated varint field, packed (PB_LEN) or not: calls
 * fn for each. 0, or -1 with err. */
int cpa_pb_varints(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		   void (*fn)(uint64_t v, void *arg), void *arg, char *err,
		   size_t errlen);
/* Whether f has wire type want; -1 with err naming the field if not. */
int cpa_pb_want(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		enum cpa_pb_wire want, char *err, size_t errlen);
/* A string field: its bytes must be valid UTF-8, as proto3 says; 0, or
 * -1 with err. */
int cpa_pb_utf8(const struct cpa_pb_reader *r, const struct cpa_pb_field *f,
		char *err, size_t errlen);

/* Walks every field of the message in p, entering each length-delimited
 * field that parses whole as a message, to CPA_PB_MAX_DEPTH levels: the
 * fuzz target's entry. The count of fields seen, or -1 with err. */
long cpa_pb_walk(const void *p, size_t len, char *err, size_t errlen);

#endif
