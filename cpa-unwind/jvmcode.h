/* SPDX-License-Identifier: MIT */
/*
 * A JVM's code cache as cpa-unwind reads it from the process's memory:
 * the CodeBlob holding a PC (found through its CodeHeap's segment map, as
 * HotSpot's CodeHeap::find_start does), its kind, frame size and
 * frame-complete offset for unwinding (jvmwalk.c), and for an nmethod the
 * JIT's own debug information: its PcDescs (pc offset -> scope) and
 * ScopeDescs (method, sender scope), UNSIGNED5-encoded, naming each method
 * the JIT inlined at a PC.
 *
 * Rules: blobs are cached per process in a table sorted by address,
 * bounded in count (JVM_CODE_MAX_BLOBS) and in bytes, charged to the
 * per-process caches' budget (budget.h): past either the table starts
 * over. A cached blob is looked at again
 * (its header read and compared) when a second has passed since it was
 * last confirmed, since the JVM frees and reuses code cache memory. Every
 * length and offset read from the JVM is bounded before use: a JVM (or a
 * process that maps a file named libjvm.so) cannot make cpa-unwind read
 * without bound or loop.
 */
#ifndef CPA_UNWIND_JVMCODE_H
#define CPA_UNWIND_JVMCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jvmstructs.h"

#define JVM_CODE_MAX_BLOBS 4096
/* blobs looked up in a JVM's memory per sample, past the cached ones: a
 * process that forges its tables cannot make one sample cost more */
#define JVM_CODE_LOOKUPS 128
#define JVM_MAX_SCOPES 64	/* inlining depth; C2's MaxInlineLevel is 15 */

enum jvm_blob_kind {
	JVM_BLOB_STUB = 0,	/* runtime and stub code: its name */
	JVM_BLOB_NMETHOD,	/* compiled Java method */
	JVM_BLOB_NATIVE,	/* the wrapper of a native method */
	JVM_BLOB_INTERP,	/* the template interpreter */
	JVM_BLOB_PC_ONLY,	/* adapters, vtable stubs: no frame of their own */
};

/* Where a blob's prologue stands, by offset from its code (jvmwalk.c). */
struct jvm_prologue {
	int16_t push_end;	/* after push rbp; -1: none */
	int16_t sub_end;	/* after sub rsp, N: the frame allocated */
	int16_t save_end;	/* after mov [rsp+N], rbp (no push); -1: none */
};

struct jvm_blob {
	uint64_t start, end;		/* the CodeBlob, header included */
	uint64_t code_begin, code_end;
	uint32_t frame_size;		/* bytes, the return address included */
	int32_t frame_complete;		/* offset from code_begin; -1: none */
	uint8_t kind;			/* enum jvm_blob_kind */
	bool have_prologue, have_debug;
	struct jvm_prologue pro;
	uint32_t compile_id;
	uint64_t name_ptr;		/* CodeBlob::_name, for the recheck */
	uint64_t method;		/* nmethod: its Method* */
	uint64_t deopt;			/* its deoptimization handler, or 0 */
	int32_t orig_pc;		/* where a deoptimized frame keeps its
					 * pc, from its sp */
	char *name;			/* stubs: the blob's name */
	/* nmethod debug info, read on first use */
	int32_t *pcs;			/* pc offset, scope offset pairs */
	uint32_t npcs;
	uint8_t *scopes;
	uint32_t scopes_len;
	uint64_t *meta;			/* the metadata a scope's index names */
	uint32_t nmeta;
	uint32_t bytes;			/* held by this entry */
	uint64_t checked_ns;
};

struct jvm_code_stats {
	uint64_t blobs_read, blob_misses, rechecks, stale, resets;
	uint64_t debug_reads, debug_failures;
	uint64_t lookups_refused;	/* past JVM_CODE_LOOKUPS in a sample */
};

struct budget;

struct jvm_code {
	struct jvm_blob **blobs;	/* sorted by start, disjoint */
	uint32_t n, cap;
	uint64_t bytes;			/* charged to budget */
	uint32_t lookups_left;		/* this sample's (jvm_prepare) */
	struct budget *budget;
	struct jvm_code_stats *st;	/* shared by every JVM's */
};

/*
 * The blob holding pc (as of now_ns), or NULL when pc is in no blob of
 * the code cache l describes. memfd reads the process's memory.
 */
const struct jvm_blob *jvm_blob_at(struct jvm_code *c,
				   const struct jvm_layout *l, int memfd,
				   uint64_t pc, uint64_t now_ns);

/*
 * The methods running at pc in nmethod b, outermost first (the blob's own
 * method, then each it inlined down to the one at pc), into methods[0..max).
 * exact: pc is the sampled PC rather than a return address. Returns how
 * many; 0 when b has no debug information for pc.
 */
unsigned jvm_blob_scopes(struct jvm_code *c, const struct jvm_layout *l,
			 int memfd, const struct jvm_blob *b, uint64_t pc,
			 bool exact, uint64_t *methods, unsigned max);

/* An nmethod's debug information, as read from the JVM. */
struct jvm_debug {
	const int32_t *pcs;	/* pc offset, scope offset pairs, sorted */
	uint32_t npcs;
	const uint8_t *scopes;
	uint32_t scopes_len;
	const uint64_t *meta;
	uint32_t nmeta;
};

/*
 * The chain of scopes of the PcDesc at or after target (a pc offset) in
 * d, innermost first: each scope's method, from d->meta, into
 * inner[0..max); x as for jvm_u5_read. Bounded by max and by the scopes'
 * falling offsets, whatever d holds. Returns how many.
 */
unsigned jvm_scope_chain(const struct jvm_debug *d, int32_t target, uint8_t x,
			 uint64_t *inner, unsigned max);

/* The UNSIGNED5 decoder of HotSpot's CompressedReadStream: the value at
 * *pos of buf[0..len), x excluded bytes; false past the end. */
bool jvm_u5_read(const uint8_t *buf, uint32_t len, uint32_t *pos, uint8_t x,
		 uint32_t *v);

/* The PcDesc lookup: the scope offset of the first PcDesc at or after
 * target in pcs (npcs pairs sorted by pc offset); 0 when none. */
uint32_t jvm_pcdesc_find(const int32_t *pcs, uint32_t npcs, int32_t target);

/* Drops every cached blob (the budget's owner asks: proctab_trim). */
void jvm_code_reset(struct jvm_code *c);
void jvm_code_free(struct jvm_code *c);

#endif
