// SPDX-License-Identifier: MIT
/*
 * CPython's layouts, one table per version. The numbers are offsetof() of
 * the interpreter's internal structures on x86-64 (LP64; aarch64 has the
 * same layout), taken from each version's own headers as the comment
 * above the table says; docs/unwinding.md lists which fields were checked
 * on a live interpreter.
 */
#include <stddef.h>

#include "pyframes.h"
#include "pyoffsets.h"

static const struct cpa_py_offsets tables[] = {
	/*
	 * 3.11: offsetof() over Debian 12's python3.11-dev headers
	 * (/usr/include/python3.11, 3.11.2, with Py_BUILD_CORE and
	 * internal/pycore_{runtime,interp,frame,code}.h); the same for
	 * every 3.11.x: CPython keeps the layout within a minor version.
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
	return "3.11";
}
