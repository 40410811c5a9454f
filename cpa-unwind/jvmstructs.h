/* SPDX-License-Identifier: MIT */
/*
 * HotSpot's vmStructs: the tables a JVM publishes of its own C++ layout
 * (gHotSpotVMStructs, gHotSpotVMTypes, gHotSpotVMIntConstants, exported by
 * libjvm.so), for debuggers and the serviceability agent. cpa-unwind reads
 * them once per JVM, from the process's memory, off the sample path: the
 * field offsets that lead from a Method* to its name, and those that
 * describe the code cache (its heaps and segment maps, each CodeBlob's
 * frame size, each nmethod's debug information), so that compiled and
 * interpreted frames are unwound and named with nothing asked of the JVM.
 *
 * Rules: every offset comes from the tables, never from a JDK version;
 * the version only picks between encodings the tables cannot describe
 * (UNSIGNED5's excluded byte, JDK 20 on). A JVM whose tables lack a field
 * gets what does not need it: names without the code cache (ok without
 * code_ok), or nothing.
 */
#ifndef CPA_UNWIND_JVMSTRUCTS_H
#define CPA_UNWIND_JVMSTRUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JVM_MAX_HEAPS 8

/* One CodeHeap: its reserved range and its segment map. */
struct jvm_heap {
	uint64_t lo, hi;	/* VirtualSpace _low_boundary, _high_boundary */
	uint64_t segmap;	/* the segment map's _low_boundary */
};

struct jvm_layout {
	bool ok;		/* Method* -> name */
	bool code_ok;		/* the code cache: unwinding, compiled names */
	bool code_described;	/* the tables have it (maybe not set up) */
	uint8_t major;		/* the JDK's feature release */
	uint8_t u5_x;		/* UNSIGNED5 excluded bytes: 1 from JDK 20 */
	uint8_t fp;		/* -XX:+PreserveFramePointer, enum jvm_fp */
	uint8_t non_safepoints;	/* -XX:+DebugNonSafepoints, enum jvm_fp */

	/* names */
	uint32_t method_const;		/* Method::_constMethod */
	uint32_t cmethod_constants;	/* ConstMethod::_constants */
	uint32_t cmethod_name_index;	/* ConstMethod::_name_index */
	uint32_t cpool_holder;		/* ConstantPool::_pool_holder */
	uint32_t cpool_size;		/* sizeof(ConstantPool): slots follow */
	uint32_t klass_name;		/* Klass::_name */
	uint32_t symbol_length, symbol_body;

	/* the code cache */
	uint64_t cc_lo, cc_hi;		/* CodeCache::_low_bound, _high_bound */
	unsigned nheaps;
	struct jvm_heap heaps[JVM_MAX_HEAPS];
	uint32_t seg_shift;		/* CodeHeap::_log2_segment_size */
	uint32_t heapblock_size;	/* sizeof(HeapBlock): the blob follows */
	uint32_t blob_read;		/* bytes of an nmethod header to read */
	uint32_t blob_name, blob_size, blob_frame_complete, blob_frame_size;
	uint8_t frame_complete_width;	/* 2 (int16_t, JDK 23+) or 4 */
	bool code_offsets;		/* _code_offset/_data_offset (JDK 23+),
					 * else _code_begin/_code_end pointers */
	uint32_t blob_code_begin, blob_code_end;
	uint32_t nm_method, nm_compile_id, nm_orig_pc;
	/* the deoptimization handler: a pointer (JDK 22 and before), or an
	 * offset from the blob (JDK 23 on); 0: unknown */
	uint32_t nm_deopt;
	bool deopt_offset;
	/* nmethod debug info, JDK 22 and before: in the blob */
	uint32_t nm_metadata_off, nm_scopes_data_begin, nm_scopes_pcs_off,
		 nm_dependencies_off;
	/* JDK 23 on: scopes in _immutable_data, metadata in the blob after
	 * the code (JDK 23, 24) or in _mutable_data (JDK 25 on) */
	bool immutable;
	uint32_t nm_immutable, nm_immutable_size, nm_scopes_data_off;
	bool mutable_meta;
	uint32_t blob_mutable, blob_mutable_size, blob_reloc_size;
	uint32_t pcdesc_size, pcdesc_pc, pcdesc_scope;
};

/*
 * Reads pid's tables through its libjvm.so and its memory (memfd, open on
 * /proc/PID/mem). Returns 0 with l->ok, and l->code_ok when the code cache
 * is described and set up; -1 with err otherwise.
 */
int jvm_layout_read(uint32_t pid, int memfd, struct jvm_layout *l, char *err,
		    size_t errlen);

#endif
