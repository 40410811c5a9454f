/* SPDX-License-Identifier: MIT */
/*
 * A process's Python code objects, read from its memory once per address
 * and kept until it execs or exits (pycode.c).
 */
#ifndef CPA_UNWIND_PYCODE_H
#define CPA_UNWIND_PYCODE_H

#include <stdint.h>

#include "pyoffsets.h"

#define PYCODE_MAX_STR 1024	/* characters of a name kept */

struct proc;
struct pycodes;

struct pycode {
	uint64_t addr;
	char *qualname, *filename;	/* UTF-8; NULL: could not be read */
	uint8_t *lines;			/* the line table */
	uint32_t nlines;
	int32_t firstlineno;
	uint8_t format;			/* enum cpa_py_lines */
};

/* The code object at addr in p, read on first use; never NULL, but its
 * names are NULL when it could not be read. */
const struct pycode *pycode_get(struct proc *p, const struct cpa_py_offsets *o,
				uint64_t addr);
/* The line of the instruction at byte offset instr of its bytecode. */
int32_t pycode_line(const struct pycode *pc, uint32_t instr);
/* Frees a process's code objects (NULL is fine). */
void pycodes_free(struct pycodes *c);

#endif
