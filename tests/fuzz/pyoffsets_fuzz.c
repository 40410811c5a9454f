/* SPDX-License-Identifier: MIT */
/* Fuzz target: CPython 3.13's _Py_DebugOffsets, the start of an untrusted
 * interpreter's _PyRuntime (lib/runtime/pyoffsets.c). */
#include <stdint.h>
#include <stdlib.h>

#include "pyframes.h"
#include "pyoffsets.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cpa_py_offsets o;
	const char *err = NULL;

	if (cpa_py_offsets_debug(data, size, &o, &err) < 0) {
		if (!err || !*err)
			abort();	/* a refusal always says why */
		return 0;
	}
	/* what was taken is what the walker can read from one frame copy */
	if (o.version != 0x030d || o.frame_code >= CAPTURE_PY_READ ||
	    o.frame_previous >= CAPTURE_PY_READ ||
	    o.frame_instr >= CAPTURE_PY_READ ||
	    o.frame_entry >= CAPTURE_PY_READ)
		abort();
	return 0;
}
