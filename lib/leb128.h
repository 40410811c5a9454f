/* SPDX-License-Identifier: MIT */
/* LEB128, as DWARF encodes its numbers: 7 bits a byte, low bits first. */
#ifndef CPA_LEB128_H
#define CPA_LEB128_H

#include <stdbool.h>
#include <stdint.h>

/* Reads an unsigned LEB128 at *p, not past end; advances *p. False when
 * the number runs past end. Bits beyond 64 are dropped. */
static inline bool cpa_uleb128(const uint8_t **p, const uint8_t *end,
			       uint64_t *v)
{
	uint64_t r = 0;
	for (unsigned shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		if (shift < 64)
			r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
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
	unsigned shift = 0;
	while (*p < end) {
		uint8_t b = *(*p)++;
		if (shift < 64)
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
