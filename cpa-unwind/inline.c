// SPDX-License-Identifier: MIT
/* Inlined frames: DW_TAG_inlined_subroutine read once into a range table. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"
#include "inline.h"
#include "intern.h"

/* DIEs nested deeper than this are not looked into (compilers nest a few
 * dozen; a hostile file could nest without end). */
#define WALK_DEPTH 256

/* One address range of one inlined instance, as DWARF gives it. */
struct piece {
	uint64_t lo, hi;
	uint32_t depth;		/* of the instance in its nest of inlines */
	uint32_t inst;
};

struct build {
	struct inline_table *t;
	struct piece *p;
	size_t np, capp, capi, capr;
	size_t max_bytes;
	bool over, oom;
};

bool inline_has_dwarf(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".debug_info"))
			return true;
	}
	return false;
}

/* The name of an inlined subroutine: its linkage name (demangled later)
 * or name, following DW_AT_abstract_origin and DW_AT_specification. */
static const char *inlined_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr))
		n = dwarf_formstring(&attr);
	if (!n && dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		n = dwarf_formstring(&attr);
	if (!n && dwarf_attr_integrate(die, DW_AT_name, &attr))
		n = dwarf_formstring(&attr);
	return n;
}

static size_t build_bytes(const struct build *b)
{
	return b->capp * sizeof(*b->p) + b->capi * sizeof(*b->t->insts) +
	       b->capr * sizeof(*b->t->ranges) +
	       cpa_strtab_bytes(b->t->names);
}

/* Grows *v (of elements of size sz, capacity *cap) to hold n, within the
 * build's budget. */
static bool grow(struct build *b, void **v, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return true;
	size_t want = *cap ? *cap * 2 : 64;
	if (build_bytes(b) + (want - *cap) * sz > b->max_bytes) {
		b->over = true;
		return false;
	}
	void *nv = realloc(*v, want * sz);
	if (!nv) {
		b->oom = true;
		return false;
	}
	*v = nv;
	*cap = want;
	return true;
}

/* Records the inlined instance die, called from instance parent (0 for
 * none), nested depth deep; its index + 1, or 0 when it is not kept. */
static uint32_t add_instance(struct build *b, Dwarf_Die *die, uint32_t parent,
			     uint32_t depth)
{
	struct inline_table *t = b->t;
	const char *name = inlined_name(die);
	if (!name || !*name)
		return 0;
	if (!grow(b, (void **)&t->insts, &b->capi, t->ninsts + 1,
		  sizeof(*t->insts)))
		return 0;
	bool is_new;
	uint32_t inst = t->ninsts++;
	t->insts[inst] = (struct inline_inst){
		.name = cpa_strtab_intern(t->names, name, strlen(name),
					  &is_new),
		.parent = parent,
	};
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		if (!grow(b, (void **)&b->p, &b->capp, b->np + 1, sizeof(*b->p)))
			return 0;
		b->p[b->np++] = (struct piece){lo, hi, depth, inst};
	}
	return inst + 1;
}

/* Whether die's children may hold inlined code: functions with code of
 * their own (not declarations or abstract instances), blocks, and the
 * scopes C++ and Fortran define functions in. Types are not looked into:
 * compilers put the code of member functions outside them. */
static bool holds_code(Dwarf_Die *die, int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
		return dwarf_hasattr(die, DW_AT_low_pc) ||
		       dwarf_hasattr(die, DW_AT_ranges);
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
		return true;
	default:
		return false;
	}
}

/* Every inlined instance under the unit DIE cu, depth-first, iteratively
 * (a stack of siblings to come back to). */
static void walk_unit(struct build *b, Dwarf_Die *cu)
{
	struct frame {
		Dwarf_Die die;
		uint32_t inst;	/* innermost instance around it, 1-based */
		uint32_t depth;	/* of that instance */
	} stack[WALK_DEPTH];
	unsigned top = 0;
	if (dwarf_child(cu, &stack[0].die) != 0)
		return;
	stack[0].inst = stack[0].depth = 0;
	for (;;) {
		struct frame *f = &stack[top];
		int tag = dwarf_tag(&f->die);
		uint32_t inst = f->inst, depth = f->depth;
		if (tag == DW_TAG_inlined_subroutine) {
			uint32_t k = add_instance(b, &f->die, f->inst,
						  f->depth + 1);
			if (b->over || b->oom)
				return;
			if (k) {
				inst = k;
				depth = f->depth + 1;
			}
		}
		Dwarf_Die child;
		if (holds_code(&f->die, tag) && top + 1 < WALK_DEPTH &&
		    dwarf_child(&f->die, &child) == 0) {
			top++;
			stack[top] = (struct frame){child, inst, depth};
			continue;
		}
		/* next sibling here, else of the nearest parent that has one */
		while (dwarf_siblingof(&stack[top].die, &stack[top].die) != 0) {
			if (top == 0)
				return;
			top--;
		}
	}
}

static int by_start(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi;
}

static void emit(struct build *b, uint64_t lo, uint64_t hi, uint32_t inst)
{
	struct inline_table *t = b->t;
	while (lo < hi && !b->over && !b->oom) {
		uint64_t len = hi - lo > UINT32_MAX ? UINT32_MAX : hi - lo;
		struct inline_range *last =
			t->nranges ? &t->ranges[t->nranges - 1] : NULL;
		if (last && last->inst == inst && last->lo + last->len == lo &&
		    last->len + len <= UINT32_MAX) {
			last->len += (uint32_t)len;
		} else {
			if (!grow(b, (void **)&t->ranges, &b->capr,
				  t->nranges + 1, sizeof(*t->ranges)))
				return;
			t->ranges[t->nranges++] =
				(struct inline_range){lo, (uint32_t)len, inst};
		}
		lo += len;
	}
}

/*
 * The pieces, which nest (an instance's ranges lie within its caller's),
 * into disjoint ranges of the innermost instance: sorted by start, outer
 * first, swept with a stack of the pieces open at each address. A piece
 * that overhangs the one it sits in (broken DWARF) is cut to it.
 */
static void flatten(struct build *b)
{
	if (b->np)	/* an object without inlines has no array to sort */
		qsort(b->p, b->np, sizeof(*b->p), by_start);
	struct piece open[WALK_DEPTH];
	unsigned n = 0;
	uint64_t pos = 0;
	for (size_t i = 0; i <= b->np; i++) {
		const struct piece *p = i < b->np ? &b->p[i] : NULL;
		/* close what ends before p starts */
		while (n && (!p || open[n - 1].hi <= p->lo)) {
			if (pos < open[n - 1].hi)
				emit(b, pos, open[n - 1].hi, open[n - 1].inst);
			pos = open[n - 1].hi > pos ? open[n - 1].hi : pos;
			n--;
		}
		if (!p)
			break;
		struct piece q = *p;
		if (n) {
			if (pos < q.lo)
				emit(b, pos, q.lo, open[n - 1].inst);
			if (q.hi > open[n - 1].hi)
				q.hi = open[n - 1].hi;
			if (q.lo >= q.hi)
				continue;
		}
		pos = q.lo;
		if (n < WALK_DEPTH)
			open[n++] = q;
	}
}

enum inline_build inline_table_build(struct inline_table *t, Elf *elf,
				     size_t max_bytes)
{
	memset(t, 0, sizeof(*t));
	if (!inline_has_dwarf(elf))
		return INLINE_NO_DWARF;
	/* libdw holds the DWARF (decompressed) while it is read */
	size_t dwarf = cfi_dwarf_bytes(elf);
	if (dwarf > max_bytes)
		return INLINE_OVER_BUDGET;
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		return INLINE_FAILED;
	struct build b = {.t = t, .max_bytes = max_bytes - dwarf};
	t->names = cpa_strtab_new();
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (!b.over && !b.oom &&
	       dwarf_next_unit(dw, off, &next, &hsize, NULL, NULL, NULL, NULL,
			       NULL, NULL) == 0) {
		Dwarf_Die cu;
		if (dwarf_offdie(dw, off + hsize, &cu) &&
		    dwarf_tag(&cu) == DW_TAG_compile_unit)
			walk_unit(&b, &cu);
		off = next;
	}
	dwarf_end(dw);
	if (!b.over && !b.oom)
		flatten(&b);
	free(b.p);
	if (b.over || b.oom) {
		inline_table_free(t);
		return b.over ? INLINE_OVER_BUDGET : INLINE_FAILED;
	}
	uint32_t nnames = cpa_strtab_count(t->names) + 1;
	t->display = calloc(nnames, sizeof(*t->display));
	t->out_ids = calloc(nnames, sizeof(*t->out_ids));
	if (!t->display || !t->out_ids) {
		inline_table_free(t);
		return INLINE_FAILED;
	}
	t->bytes = b.capi * sizeof(*t->insts) + b.capr * sizeof(*t->ranges) +
		   cpa_strtab_bytes(t->names) +
		   nnames * (sizeof(*t->display) + sizeof(*t->out_ids));
	return INLINE_BUILT;
}

void inline_table_free(struct inline_table *t)
{
	if (t->display && t->names)
		for (uint32_t i = 0; i <= cpa_strtab_count(t->names); i++)
			free(t->display[i]);
	free(t->display);
	free(t->out_ids);
	free(t->ranges);
	free(t->insts);
	if (t->names)
		cpa_strtab_free(t->names);
	memset(t, 0, sizeof(*t));
}

void inline_forget_out_ids(struct inline_table *t)
{
	if (t->out_ids)
		memset(t->out_ids, 0,
		       (cpa_strtab_count(t->names) + 1) * sizeof(*t->out_ids));
}

unsigned inline_chain(const struct inline_table *t, uint64_t vaddr,
		      uint32_t *names, unsigned max)
{
	if (!t->nranges || vaddr < t->ranges[0].lo)
		return 0;
	/* the last range starting at or below vaddr */
	uint32_t lo = 0, hi = t->nranges;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->ranges[mid].lo <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	const struct inline_range *r = &t->ranges[lo];
	if (vaddr - r->lo >= r->len)
		return 0;
	/* innermost first up the chain (a caller always comes before its
	 * callees in insts), then turned around */
	uint32_t chain[INLINE_MAX_DEPTH];
	unsigned n = 0;
	if (max > INLINE_MAX_DEPTH)
		max = INLINE_MAX_DEPTH;
	for (uint32_t i = r->inst + 1; i && n < max; i = t->insts[i - 1].parent)
		chain[n++] = t->insts[i - 1].name;
	for (unsigned k = 0; k < n; k++)
		names[k] = chain[n - 1 - k];
	return n;
}
