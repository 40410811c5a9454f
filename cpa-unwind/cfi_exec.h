/* SPDX-License-Identifier: MIT */
/*
 * The CFI table compiler's interpreter: one pass over an FDE's call frame
 * instructions yields all of its rows, however many there are, in time
 * linear in the instructions. It covers the instructions x86-64 compilers
 * and glibc emit for the registers the walker uses, including the DWARF
 * expression shapes cfi.h names (signal trampolines, PLT entries). An FDE
 * that needs anything else (DW_CFA_set_loc, other expressions, vendor
 * opcodes) is refused, and cfi.c compiles that one FDE through libdw if it
 * is small enough to do so cheaply.
 */
#ifndef CPA_UNWIND_CFI_EXEC_H
#define CPA_UNWIND_CFI_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <elfutils/libdw.h>

#include "cfi.h"

/* DW_CFA_remember_state depth: compilers nest one or two deep. */
#define CFI_EXEC_MAX_REMEMBER 16

struct cfi_cie {
	const uint8_t *insns, *insns_end;	/* initial instructions */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	bool signal;		/* 'S' augmentation */
	bool has_z;		/* FDEs carry an augmentation length */
};

/* Called per row; false stops the FDE (a budget ran out). */
typedef bool (*cfi_emit_fn)(void *arg, uint64_t pc, const struct cfi_row *row);

enum cfi_exec_result {
	CFI_EXEC_OK = 0,
	CFI_EXEC_LIBDW,		/* valid, but needs what only libdw covers */
	CFI_EXEC_BAD,		/* truncated, or nests remember_state too deep */
	CFI_EXEC_STOPPED,	/* emit said stop */
};

/*
 * Runs the CIE's initial instructions, then the FDE's (insns..end) for the
 * range [lo, hi), calling emit for the rule in force from each location
 * on, in increasing pc order (equal neighbours are merged by the caller).
 * Rows are emitted as they are found: on anything but CFI_EXEC_OK the
 * caller drops what this FDE emitted.
 */
enum cfi_exec_result cfi_exec_fde(const struct cfi_cie *cie,
				  const uint8_t *insns, const uint8_t *end,
				  uint64_t lo, uint64_t hi, cfi_emit_fn emit,
				  void *arg);

/* The CFA rule of a DWARF expression, in row (shared with cfi.c's libdw
 * path so that both engines read expressions alike). */
void cfi_cfa_from_ops(const Dwarf_Op *ops, size_t n, struct cfi_row *row);

#endif
