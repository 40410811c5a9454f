/* SPDX-License-Identifier: MIT */
#ifndef CPA_HASH_H
#define CPA_HASH_H

#include <stddef.h>
#include <stdint.h>

/* A fast non-cryptographic 64-bit hash of bytes. Not keyed: lib/htab.h
 * keeps its load at one half and compares 32 stored hash bits before any
 * key, which keeps colliding input cheap but does not make it harmless. */
uint64_t cpa_hash(const void *data, size_t len, uint64_t seed);

static inline uint64_t cpa_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

#endif
