/* SPDX-License-Identifier: MIT */
/*
 * Compact unwind tables compiled from DWARF CFI (.eh_frame, .debug_frame).
 *
 * The CFI is interpreted once per ELF when the object is loaded (libdw
 * enumerates the entries; cfi_exec.c runs the instructions in one pass,
 * libdw the rare short FDE it refuses), in time linear in the section and
 * within a memory budget; what is kept is one 16-byte row per PC range,
 * sorted, saying how to find the
 * canonical frame address (CFA) and where the caller's return address and
 * frame pointer were saved. The walker's hot path is a binary search in
 * this array: no libdw call, no file access, no allocation.
 */
#ifndef CPA_UNWIND_CFI_H
#define CPA_UNWIND_CFI_H

#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <libelf.h>

/* How to compute the CFA of a row. */
enum cfi_cfa_rule {
	CFI_CFA_NONE = 0,	/* no CFI covers this PC */
	CFI_CFA_SP,		/* rsp + off */
	CFI_CFA_BP,		/* rbp + off */
	CFI_CFA_DEREF_SP,	/* *(rsp + off): glibc's signal trampoline */
	CFI_CFA_PLT,		/* rsp + off + ((rip & 15) >= arg ? 8 : 0) */
	CFI_CFA_UNSUPPORTED,	/* CFI exists but uses what we do not cover */
};

/* Where the caller's value of a register (return address, rbp) is. */
enum cfi_reg_rule {
	CFI_REG_SAME = 0,	/* unchanged by this frame */
	CFI_REG_UNDEFINED,	/* not recoverable; for the RA: outermost frame */
	CFI_REG_AT_CFA,		/* saved at CFA + off */
	CFI_REG_AT_SP,		/* saved at rsp + off (DW_OP_breg7 expression) */
	CFI_REG_UNSUPPORTED,
};

#define CFI_ROW_SIGNAL 0x01	/* signal frame: the RA is an exact PC */

struct cfi_row {
	uint32_t pc;		/* start of the range, relative to table base */
	int32_t cfa_off;
	int16_t ra_off;
	int16_t bp_off;
	uint8_t cfa_rule;	/* enum cfi_cfa_rule */
	uint8_t ra_rule;	/* enum cfi_reg_rule */
	uint8_t bp_rule;
	uint8_t flags;		/* CFI_ROW_*; for CFI_CFA_PLT, arg << 4 */
};

struct cfi_table {
	uint64_t base;		/* ELF virtual address that pc is relative to */
	uint64_t end;		/* first address past the last row */
	uint32_t n;
	struct cfi_row *rows;	/* sorted by pc; a row covers up to the next */
	uint32_t fdes;		/* FDEs compiled, for --stats */
	uint32_t unsupported;	/* rows with an unsupported rule */
	uint32_t slow_fdes;	/* FDEs compiled through libdw */
	uint32_t refused_fdes;	/* malformed or too costly: one unsupported row */
};

enum cfi_engine {
	CFI_ENGINE_FAST = 0,	/* cfi_exec.c, libdw for short FDEs it refuses */
	CFI_ENGINE_LIBDW,	/* libdw for every FDE (the reference) */
};

#define CFI_OVER_BUDGET (-2)

/*
 * Compiles the .eh_frame of elf and the .debug_frame of dbg_elf (which may
 * be elf itself, a separate debug file or NULL) into t. Addresses are ELF
 * virtual addresses of elf. Returns 0 (possibly with an empty table when
 * there is no CFI), -1 when the CFI is malformed beyond use, or
 * CFI_OVER_BUDGET (with an empty table) when compiling it would take more
 * than max_bytes of memory; t is valid (and must be freed) either way.
 */
int cfi_compile(Elf *elf, Elf *dbg_elf, struct cfi_table *t, size_t max_bytes);
/* Same, with a chosen engine and no budget: the tests compare the two. */
int cfi_compile_engine(Elf *elf, Elf *dbg_elf, struct cfi_table *t,
		       enum cfi_engine engine);
void cfi_table_free(struct cfi_table *t);
/*
 * What a libdw session on elf's DWARF may hold: its .debug_* sections, and
 * their inflated sizes where compressed. Checked before dwarf_begin_elf,
 * which inflates what it needs.
 */
size_t cfi_dwarf_bytes(Elf *elf);

static inline size_t cfi_table_bytes(const struct cfi_table *t)
{
	return (size_t)t->n * sizeof(struct cfi_row);
}

/* The row covering ELF address addr, or NULL. */
static inline const struct cfi_row *cfi_lookup(const struct cfi_table *t,
					       uint64_t addr)
{
	if (t->n == 0 || addr < t->base || addr >= t->end)
		return NULL;
	uint32_t pc = (uint32_t)(addr - t->base);
	uint32_t lo = 0, hi = t->n;	/* first row with row.pc > pc */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct cfi_row *r = &t->rows[lo - 1];
	return r->cfa_rule == CFI_CFA_NONE ? NULL : r;
}

#endif
