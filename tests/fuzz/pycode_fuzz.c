/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what cpa-unwind decodes of an untrusted Python process's
 * code objects (cpa-unwind/pycode.c): a line table of each version's
 * format, and a str object's header and characters.
 *
 * Input: a byte choosing the format (% 3) and the version whose str
 * layout is read (/ 3 % 5), a little-endian int32 first line, a u32
 * instruction offset, then the line table; the same bytes from the
 * table on are also read as a str object, PYSTR_HEADER of header and
 * its characters.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpa-unwind/pycode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint16_t versions[] = { 0x0309, 0x030a, 0x030b, 0x030c, 0x030d };
static const uint8_t formats[] = { CPA_PY_LNOTAB, CPA_PY_LINETABLE,
				   CPA_PY_LOCATIONS };

/* The bytes from the table on as a str object: read_str reads
 * PYSTR_HEADER bytes whatever the object's size (a short 3.12 one ends
 * before), so fewer bytes are no str. */
static void str_of(const struct cpa_py_offsets *o, const uint8_t *data,
		   size_t size)
{
	struct pystr str;

	if (size < PYSTR_HEADER || !pystr_shape(o, data, &str))
		return;
	if (str.data > size || str.size > size - str.data)
		return;	/* the process would not have given that many */
	char *s = pystr_utf8(&str, data + str.data);
	if (strlen(s) > str.len * 4)
		abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pycode pc;
	uint32_t instr;

	if (size < 9)
		return 0;
	memset(&pc, 0, sizeof(pc));
	pc.format = formats[data[0] % 3];
	memcpy(&pc.firstlineno, data + 1, 4);
	if (pc.firstlineno < 0)	/* read_code keeps no such code object */
		pc.firstlineno = -(pc.firstlineno + 1);
	memcpy(&instr, data + 5, 4);
	/* a copy of its own, so that reading past the table is caught */
	pc.nlines = (uint32_t)(size - 9);
	pc.lines = malloc(pc.nlines ? pc.nlines : 1);
	memcpy(pc.lines, data + 9, pc.nlines);
	(void)pycode_line(&pc, instr);
	for (uint32_t at = 0; at < 64; at += 2)
		(void)pycode_line(&pc, at);
	(void)pycode_line(&pc, UINT32_MAX);
	str_of(cpa_py_offsets(versions[data[0] / 3 % 5]), pc.lines, pc.nlines);
	free(pc.lines);
	return 0;
}
