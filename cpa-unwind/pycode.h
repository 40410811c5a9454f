/* SPDX-License-Identifier: MIT */
/*
 * A process's Python code objects, read from its memory once per address
 * and kept until it execs or exits (pycode.c).
 */
#ifndef CPA_UNWIND_PYCODE_H
#define CPA_UNWIND_PYCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "pyoffsets.h"

#define PYCODE_MAX_STR 1024	/* characters of a name kept */

struct budget;
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

/* The code object at addr in p, read on first use and charged to b
 * (budget.h: p's codes start over when they would pass its per-process
 * share); never NULL, but its names are NULL when it could not be read.
 * The pointer is good until the next call. */
const struct pycode *pycode_get(struct proc *p, struct budget *b,
				const struct cpa_py_offsets *o, uint64_t addr);
/* Bytes p's codes hold (0 for NULL). */
uint64_t pycodes_bytes(const struct pycodes *c);
/*
 * A compact str object, as its header (PYSTR_HEADER bytes from its
 * start) describes it: len characters of kind bytes each (1 for ASCII),
 * size bytes at byte data of the object. pystr_shape is false for a str
 * cpa does not read: not compact, longer than PYCODE_MAX_STR, a kind
 * that is none of 1, 2, 4.
 */
#define PYSTR_HEADER 64
struct pystr {
	uint64_t len, size;
	uint32_t kind, data;
	bool ascii;
};
bool pystr_shape(const struct cpa_py_offsets *o, const uint8_t *hdr,
		 struct pystr *str);
/* Its size bytes at raw as a NUL-terminated UTF-8 string, malloc'd. */
char *pystr_utf8(const struct pystr *str, const uint8_t *raw);

/* The line of the instruction at byte offset instr of its bytecode. */
int32_t pycode_line(const struct pycode *pc, uint32_t instr);
/* Frees a process's code objects (NULL is fine). */
void pycodes_free(struct pycodes *c);

#endif
