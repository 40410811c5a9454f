/* SPDX-License-Identifier: MIT */
/*
 * Inlined frames: the functions inlined at a PC, from the
 * DW_TAG_inlined_subroutine entries of an object's DWARF (or of its
 * separate debug file).
 *
 * The DWARF is read once per object, on a loader thread once the object
 * has loaded (its symbols and CFI serve samples meanwhile), one object at
 * a time, into a table: disjoint address ranges, sorted, each
 * naming the innermost inlined instance that covers it; each instance
 * names its function and the instance it was inlined into (none for the
 * outermost, which sits in the object's own symbol). The DWARF is closed
 * again at once: what stays is the table, charged to the object, and the
 * sample path costs a binary search and a walk up the chain, with no
 * libdw call. Names are demangled and interned in the output lazily, per
 * distinct function, on the sample thread (frames.c).
 *
 * Rules: a table is built by one thread and then only read, but for its
 * per-name display caches, which the sample thread alone fills and
 * clears (inline_forget_out_ids, when the output starts over).
 */
#ifndef CPA_UNWIND_INLINE_H
#define CPA_UNWIND_INLINE_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest chain of inlined calls kept at one PC; a deeper one keeps
 * its innermost frames. */
#define INLINE_MAX_DEPTH 64
/* Frames a live stream names from an object before its DWARF is read
 * (frames.c): at 49 Hz, about a CPU-second spent in it. */
#define INLINE_HOT_FRAMES 50

struct cpa_strtab;

struct inline_range {
	uint64_t lo;
	uint32_t len;
	uint32_t inst;		/* index into insts */
};

struct inline_inst {
	uint32_t name;		/* id in names */
	uint32_t parent;	/* 1 + index of the caller instance; 0: none */
};

struct inline_table {
	struct inline_range *ranges;
	struct inline_inst *insts;
	uint32_t nranges, ninsts;
	struct cpa_strtab *names;	/* raw names: linkage or plain */
	char **display;		/* per name id: "name_[i]", lazily */
	uint32_t *out_ids;	/* per name id: output string id, lazily */
	size_t bytes;		/* all of the above, as built */
};

enum inline_build {
	INLINE_BUILT = 0,	/* maybe empty: nothing inlined */
	INLINE_NO_DWARF,	/* elf has no .debug_info */
	INLINE_OVER_BUDGET,	/* reading it would take more than allowed */
	INLINE_FAILED,		/* malformed, or out of memory */
	/* an object's, before its table is there (elfcache.c) */
	INLINE_PENDING,		/* it has DWARF: a table is to be built */
	INLINE_QUEUED,		/* a loader builds it */
};

/* True when elf carries a .debug_info section. */
bool inline_has_dwarf(Elf *elf);

/*
 * Builds t from the DWARF of elf, within max_bytes (what libdw holds of
 * the DWARF while it is read, and the table). On anything but
 * INLINE_BUILT, t is left empty.
 */
enum inline_build inline_table_build(struct inline_table *t, Elf *elf,
				     size_t max_bytes);
void inline_table_free(struct inline_table *t);

/*
 * The name ids (in t->names) of the functions inlined at ELF address
 * vaddr, the outermost first; how many, at most max (0 when none). A
 * chain longer than max keeps its innermost calls.
 */
unsigned inline_chain(const struct inline_table *t, uint64_t vaddr,
		      uint32_t *names, unsigned max);

/* The output started over: every cached id is invalid. */
void inline_forget_out_ids(struct inline_table *t);

#endif
