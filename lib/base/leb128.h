/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * LEB128, as DWARF, protobuf and the store encode numbers: 7 bits a byte,
 * low bits first, the high bit set on every byte but the last. The one
 * varint codec of the project.
 */
#ifndef CPA_LEB128_H
#define CPA_LEB128_H

#include <stdbool.h>
#include <stdint.h>

/* Most bytes a 64-bit number takes. */
#define CPA_LEB128_MAX 10

/* Writes v at p (room for CPA_LEB128_MAX bytes); returns the bytes used. */
static inline unsigned cpa_put_uleb128(uint8_t *p, uint64_t v)
{
	unsigned n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Bytes cpa_put_uleb128 uses for v. */
static inline unsigned cpa_uleb128_size(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Reads an unsigned LEB128 at *p, not past end; advances *p. False when
 * the number runs past end, takes more than CPA_LEB128_MAX bytes or does
 * not fit 64 bits; *p is then unspecified. */
static inline bool cpa_uleb128(const uint8_t **p, const uint8_t *end,
			       uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (shift == 63 && b > 1)
				return false;
			*v = r;
			return true;
		}
	}
	return false;
}

/* Signed LEB128: as cpa_uleb128, sign-extended from the last byte. */
static inline bool cpa_sleb128(const uint8_t **p, const uint8_t *end,
			       int64_t *v)
{
	uint64_t r = 0;
	for (unsigned shift = 0; shift < 64 && *p < end;) {
		uint8_t b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
				r |= ~(uint64_t)0 << shift;
			*v = (int64_t)r;
			return true;
		}
	}
	return false;
}

#endif
