/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
#ifndef CPA_HASH_H
#define CPA_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * The fleet's key of a stack (docs/fleet.md): cpa_hash of each frame's
 * bytes, root first, each seeded with the hash so far. It must be the
 * same on every host and in every release (tests/unit/lib_test.c pins
 * it), so cpa_hash reads its words little-endian on any machine.
 */
#define CPA_STACK_HASH_INIT 0x63706131u

/* A fast non-cryptographic 64-bit hash of bytes. Not keyed: lib/base/htab.h
 * keeps its load at one half and compares 32 stored hash bits before any
 * key, which keeps colliding input cheap but does not make it harmless. */
uint64_t cpa_hash(const void *data, size_t len, uint64_t seed);
static inline uint64_t cpa_stack_hash_add(uint64_t h, const char *frame,
					  size_t len)
{
	return cpa_hash(frame, len, h);
}

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
