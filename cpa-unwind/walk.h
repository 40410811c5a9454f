/* SPDX-License-Identifier: MIT */
/*
 * The DWARF walker: recovers a user call chain from the registers and the
 * stack snapshot of a raw sample, using each object's compiled CFI table.
 * Where no CFI covers a PC (JIT code, objects without unwind tables) it
 * takes one frame-pointer step if rbp points into the snapshot.
 *
 * After the objects of a process are loaded, a walk reads only the
 * snapshot and the tables: no system call, no libdw, no allocation.
 */
#ifndef CPA_UNWIND_WALK_H
#define CPA_UNWIND_WALK_H

#include <stdint.h>
#include <string.h>

#include "proc.h"
#include "stream.h"

#define WALK_MAX_FRAMES 1024

/* Why a walk stopped. The first two mean the chain is whole. */
enum walk_end {
	WALK_OUTERMOST = 0,	/* CFI says the return address is undefined */
	WALK_RA_ZERO,		/* return address 0: end of chain */
	WALK_TRUNCATED,		/* needed stack beyond the snapshot */
	WALK_NO_SNAPSHOT,	/* the sample has no registers or stack */
	WALK_NO_MAPPING,	/* PC in no executable mapping */
	WALK_NO_CFI,		/* no CFI for the PC and no usable rbp */
	WALK_UNSUPPORTED,	/* CFI rule cpa-unwind does not implement */
	WALK_BAD_STACK,		/* a rule pointed outside the snapshot */
	WALK_NO_PROGRESS,	/* the stack pointer did not move up */
	WALK_DEPTH,		/* WALK_MAX_FRAMES reached */
	WALK_SPLICED,		/* truncated, continued by the FP chain */
	WALK_END_COUNT
};

struct walk_result {
	uint64_t ips[WALK_MAX_FRAMES];	/* leaf first; ips[0] is the PC */
	/* per frame: an interpreted Java frame's Method*, else 0 */
	uint64_t method[WALK_MAX_FRAMES];
	uint32_t n;
	uint32_t fp_steps;	/* frames taken by the rbp fallback */
	uint32_t jvm_steps;	/* frames stepped by the JVM's layout */
	uint8_t end;		/* enum walk_end */
	bool bp_known;		/* bp holds the frame pointer where the */
	uint64_t bp;		/* walk stopped (for splice_fp) */
};

/* A sample's stack snapshot: the user addresses its bytes cover. */
struct walk_stack {
	const uint8_t *bytes;
	uint64_t base, end;
	bool cut;		/* the capture's size limit cut the copy */
};

/* A read this far past the end of a snapshot cut by the capture's size
 * limit is taken for a cut stack; further away it is a wrong address. */
#define WALK_TRUNCATION_WINDOW (8u << 20)

/* Reads the u64 at user address addr from the snapshot; on failure sets
 * *why to the reason the walk ends. */
static inline bool walk_read(const struct walk_stack *ss, uint64_t addr,
			     uint64_t *v, uint8_t *why)
{
	if (addr >= ss->base && addr <= ss->end - 8 && ss->end - ss->base >= 8) {
		memcpy(v, ss->bytes + (addr - ss->base), 8);
		return true;
	}
	*why = addr >= ss->end && addr - ss->end < WALK_TRUNCATION_WINDOW &&
			       ss->cut
		       ? WALK_TRUNCATED
		       : WALK_BAD_STACK;
	return false;
}

static inline bool walk_complete(const struct walk_result *r)
{
	return r->end == WALK_OUTERMOST || r->end == WALK_RA_ZERO;
}

const char *walk_end_name(unsigned end);

/* Walks the user stack of s in process p. */
void walk_dwarf(struct proctab *t, struct proc *p,
		const struct cpa_raw_sample *s, struct walk_result *r);

/* The frame-pointer chain of s read from its snapshot, PC first, into
 * ips[0..max); returns its length. The capture leaves the kernel's walk
 * out where the snapshot holds the whole stack, so this is the same
 * chain. */
unsigned walk_fp(const struct cpa_raw_sample *s, uint64_t *ips, unsigned max);

/* Continues r, cut by the end of the snapshot (WALK_TRUNCATED), with the
 * sample's FP chain fp[0..nfp) taken from the same registers, bp0 the
 * sampled frame pointer; r->end becomes WALK_SPLICED (splice.c). */
bool splice_fp(struct walk_result *r, const uint64_t *fp, unsigned nfp,
	       uint64_t bp0);

#endif
