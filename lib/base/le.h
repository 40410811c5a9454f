/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/* Little-endian fixed-width fields, as the stream and the store lay them
 * out, read and written byte by byte so any alignment and host works. */
#ifndef CPA_LE_H
#define CPA_LE_H

#include <stdint.h>

static inline void cpa_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void cpa_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void cpa_put_le64(uint8_t *p, uint64_t v)
{
	cpa_put_le32(p, (uint32_t)v);
	cpa_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t cpa_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t cpa_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t cpa_get_le64(const uint8_t *p)
{
	return (uint64_t)cpa_get_le32(p) | (uint64_t)cpa_get_le32(p + 4) << 32;
}

/* An n-byte (n <= 8) little-endian number, for fields whose width the
 * data names (DWARF pointer encodings). */
static inline uint64_t cpa_get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#endif
