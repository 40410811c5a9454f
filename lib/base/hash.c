/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "hash.h"
#include "le.h"

/* Eight bytes at a time with a strong 64-bit mix per word; short tails are
 * folded in by length. Good spread for frame names and stack arrays. */
uint64_t cpa_hash(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * (len + 1));
	while (len >= 8) {
		uint64_t w = cpa_get_le64(p);
		h = cpa_hash_u64(h ^ w) + 0x9e3779b97f4a7c15ull;
		p += 8;
		len -= 8;
	}
	uint64_t t = 0;
	for (size_t i = 0; i < len; i++)
		t |= (uint64_t)p[i] << (8 * i);
	return cpa_hash_u64(h ^ t ^ (uint64_t)len << 59);
}
