// SPDX-License-Identifier: MIT
/*
 * Python code objects (pycode.h), read once per address through
 * /proc/PID/mem: qualified name, file name, first line and line table; a
 * sample's line is looked up in that table each time. What cannot be read
 * (the process is gone, the address holds no code object of the version
 * the sample names) is kept as unreadable and not read again.
 *
 * The process decides how many code objects it shows and how large
 * their tables are (forged ones that are never reused, with 60 KB line
 * tables, once took cpa-unwind to 3.48 GB): a process's codes are charged
 * to the budget (budget.h) and started over when they would pass its
 * share of --max-cache.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "buf.h"
#include "hash.h"
#include "htab.h"
#include "log.h"
#include "pyoffsets.h"
#include "proc.h"
#include "pycode.h"


#define PY_MAX_LINETABLE (64 * 1024)
#define PY_MAX_CODES 65536	/* per process, then started over */

struct pycodes {
	int mem;			/* /proc/PID/mem, -1 when not open */
	bool mem_failed;
	struct pycode *codes;		/* [0] unused: ids start at 1 */
	uint32_t n, cap;
	struct cpa_htab index;
	struct budget *budget;
	uint64_t bytes;			/* charged to it */
};

static struct pycodes *pycodes_of(struct proc *p, struct budget *b)
{
	if (!p->py) {
		p->py = cpa_calloc(1, sizeof(*p->py));
		p->py->mem = -1;
		p->py->budget = b;
		cpa_htab_init(&p->py->index, 64);
		CPA_GROW(p->py->codes, p->py->cap, 1);
		p->py->n = 1;
	}
	return p->py;
}

/* What one code object holds: its entry, its index slot, its strings
 * and its line table. */
static uint64_t code_cost(const struct pycode *pc)
{
	uint64_t n = sizeof(*pc) + 2 * sizeof(uint32_t) + pc->nlines;
	if (pc->qualname)
		n += strlen(pc->qualname) + 1;
	if (pc->filename)
		n += strlen(pc->filename) + 1;
	return n;
}

static void codes_clear(struct pycodes *c)
{
	for (uint32_t i = 1; i < c->n; i++) {
		free(c->codes[i].qualname);
		free(c->codes[i].filename);
		free(c->codes[i].lines);
	}
	c->n = 1;
	cpa_htab_clear(&c->index);
	budget_charge(c->budget, BUDGET_PYCODE, -(int64_t)c->bytes);
	c->bytes = 0;
}

void pycodes_free(struct pycodes *c)
{
	if (!c)
		return;
	codes_clear(c);
	if (c->mem >= 0)
		close(c->mem);
	cpa_htab_free(&c->index);
	free(c->codes);
	free(c);
}

static bool mem_read(struct pycodes *c, uint32_t pid, uint64_t addr, void *out,
		     size_t len)
{
	if (c->mem < 0 && !c->mem_failed) {
		char fn[64];

		snprintf(fn, sizeof(fn), "/proc/%u/mem", pid);
		c->mem = open(fn, O_RDONLY | O_CLOEXEC);
		c->mem_failed = c->mem < 0;
	}
	return c->mem >= 0 && addr < INT64_MAX &&
	       pread(c->mem, out, len, (off_t)addr) == (ssize_t)len;
}

static uint64_t le64(const uint8_t *b)
{
	uint64_t v;
	memcpy(&v, b, 8);
	return v;
}

static size_t put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18 & 7));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

bool pystr_shape(const struct cpa_py_offsets *o, const uint8_t *hdr,
		 struct pystr *str)
{
	uint32_t state;

	str->len = le64(hdr + o->str_length);
	memcpy(&state, hdr + o->str_state, 4);
	str->kind = (state >> 2) & 7;
	str->ascii = state & 0x40;
	str->data = str->ascii ? o->str_ascii_size : o->str_compact_size;
	if (str->ascii)
		str->size = str->len;
	else
		str->size = str->len * str->kind;
	return (state & 0x20) && str->len <= PYCODE_MAX_STR &&
	       (str->kind == 1 || str->kind == 2 || str->kind == 4);
}

char *pystr_utf8(const struct pystr *str, const uint8_t *raw)
{
	if (str->ascii) {	/* the bytes as they are */
		char *s = cpa_malloc(str->len + 1);
		memcpy(s, raw, str->len);
		s[str->len] = 0;
		return s;
	}
	char *s = cpa_malloc(str->len * 4 + 1), *q = s;
	for (uint64_t i = 0; i < str->len; i++) {
		uint32_t cp = 0;
		memcpy(&cp, raw + i * str->kind, str->kind);	/* little-endian */
		if (cp > 0x10ffff)
			cp = 0xfffd;
		q += put_utf8(q, cp);
	}
	*q = 0;
	return s;
}

/* A str object as UTF-8: compact ones only (every name the compiler
 * makes is), at most PYCODE_MAX_STR characters. */
static char *read_str(struct pycodes *c, uint32_t pid,
		      const struct cpa_py_offsets *o, uint64_t addr)
{
	uint8_t hdr[PYSTR_HEADER], raw[PYCODE_MAX_STR * 4];
	struct pystr str;

	if (!addr || !mem_read(c, pid, addr, hdr, sizeof(hdr)) ||
	    !pystr_shape(o, hdr, &str) ||
	    !mem_read(c, pid, addr + str.data, raw, str.size))
		return NULL;
	return pystr_utf8(&str, raw);
}

/* The bytes of a code object that hold every field read. */
static size_t code_header(const struct cpa_py_offsets *o)
{
	uint16_t top = o->code_filename;

	if (o->code_qualname > top)
		top = o->code_qualname;
	if (o->code_linetable > top)
		top = o->code_linetable;
	if (o->code_firstlineno > top)
		top = o->code_firstlineno;
	return (size_t)top + 8;
}

static void read_code(struct pycodes *c, uint32_t pid,
		      const struct cpa_py_offsets *o, struct pycode *pc)
{
	uint8_t hdr[256], bh[40];
	size_t hlen = code_header(o);
	int32_t first;
	uint64_t lt, n;

	if (hlen > sizeof(hdr) || !mem_read(c, pid, pc->addr, hdr, hlen))
		return;
	memcpy(&first, hdr + o->code_firstlineno, 4);
	lt = le64(hdr + o->code_linetable);
	if (first < 0 || !lt || !mem_read(c, pid, lt, bh, sizeof(bh)))
		return;
	n = le64(bh + o->bytes_size);
	if (n > PY_MAX_LINETABLE)
		return;
	pc->qualname = read_str(c, pid, o, le64(hdr + o->code_qualname));
	pc->filename = read_str(c, pid, o, le64(hdr + o->code_filename));
	if (!pc->qualname || !pc->filename || !*pc->qualname) {
		free(pc->qualname);
		free(pc->filename);
		pc->qualname = pc->filename = NULL;
		return;
	}
	pc->firstlineno = first;
	pc->format = o->lines;
	pc->lines = cpa_malloc(n ? n : 1);
	if (!mem_read(c, pid, lt + o->bytes_data, pc->lines, n))
		n = 0;
	pc->nlines = (uint32_t)n;
}

const struct pycode *pycode_get(struct proc *p, struct budget *b,
				const struct cpa_py_offsets *o, uint64_t addr)
{
	struct pycodes *c = pycodes_of(p, b);
	uint32_t pid = p->pid;
	struct cpa_htab_probe pr;
	uint64_t h = cpa_hash_u64(addr);

	for (uint32_t id = cpa_htab_first(&c->index, h, &pr); id;
	     id = cpa_htab_next(&c->index, &pr))
		if (c->codes[id].addr == addr)
			return &c->codes[id];
	struct pycode code = { .addr = addr };
	read_code(c, pid, o, &code);
	uint64_t cost = code_cost(&code);
	if (cost > b->per_proc) {
		/* alone over the budget (a tiny --max-cache): names only */
		free(code.lines);
		code.lines = NULL;
		code.nlines = 0;
		cost = code_cost(&code);
	}
	if (c->n > PY_MAX_CODES || c->bytes + cost > b->per_proc) {
		b->full[BUDGET_PYCODE]++;
		codes_clear(c);
		cpa_htab_first(&c->index, h, &pr);
	}
	CPA_GROW(c->codes, c->cap, c->n + 1);
	struct pycode *pc = &c->codes[c->n];
	*pc = code;
	cpa_htab_add(&c->index, &pr, c->n++);
	c->bytes += cost;
	budget_charge(b, BUDGET_PYCODE, (int64_t)cost);
	return pc;
}

uint64_t pycodes_bytes(const struct pycodes *c)
{
	return c ? c->bytes : 0;
}

static uint32_t varint(const uint8_t **p, const uint8_t *end)
{
	uint32_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*p >= end || shift > 28)
			return v;
		b = *(*p)++;
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

/*
 * A table sums its deltas from the first line: in 64 bits, which the
 * largest table cannot overflow (PY_MAX_LINETABLE entries of at most
 * 2^29 each). A sum outside int32 is no line the compiler wrote, and the
 * function's first line stands for it.
 */
static int32_t line_or_first(int64_t line, const struct pycode *pc)
{
	return line >= INT32_MIN && line <= INT32_MAX ? (int32_t)line :
							pc->firstlineno;
}

/*
 * 3.9's co_lnotab (its Objects/lnotab_notes.txt): pairs of an unsigned
 * byte increment and a signed line increment; the line is the sum of the
 * line increments of every pair whose address is at or before instr.
 */
static int32_t lnotab_line(const struct pycode *pc, uint32_t instr)
{
	int64_t line = pc->firstlineno;
	uint32_t addr = 0;

	for (uint32_t i = 0; i + 1 < pc->nlines; i += 2) {
		addr += pc->lines[i];
		if (addr > instr)
			break;
		line += (int8_t)pc->lines[i + 1];
	}
	return line_or_first(line, pc);
}

/*
 * 3.10's co_linetable (its Objects/lnotab_notes.txt): pairs of an
 * unsigned byte length and a signed line delta, each a range of bytecode
 * starting where the last ended; a delta of -128 is a range without a
 * line (the line carried on is unchanged).
 */
static int32_t linetable_line(const struct pycode *pc, uint32_t instr)
{
	int64_t line = pc->firstlineno;
	uint32_t end = 0;

	for (uint32_t i = 0; i + 1 < pc->nlines; i += 2) {
		int8_t delta = (int8_t)pc->lines[i + 1];
		bool none = delta == -128;

		end += pc->lines[i];
		if (!none)
			line += delta;
		if (instr < end)
			return none ? pc->firstlineno : line_or_first(line, pc);
	}
	return pc->firstlineno;
}

/*
 * A 3.11+ location table (CPython's Objects/locations.md): entries of 1
 * to 8 code units, each a first byte with bit 7 set (bits 3-6 the form,
 * bits 0-2 the length less one) and the form's varints. Forms 13 and 14
 * carry a signed line delta, 10 to 12 a delta of 0 to 2, 15 no line at
 * all.
 */
static int32_t locations_line(const struct pycode *pc, uint32_t instr)
{
	const uint8_t *p = pc->lines, *end = p + pc->nlines;
	uint32_t unit = instr / 2, at = 0;
	int64_t line = pc->firstlineno;

	while (p < end) {
		uint8_t b = *p++;
		unsigned form = (b >> 3) & 15, len = (b & 7) + 1;

		if (!(b & 0x80))
			break;	/* not the start of an entry */
		if (form == 13 || form == 14) {
			uint32_t v = varint(&p, end);
			line += (v & 1) ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
		} else if (form >= 10 && form <= 12) {
			line += (int64_t)form - 10;
		}
		if (unit < at + len)
			return form == 15 ? pc->firstlineno :
					    line_or_first(line, pc);
		at += len;
		while (p < end && !(*p & 0x80))
			p++;
	}
	return pc->firstlineno;
}

int32_t pycode_line(const struct pycode *pc, uint32_t instr)
{
	switch (pc->format) {
	case CPA_PY_LNOTAB:
		return lnotab_line(pc, instr);
	case CPA_PY_LINETABLE:
		return linetable_line(pc, instr);
	default:
		return locations_line(pc, instr);
	}
}
