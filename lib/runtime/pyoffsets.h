/* SPDX-License-Identifier: MIT */
/* Layer lib/runtime, what cpa reads from language runtimes: uses lib/base
 * alone; only tools use it (lib/local.mk holds them to this). */
/*
 * Where CPython keeps what a profiler reads, per interpreter version:
 * cpa-capture hands the thread and frame offsets to the BPF walker,
 * cpa-unwind reads code objects with the rest. Each table says where its
 * numbers come from (lib/runtime/pyoffsets.c, docs/unwinding.md "Python").
 */
#ifndef CPA_PYOFFSETS_H
#define CPA_PYOFFSETS_H

#include <stddef.h>
#include <stdint.h>

/* How a code object maps instruction offsets to lines. */
enum cpa_py_lines {
	CPA_PY_LOCATIONS = 1,	/* co_linetable, PEP 626 locations (3.11+) */
	CPA_PY_LNOTAB = 2,	/* co_lnotab: byte and line increments (3.9) */
	CPA_PY_LINETABLE = 3,	/* co_linetable: byte and line deltas (3.10) */
};

/* What a frame's instruction field holds. */
enum cpa_py_instr {
	CPA_PY_INSTR_PTR = 0,	/* a pointer into co_code_adaptive (3.11+) */
	CPA_PY_INSTR_INDEX = 1,	/* f_lasti: an int, << instr_shift is bytes */
};

#define CPA_PY_NO_SHIM 0xff

struct cpa_py_offsets {
	uint16_t version;		/* major << 8 | minor */
	const char *source;		/* where the numbers come from */
	/* runtime -> interpreter -> thread states */
	uint16_t runtime_interp_head;	/* _PyRuntimeState: interpreters.head */
	uint16_t interp_threads;	/* PyInterpreterState: threads.head */
	uint16_t tstate_next;
	uint16_t tstate_tid;		/* native_thread_id (3.11+), thread_id */
	uint16_t tstate_frame;		/* cframe (3.11, 3.12), current_frame */
	uint16_t cframe_frame;		/* _PyCFrame: current_frame, or 0xffff */
	uint8_t tid_kind;		/* enum py_tid_kind (bpf/pyframes.h) */
	uint8_t entry_mask;		/* frame_entry's byte & mask: entry frame */
	uint8_t entry_each;		/* 1: every frame is an entry */
	/* frames */
	uint16_t frame_code, frame_previous;
	uint16_t frame_instr;		/* prev_instr, instr_ptr or f_lasti */
	uint16_t frame_entry;		/* is_entry (3.11), owner (3.12+) */
	uint8_t instr_kind;		/* enum cpa_py_instr */
	uint8_t instr_shift;		/* f_lasti << this: bytes (3.10: 1) */
	/* frame_entry's byte equal to this: a frame the eval function
	 * pushes for itself (3.12+: FRAME_OWNED_BY_CSTACK), never a Python
	 * function; the frame before it is an entry; or CPA_PY_NO_SHIM */
	uint8_t shim_owner;
	/* code objects */
	uint16_t code_filename, code_firstlineno;
	uint16_t code_qualname;		/* co_qualname, co_name before 3.11 */
	uint16_t code_linetable;	/* co_linetable, co_lnotab (3.9) */
	uint16_t code_bytecode;		/* co_code_adaptive (3.11+), else 0 */
	uint8_t lines;			/* enum cpa_py_lines */
	/* str: sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject), and
	 * where the length and state are */
	uint16_t str_length, str_state, str_ascii_size, str_compact_size;
	/* bytes: ob_size, ob_sval */
	uint16_t bytes_size, bytes_data;
};

/* The table for a version, or NULL when cpa does not know it. */
const struct cpa_py_offsets *cpa_py_offsets(uint16_t version);
/* "3.11 3.12": the versions cpa knows, for messages. */
const char *cpa_py_versions(void);

/* The size of the _Py_DebugOffsets that 3.13 puts first in _PyRuntime. */
#define CPA_PY_DEBUG_OFFSETS_SIZE 584

/*
 * out = the table for the version that raw, the start of a _PyRuntime,
 * says it is, with what its _Py_DebugOffsets say in place of the table's
 * thread and frame offsets. 0, or -1 with why in *err: no such cookie, a
 * layout of _Py_DebugOffsets cpa does not know (only 3.13's), a
 * free-threaded build, or code and str offsets other than the table's
 * (cpa-unwind reads code objects by the table).
 */
int cpa_py_offsets_debug(const uint8_t *raw, size_t len,
			 struct cpa_py_offsets *out, const char **err);

#endif
