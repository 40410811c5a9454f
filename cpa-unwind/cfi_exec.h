/* SPDX-License-Identifier: MIT */
/*
 * The fast path of the CFI table compiler: one pass over an FDE's call
 * frame instructions yields all of its rows. It covers the instructions
 * x86-64 compilers emit for the registers the walker uses; an FDE that
 * needs anything else (DWARF expressions for the CFA, the return address
 * or rbp, DW_CFA_set_loc, vendor opcodes) is refused, and cfi.c compiles
 * that one FDE through libdw instead, which is about 30 times slower.
 */
#ifndef CPA_UNWIND_CFI_EXEC_H
#define CPA_UNWIND_CFI_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"

struct cfi_cie {
	const uint8_t *insns, *insns_end;	/* initial instructions */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	bool signal;		/* 'S' augmentation */
	bool has_z;		/* FDEs carry an augmentation length */
};

typedef void (*cfi_emit_fn)(void *arg, uint64_t pc, const struct cfi_row *row);

/*
 * Runs the CIE's initial instructions, then the FDE's (insns..end) for the
 * range [lo, hi), calling emit for the rule in force from each location
 * on (in increasing pc order; equal neighbours are merged by the caller).
 * Returns 0, or -1 when the FDE needs libdw (nothing was emitted then).
 */
int cfi_exec_fde(const struct cfi_cie *cie, const uint8_t *insns,
		 const uint8_t *end, uint64_t lo, uint64_t hi, cfi_emit_fn emit,
		 void *arg);

#endif
