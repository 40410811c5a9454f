/* SPDX-License-Identifier: MIT */
/*
 * Function symbols of one ELF object (.symtab, else .dynsym), as a sorted
 * array of address ranges with names in one string blob. Names are raw
 * (mangled); demangle.c turns them into what the frame shows.
 */
#ifndef CPA_UNWIND_SYMTAB_H
#define CPA_UNWIND_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

struct sym {
	uint64_t addr;		/* ELF virtual address */
	uint32_t size;		/* 0: up to the next symbol */
	uint32_t name;		/* offset in symtab.names */
};

struct symtab {
	struct sym *syms;
	uint32_t n;
	char *names;
	size_t names_len;
	size_t syms_cap, names_cap;	/* while building */
};

/*
 * Adds the function symbols of elf to t (call once per source: the object
 * itself, then a separate debug file). Returns the number added, or -1 on
 * allocation failure.
 */
long symtab_add_elf(struct symtab *t, Elf *elf, bool want_symtab,
		    bool want_dynsym);
/*
 * What symtab_add_elf would cost at most, from the section headers alone:
 * the number of entries, and bytes (the symbols kept, their names, and the
 * file's table and names read on the way).
 */
void symtab_elf_cost(Elf *elf, bool want_symtab, bool want_dynsym,
		     uint64_t *entries, uint64_t *bytes);
/* Adds one symbol by name (perf maps, kallsyms). -1 on allocation failure. */
int symtab_add(struct symtab *t, uint64_t addr, uint64_t size,
	       const char *name, size_t len);
/* Sorts and removes duplicate addresses; call after the last add. */
void symtab_finish(struct symtab *t);
/* The same for a JIT map: at one address the symbol added last wins. */
void symtab_finish_newest(struct symtab *t);
/* out = old and newer (both finished) together, newer's symbol winning
 * at an address both have. 0, or -1 out of memory (out empty). */
int symtab_merge(struct symtab *out, const struct symtab *old,
		 const struct symtab *newer);
void symtab_free(struct symtab *t);
size_t symtab_bytes(const struct symtab *t);

/* Index of the symbol containing addr, or -1. */
long symtab_lookup(const struct symtab *t, uint64_t addr);

static inline const char *symtab_name(const struct symtab *t, long i)
{
	return t->names + t->syms[i].name;
}

#endif
