/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: cpa-unwind's ELF loader on arbitrary bytes: headers, build
 * id notes, symbol tables and the CFI table compiler (.eh_frame and
 * .debug_frame, libdw for what the interpreter refuses) within a memory
 * budget, then lookups in what was compiled. The corpus includes
 * tests/hostile/hostile-elf's long FDEs, remember_state floods and symbol
 * tables.
 */
#include <libelf.h>
#include <stdint.h>
#include <string.h>

#include "../../cpa-unwind/elfobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init++)
		elf_version(EV_CURRENT);
	struct elf_obj o;
	memset(&o, 0, sizeof(o));
	/* a budget small enough that crafted tables reach it */
	if (elfobj_load_image(&o, data, size, 4u << 20) == 0 && o.loaded) {
		/* every row boundary and a spread of addresses must look up
		 * without reading out of bounds */
		for (uint32_t i = 0; i < o.cfi.n; i++) {
			uint64_t a = o.cfi.base + o.cfi.rows[i].pc;
			(void)cfi_lookup(&o.cfi, a);
			(void)cfi_lookup(&o.cfi, a - 1);
		}
		for (uint32_t i = 0; i < o.syms.n; i++) {
			long k = symtab_lookup(&o.syms, o.syms.syms[i].addr);
			if (k >= 0)
				(void)strlen(symtab_name(&o.syms, k));
		}
		uint64_t v;
		for (uint64_t off = 0; off < 1u << 16; off += 4093)
			if (elfobj_vaddr(&o, off, &v))
				(void)cfi_lookup(&o.cfi, v);
	}
	elfobj_unload(&o);
	return 0;
}
