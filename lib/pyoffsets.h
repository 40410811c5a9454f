/* SPDX-License-Identifier: MIT */
/*
 * Where CPython keeps what a profiler reads, per interpreter version:
 * cpa-capture hands the thread and frame offsets to the BPF walker,
 * cpa-unwind reads code objects with the rest. Each table says where its
 * numbers come from (lib/pyoffsets.c, docs/unwinding.md "Python").
 */
#ifndef CPA_PYOFFSETS_H
#define CPA_PYOFFSETS_H

#include <stdint.h>

/* How a code object maps instruction offsets to lines. */
enum cpa_py_lines {
	CPA_PY_LOCATIONS = 1,	/* co_linetable, PEP 626 locations (3.11+) */
};

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
	uint16_t frame_instr;		/* pointer to the last instruction begun */
	uint16_t frame_entry;		/* is_entry */
	/* code objects */
	uint16_t code_filename, code_qualname, code_firstlineno;
	uint16_t code_linetable, code_bytecode;
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

#endif
