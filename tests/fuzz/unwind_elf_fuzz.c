/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: cpa-unwind's ELF loader on arbitrary bytes: headers, build
 * id notes, symbol tables and the CFI table compiler (.eh_frame and
 * .debug_frame, libdw for what the interpreter refuses) within a memory
 * budget, then lookups in what was compiled; and the table of inlined
 * instances read from its DWARF (inline.c), looked up at every range. The corpus includes
 * tests/hostile/hostile-elf's long FDEs, remember_state floods and symbol
 * tables.
 */
#include <libelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpa-unwind/elfobj.h"
#include "intern.h"

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

	/* libelf wants a writable image */
	char *copy = malloc(size ? size : 1);
	Elf *elf = copy ? elf_memory(memcpy(copy, data, size), size) : NULL;
	struct inline_table t;
	if (elf && inline_table_build(&t, elf, 4u << 20) == INLINE_BUILT) {
		uint32_t names[INLINE_MAX_DEPTH];
		for (uint32_t i = 0; i < t.nranges; i++) {
			const struct inline_range *r = &t.ranges[i];
			unsigned n = inline_chain(&t, r->lo, names,
						  INLINE_MAX_DEPTH);
			for (unsigned k = 0; k < n; k++)
				(void)strlen(cpa_strtab_get(t.names, names[k],
							    NULL));
			(void)inline_chain(&t, r->lo + r->len - 1, names, 3);
			(void)inline_chain(&t, r->lo + r->len, names, 1);
		}
		inline_table_free(&t);
	}
	if (elf)
		elf_end(elf);
	free(copy);
	return 0;
}
