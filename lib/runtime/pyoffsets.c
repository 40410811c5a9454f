// SPDX-License-Identifier: MIT
/*
 * CPython's layouts, one table per version. The numbers are offsetof() of
 * the interpreter's internal structures on x86-64 (LP64; aarch64 has the
 * same layout), compiled against each version's own headers with
 * Py_BUILD_CORE (the internal/pycore_*.h ones included) as the comment
 * above the table says, and checked on a live interpreter of that version
 * (docs/unwinding.md, "Python"). CPython keeps these layouts within a
 * minor version, so one table serves every 3.X.y.
 *
 * Three shapes of frame chain:
 *   3.9, 3.10  PyThreadState.frame -> PyFrameObject, f_back; f_lasti an
 *              int (3.9 in bytes, 3.10 in 2-byte code units); every
 *              Python call is a call of the eval function
 *   3.11       cframe->current_frame -> _PyInterpreterFrame, previous;
 *              prev_instr a pointer; is_entry marks an eval call's first
 *   3.12       the same through cframe, but an eval call pushes a frame
 *              of its own (owner FRAME_OWNED_BY_CSTACK) under its first
 *   3.13       current_frame in the thread state, f_executable,
 *              instr_ptr; its _Py_DebugOffsets are read when present
 */
#include <string.h>

#include "le.h"
#include "pyframes.h"
#include "pyoffsets.h"

static const struct cpa_py_offsets tables[] = {
	/*
	 * 3.9: offsetof() over pyenv's 3.9.18 headers (include/python3.9,
	 * cpython/frameobject.h, internal/pycore_{runtime,interp}.h).
	 * PyThreadState.thread_id is pthread_self(); code objects have no
	 * co_qualname, so frames are named by co_name.
	 */
	{
		.version = 0x0309,
		.source = "CPython 3.9.18 headers",
		.runtime_interp_head = 32,
		.interp_threads = 8,
		.tstate_next = 8,
		.tstate_tid = 176,
		.tstate_frame = 24,
		.cframe_frame = CAPTURE_PY_NO_CFRAME,
		.tid_kind = PY_TID_PTHREAD,
		.entry_each = 1,
		.frame_code = 32,
		.frame_previous = 24,
		.frame_instr = 104,
		.instr_kind = CPA_PY_INSTR_INDEX,
		.shim_owner = CPA_PY_NO_SHIM,
		.code_filename = 104,
		.code_qualname = 112,
		.code_firstlineno = 40,
		.code_linetable = 120,
		.lines = CPA_PY_LNOTAB,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 48,
		.str_compact_size = 72,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	/*
	 * 3.10: pyenv's 3.10.13 headers, as 3.9; f_lasti counts code
	 * units, the line table is co_linetable's (start, line) deltas.
	 */
	{
		.version = 0x030a,
		.source = "CPython 3.10.13 headers",
		.runtime_interp_head = 32,
		.interp_threads = 8,
		.tstate_next = 8,
		.tstate_tid = 176,
		.tstate_frame = 24,
		.cframe_frame = CAPTURE_PY_NO_CFRAME,
		.tid_kind = PY_TID_PTHREAD,
		.entry_each = 1,
		.frame_code = 32,
		.frame_previous = 24,
		.frame_instr = 96,
		.instr_kind = CPA_PY_INSTR_INDEX,
		.instr_shift = 1,
		.shim_owner = CPA_PY_NO_SHIM,
		.code_filename = 104,
		.code_qualname = 112,
		.code_firstlineno = 40,
		.code_linetable = 120,
		.lines = CPA_PY_LINETABLE,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 48,
		.str_compact_size = 72,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	/*
	 * 3.11: Debian 12's python3.11-dev headers (/usr/include/python3.11,
	 * 3.11.2, internal/pycore_{runtime,interp,frame,code}.h); pyenv's
	 * 3.11.7 headers give the same numbers.
	 */
	{
		.version = 0x030b,
		.source = "python3.11-dev headers (Debian 12)",
		.runtime_interp_head = 40,
		.interp_threads = 16,
		.tstate_next = 8,
		.tstate_tid = 160,
		.tstate_frame = 56,
		.cframe_frame = 8,
		.tid_kind = PY_TID_NATIVE,
		.entry_mask = 1,
		.frame_code = 32,
		.frame_previous = 48,
		.frame_instr = 56,
		.frame_entry = 68,
		.shim_owner = CPA_PY_NO_SHIM,
		.code_filename = 112,
		.code_qualname = 128,
		.code_firstlineno = 72,
		.code_linetable = 136,
		.code_bytecode = 184,
		.lines = CPA_PY_LOCATIONS,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 48,
		.str_compact_size = 72,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	/*
	 * 3.12: pyenv's 3.12.1 headers. is_entry is gone: each eval call
	 * pushes a shim frame, owner FRAME_OWNED_BY_CSTACK (3); str lost
	 * its wstr fields.
	 */
	{
		.version = 0x030c,
		.source = "CPython 3.12.1 headers",
		.runtime_interp_head = 40,
		.interp_threads = 72,
		.tstate_next = 8,
		.tstate_tid = 144,
		.tstate_frame = 56,
		.cframe_frame = 0,
		.tid_kind = PY_TID_NATIVE,
		.frame_code = 0,
		.frame_previous = 8,
		.frame_instr = 56,
		.frame_entry = 70,
		.shim_owner = 3,
		.code_filename = 112,
		.code_qualname = 128,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_bytecode = 192,
		.lines = CPA_PY_LOCATIONS,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 40,
		.str_compact_size = 56,
		.bytes_size = 16,
		.bytes_data = 32,
	},
	/*
	 * 3.13: pyenv's 3.13.0 headers, the same numbers its _PyRuntime's
	 * _Py_DebugOffsets hold; those are read when present
	 * (cpa_py_offsets_debug), this table stays for the code and str
	 * fields cpa-unwind reads and as the fallback.
	 */
	{
		.version = 0x030d,
		.source = "CPython 3.13.0 headers",
		.runtime_interp_head = 632,
		.interp_threads = 7344,
		.tstate_next = 8,
		.tstate_tid = 160,
		.tstate_frame = 72,
		.cframe_frame = CAPTURE_PY_NO_CFRAME,
		.tid_kind = PY_TID_NATIVE,
		.frame_code = 0,
		.frame_previous = 8,
		.frame_instr = 56,
		.frame_entry = 70,
		.shim_owner = 3,
		.code_filename = 112,
		.code_qualname = 128,
		.code_firstlineno = 68,
		.code_linetable = 136,
		.code_bytecode = 200,
		.lines = CPA_PY_LOCATIONS,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_size = 40,
		.str_compact_size = 56,
		.bytes_size = 16,
		.bytes_data = 32,
	},
};

const struct cpa_py_offsets *cpa_py_offsets(uint16_t version)
{
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		if (tables[i].version == version)
			return &tables[i];
	return NULL;
}

const char *cpa_py_versions(void)
{
	return "3.9 3.10 3.11 3.12 3.13";
}

/*
 * 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h): a cookie,
 * then uint64_t fields only; the index of each one read. Its layout is
 * its minor version's own (3.14 adds fields in the middle), so only a
 * 3.13 one is read.
 */
enum {
	DBG_VERSION = 1, DBG_FREE_THREADED = 2,
	DBG_INTERPRETERS_HEAD = 5,
	DBG_THREADS_HEAD = 9,
	DBG_TSTATE_NEXT = 21, DBG_CURRENT_FRAME = 23, DBG_NATIVE_TID = 25,
	DBG_FRAME_PREVIOUS = 29, DBG_FRAME_EXECUTABLE = 30,
	DBG_FRAME_INSTR = 31, DBG_FRAME_OWNER = 33,
	DBG_CODE_FILENAME = 35, DBG_CODE_QUALNAME = 37, DBG_CODE_LINETABLE = 38,
	DBG_CODE_FIRSTLINENO = 39, DBG_CODE_ADAPTIVE = 43,
	DBG_BYTES_SIZE = 65, DBG_BYTES_SVAL = 66,
	DBG_STR_STATE = 68, DBG_STR_LENGTH = 69, DBG_STR_ASCII_SIZE = 70,
};

static uint64_t dbg(const uint8_t *raw, unsigned i)
{
	return cpa_get_le64(raw + 8 * i);
}

/* A field as an offset the maps hold, or UINT16_MAX for one too large. */
static uint16_t dbg16(const uint8_t *raw, unsigned i)
{
	uint64_t v = dbg(raw, i);

	return v < UINT16_MAX ? (uint16_t)v : UINT16_MAX;
}

int cpa_py_offsets_debug(const uint8_t *raw, size_t len,
			 struct cpa_py_offsets *out, const char **err)
{
	const struct cpa_py_offsets *t;
	uint64_t v;

	if (len < CPA_PY_DEBUG_OFFSETS_SIZE || memcmp(raw, "xdebugpy", 8)) {
		*err = "no _Py_DebugOffsets";
		return -1;
	}
	v = dbg(raw, DBG_VERSION);	/* PY_VERSION_HEX */
	if ((v >> 16) != 0x030d) {
		*err = "a _Py_DebugOffsets layout cpa does not know";
		return -1;
	}
	if (dbg(raw, DBG_FREE_THREADED)) {
		*err = "a free-threaded build";
		return -1;
	}
	t = cpa_py_offsets(0x030d);
	if (dbg16(raw, DBG_CODE_FILENAME) != t->code_filename ||
	    dbg16(raw, DBG_CODE_QUALNAME) != t->code_qualname ||
	    dbg16(raw, DBG_CODE_LINETABLE) != t->code_linetable ||
	    dbg16(raw, DBG_CODE_FIRSTLINENO) != t->code_firstlineno ||
	    dbg16(raw, DBG_CODE_ADAPTIVE) != t->code_bytecode ||
	    dbg16(raw, DBG_BYTES_SIZE) != t->bytes_size ||
	    dbg16(raw, DBG_BYTES_SVAL) != t->bytes_data ||
	    dbg16(raw, DBG_STR_STATE) != t->str_state ||
	    dbg16(raw, DBG_STR_LENGTH) != t->str_length ||
	    dbg16(raw, DBG_STR_ASCII_SIZE) != t->str_ascii_size) {
		*err = "code or str offsets other than cpa's 3.13 table";
		return -1;
	}
	*out = *t;
	out->source = "_Py_DebugOffsets";
	out->runtime_interp_head = dbg16(raw, DBG_INTERPRETERS_HEAD);
	out->interp_threads = dbg16(raw, DBG_THREADS_HEAD);
	out->tstate_next = dbg16(raw, DBG_TSTATE_NEXT);
	out->tstate_tid = dbg16(raw, DBG_NATIVE_TID);
	out->tstate_frame = dbg16(raw, DBG_CURRENT_FRAME);
	out->frame_code = dbg16(raw, DBG_FRAME_EXECUTABLE);
	out->frame_previous = dbg16(raw, DBG_FRAME_PREVIOUS);
	out->frame_instr = dbg16(raw, DBG_FRAME_INSTR);
	out->frame_entry = dbg16(raw, DBG_FRAME_OWNER);
	/* the walker reads a frame's fields from one copy of its start */
	if (out->frame_code >= CAPTURE_PY_READ ||
	    out->frame_previous >= CAPTURE_PY_READ ||
	    out->frame_instr >= CAPTURE_PY_READ ||
	    out->frame_entry >= CAPTURE_PY_READ ||
	    (out->frame_code | out->frame_previous | out->frame_instr) & 7 ||
	    out->runtime_interp_head == UINT16_MAX ||
	    out->interp_threads == UINT16_MAX ||
	    out->tstate_next == UINT16_MAX || out->tstate_tid == UINT16_MAX ||
	    out->tstate_frame == UINT16_MAX) {
		*err = "_Py_DebugOffsets out of the walker's range";
		return -1;
	}
	return 0;
}
