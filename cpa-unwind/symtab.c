// SPDX-License-Identifier: MIT
/* Sorted function-symbol tables: built once per object, searched per frame. */
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "symtab.h"

/* Room for names of any length: a symbol name is capped here so one
 * absurd entry cannot blow up the blob. */
#define SYM_NAME_MAX 4096

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t cap2 = cpa_grow_cap(*cap, need, 256, elem);
	void *np = cap2 ? realloc(*p, cap2 * elem) : NULL;
	if (!np)
		return -1;
	*p = np;
	*cap = cap2;
	return 0;
}

int symtab_add(struct symtab *t, uint64_t addr, uint64_t size,
	       const char *name, size_t len)
{
	if (len > SYM_NAME_MAX)
		len = SYM_NAME_MAX;
	if (grow((void **)&t->syms, &t->syms_cap, (size_t)t->n + 1,
		 sizeof(*t->syms)) ||
	    grow((void **)&t->names, &t->names_cap, t->names_len + len + 1, 1))
		return -1;
	if (t->names_len + len + 1 > UINT32_MAX)
		return -1;
	struct sym *s = &t->syms[t->n++];
	s->addr = addr;
	s->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	s->name = (uint32_t)t->names_len;
	memcpy(t->names + t->names_len, name, len);
	t->names[t->names_len + len] = '\0';
	t->names_len += len + 1;
	return 0;
}

static bool is_code_symbol(const GElf_Sym *sym)
{
	int type = GELF_ST_TYPE(sym->st_info);
	if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0)
		return false;
	return type == STT_FUNC || type == STT_GNU_IFUNC;
}

/*
 * Global symbols are added before local and weak ones: at one address the
 * first added wins (cmp_sym), so __libc_start_main beats the local alias
 * __libc_start_main_alias_2 that glibc's debug file also lists.
 */
static long add_section(struct symtab *t, Elf *elf, Elf_Scn *scn,
			const GElf_Shdr *shdr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || shdr->sh_entsize == 0)
		return 0;
	size_t n = shdr->sh_size / shdr->sh_entsize;
	long added = 0;
	/* room for every entry at once: growing by doubling would hold up
	 * to twice the table while it is built */
	if (grow((void **)&t->syms, &t->syms_cap, (size_t)t->n + n,
		 sizeof(*t->syms)))
		return -1;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(data, (int)i, &sym) ||
			    !is_code_symbol(&sym) ||
			    (GELF_ST_BIND(sym.st_info) == STB_GLOBAL) != (pass == 0))
				continue;
			const char *name =
				elf_strptr(elf, shdr->sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (symtab_add(t, sym.st_value, sym.st_size, name,
				       strnlen(name, SYM_NAME_MAX)) < 0)
				return -1;
			added++;
		}
	}
	return added;
}

long symtab_add_elf(struct symtab *t, Elf *elf, bool want_symtab,
		    bool want_dynsym)
{
	long total = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			continue;
		if ((shdr.sh_type == SHT_SYMTAB && want_symtab) ||
		    (shdr.sh_type == SHT_DYNSYM && want_dynsym)) {
			long k = add_section(t, elf, scn, &shdr);
			if (k < 0)
				return -1;
			total += k;
		}
	}
	return total;
}

void symtab_elf_cost(Elf *elf, bool want_symtab, bool want_dynsym,
		     uint64_t *entries, uint64_t *bytes)
{
	*entries = *bytes = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr, strs;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_entsize == 0 ||
		    !((shdr.sh_type == SHT_SYMTAB && want_symtab) ||
		      (shdr.sh_type == SHT_DYNSYM && want_dynsym)))
			continue;
		uint64_t n = shdr.sh_size / shdr.sh_entsize, names = 0;
		Elf_Scn *str = elf_getscn(elf, shdr.sh_link);
		if (str && gelf_getshdr(str, &strs))
			names = strs.sh_size;
		*entries += n;
		/* the file's table and names are read; names are copied */
		*bytes += shdr.sh_size + 2 * names + n * sizeof(struct sym);
	}
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* At one address prefer the symbol with a size, then the longer
	 * range, so aliases resolve to the entry describing the function. */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name; /* first added */
}

/* At one address the last added first: a JIT map's later line names
 * what the address holds now. */
static int cmp_newest(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name > y->name ? -1 : x->name < y->name;
}

/* Keeps the first symbol at each address, and fits the arrays. */
static void dedup_fit(struct symtab *t)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < t->n; i++) {
		if (k > 0 && t->syms[k - 1].addr == t->syms[i].addr)
			continue;
		t->syms[k++] = t->syms[i];
	}
	t->n = k;
	if (k) {
		struct sym *s = realloc(t->syms, k * sizeof(*s));
		if (s)
			t->syms = s;
	} else {
		free(t->syms);
		t->syms = NULL;
	}
	t->syms_cap = k;
	if (t->names_len) {
		char *nm = realloc(t->names, t->names_len);
		if (nm) {
			t->names = nm;
			t->names_cap = t->names_len;
		}
	}
}

void symtab_finish(struct symtab *t)
{
	if (t->n == 0)
		return;
	qsort(t->syms, t->n, sizeof(*t->syms), cmp_sym);
	dedup_fit(t);
}

void symtab_finish_newest(struct symtab *t)
{
	if (t->n == 0)
		return;
	qsort(t->syms, t->n, sizeof(*t->syms), cmp_newest);
	dedup_fit(t);
}

int symtab_merge(struct symtab *out, const struct symtab *old,
		 const struct symtab *newer)
{
	memset(out, 0, sizeof(*out));
	size_t n = (size_t)old->n + newer->n;
	if (grow((void **)&out->syms, &out->syms_cap, n ? n : 1,
		 sizeof(*out->syms)) ||
	    grow((void **)&out->names, &out->names_cap,
		 old->names_len + newer->names_len + 1, 1))
		goto nomem;
	uint32_t i = 0, j = 0;
	while (i < old->n || j < newer->n) {
		const struct symtab *from;
		const struct sym *s;
		if (j >= newer->n ||
		    (i < old->n && old->syms[i].addr < newer->syms[j].addr)) {
			from = old;
			s = &old->syms[i++];
		} else {
			if (i < old->n && old->syms[i].addr == newer->syms[j].addr)
				i++;	/* the newer line wins */
			from = newer;
			s = &newer->syms[j++];
		}
		const char *name = symtab_name(from, s - from->syms);
		if (symtab_add(out, s->addr, s->size, name, strlen(name)) < 0)
			goto nomem;
	}
	dedup_fit(out);
	return 0;
nomem:
	symtab_free(out);
	return -1;
}

void symtab_free(struct symtab *t)
{
	free(t->syms);
	free(t->names);
	memset(t, 0, sizeof(*t));
}

size_t symtab_bytes(const struct symtab *t)
{
	return (size_t)t->n * sizeof(struct sym) + t->names_len;
}

long symtab_lookup(const struct symtab *t, uint64_t addr)
{
	uint32_t lo = 0, hi = t->n;	/* first symbol with addr > addr */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	const struct sym *s = &t->syms[lo - 1];
	if (s->size && addr - s->addr >= s->size)
		return -1;
	return lo - 1;
}
