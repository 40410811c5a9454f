// SPDX-License-Identifier: MIT
/*
 * CFI table compiler: walks every FDE of .eh_frame (or, when an object has
 * none, .debug_frame), runs its instructions (cfi_exec.c) and keeps the
 * resulting register rules as cfi_row entries.
 *
 * libdw enumerates the entries (we decode the FDEs' pointer encoding
 * ourselves: libdw leaves it encoded) and interprets the rare FDE the
 * one-pass interpreter refuses, but only while that stays cheap: libdw
 * re-runs an FDE from its start for every row it reports. What neither
 * covers becomes a CFI_CFA_UNSUPPORTED row, which ends a walk with a
 * counted reason rather than a guessed frame.
 *
 * Memory is bounded by the caller's budget: the rows collected while
 * compiling are the whole cost, and past the budget the compilation stops
 * and says so. They are collected as the table's own 16-byte rows, their
 * pc relative to the object's lowest load address, and sorted and merged
 * where they lie: a compiler's or libLLVM's .eh_frame (a million rows)
 * must not need a second copy of them, nor qsort's scratch, at its peak.
 */
#include <dwarf.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cfi.h"
#include "le.h"
#include "leb128.h"
#include "cfi_exec.h"
#include "filepages.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RIP 16	/* the return address column on x86-64 */

/*
 * libdw's share of the work, in instruction bytes it interprets: an FDE
 * costs its length for every row. Past this an FDE the interpreter
 * refused is not handed to libdw but made one unsupported row.
 */
#define LIBDW_FDE_MAX 1024		/* instruction bytes of one FDE */
#define LIBDW_WORK_MAX (16u << 20)	/* per object */
#define CFI_DROP_WINDOW (1u << 20)	/* section bytes resident at once */

struct row_vec {
	struct cfi_row *v;	/* pc relative to base */
	size_t n, cap;
	size_t max;		/* rows the budget allows */
	uint64_t base;		/* lowest load address of the object */
	uint64_t libdw_work;	/* see LIBDW_WORK_MAX */
	bool oom, over;
};

/* Whether [lo, hi] fits the table's 32-bit pcs; FDEs that do not cover
 * no code of the object (its segments are within 4 GiB of base). */
static bool in_range(const struct row_vec *rv, uint64_t lo, uint64_t hi)
{
	return lo >= rv->base && hi >= lo && hi - rv->base <= UINT32_MAX;
}

/* False once out of memory or budget; the compilation then stops. */
static bool vec_push(struct row_vec *rv, uint64_t pc,
		     const struct cfi_row *row)
{
	if (rv->oom || rv->over)
		return false;
	if (!in_range(rv, pc, pc)) {
		rv->oom = true;	/* an engine emitted past its FDE */
		return false;
	}
	if (rv->n == rv->cap) {
		if (rv->n >= rv->max) {
			rv->over = true;
			return false;
		}
		size_t cap = cpa_grow_cap(rv->cap, rv->n + 1, 1024,
					  sizeof(*rv->v));
		if (cap > rv->max)
			cap = rv->max;
		void *nv = cap ? realloc(rv->v, cap * sizeof(*rv->v)) : NULL;
		if (!nv) {
			rv->oom = true;
			return false;
		}
		rv->v = nv;
		rv->cap = cap;
	}
	rv->v[rv->n] = *row;
	rv->v[rv->n].pc = (uint32_t)(pc - rv->base);
	rv->n++;
	return true;
}

/* ---- FDE address decoding --------------------------------------------- */

/*
 * Reads a pointer in DW_EH_PE encoding enc at *p. pc_addr is the virtual
 * address of *p for pc-relative values. with_app false reads only the
 * value format (as FDE address ranges are). False on what we cannot
 * decode.
 */
static bool read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc,
			 unsigned ptr_size, uint64_t pc_addr, bool with_app,
			 uint64_t *out)
{
	uint64_t v;
	unsigned n = 0;
	bool sign = false;

	if (enc == DW_EH_PE_omit)
		return false;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: n = ptr_size; break;
	case DW_EH_PE_udata2: n = 2; break;
	case DW_EH_PE_udata4: n = 4; break;
	case DW_EH_PE_udata8: n = 8; break;
	case DW_EH_PE_sdata2: n = 2; sign = true; break;
	case DW_EH_PE_sdata4: n = 4; sign = true; break;
	case DW_EH_PE_sdata8: n = 8; break;
	case DW_EH_PE_uleb128:
		if (!cpa_uleb128(p, end, &v))
			return false;
		break;
	case DW_EH_PE_sleb128: {
		int64_t s;
		if (!cpa_sleb128(p, end, &s))
			return false;
		v = (uint64_t)s;
		break;
	}
	default:
		return false;
	}
	if (n) {
		if ((size_t)(end - *p) < n)
			return false;
		v = cpa_get_le(*p, n);
		if (sign && n < 8 && (v >> (8 * n - 1)) & 1)
			v |= ~(uint64_t)0 << (8 * n);
		*p += n;
	}
	if (with_app) {
		switch (enc & 0x70) {
		case 0:
			break;
		case DW_EH_PE_pcrel:
			v += pc_addr;
			break;
		default:	/* datarel, textrel, funcrel: not in FDEs on Linux */
			return false;
		}
		if (enc & DW_EH_PE_indirect)
			return false;
	}
	*out = v;
	return true;
}

/*
 * What an FDE needs from its CIE: the pointer encoding of its addresses
 * ('R' augmentation), whether it carries augmentation data ('z'), whether
 * it describes a signal frame ('S'), and the initial instructions.
 */
static bool cie_info(const Dwarf_CIE *cie, unsigned ptr_size, uint8_t *enc,
		     struct cfi_cie *info)
{
	const char *aug = cie->augmentation;
	*enc = DW_EH_PE_absptr;
	memset(info, 0, sizeof(*info));
	info->insns = cie->initial_instructions;
	info->insns_end = cie->initial_instructions_end;
	info->code_align = cie->code_alignment_factor;
	info->data_align = cie->data_alignment_factor;
	info->ra_reg = cie->return_address_register;
	if (!aug || aug[0] == '\0')
		return true;
	if (aug[0] != 'z')
		return false;
	info->has_z = true;
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p + cie->augmentation_data_size;
	for (const char *a = aug + 1; *a; a++) {
		switch (*a) {
		case 'R':
			if (p >= end)
				return false;
			*enc = *p++;
			break;
		case 'L':
			p++;
			break;
		case 'P': {
			uint64_t ignored;
			if (p >= end)
				return false;
			uint8_t penc = *p++;
			if (!read_encoded(&p, end, penc, ptr_size, 0, false,
					  &ignored))
				return false;
			break;
		}
		case 'S':
			info->signal = true;
			break;
		case 'B':
			break;
		default:
			return false;
		}
	}
	return true;
}

static bool emit_row(void *arg, uint64_t pc, const struct cfi_row *row)
{
	return vec_push(arg, pc, row);
}

/* ---- rules ------------------------------------------------------------- */

static bool fits16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

static void reg_from_frame(Dwarf_Frame *fr, int regno, uint8_t *rule,
			   int16_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;
	*off = 0;
	*rule = CFI_REG_UNSUPPORTED;
	if (dwarf_frame_register(fr, regno, mem, &ops, &n) != 0)
		return;
	if (n == 0) {
		*rule = ops == NULL ? CFI_REG_SAME : CFI_REG_UNDEFINED;
		return;
	}
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		int64_t v = 0;
		if (n == 2 && ops[1].atom == DW_OP_plus_uconst)
			v = (int64_t)ops[1].number;
		else if (n != 1)
			return;	/* val_offset and friends */
		if (!fits16(v))
			return;
		*rule = CFI_REG_AT_CFA;
		*off = (int16_t)v;
		return;
	}
	if (n == 1 && ops[0].atom == DW_OP_breg7 && fits16((int64_t)ops[0].number)) {
		*rule = CFI_REG_AT_SP;
		*off = (int16_t)(int64_t)ops[0].number;
	}
}

static void row_from_frame(Dwarf_Frame *fr, bool signal, struct cfi_row *row)
{
	Dwarf_Op *ops;
	size_t n;
	memset(row, 0, sizeof(*row));
	if (dwarf_frame_cfa(fr, &ops, &n) != 0)
		n = 0;
	cfi_cfa_from_ops(ops, n, row);
	reg_from_frame(fr, REG_RIP, &row->ra_rule, &row->ra_off);
	reg_from_frame(fr, REG_RBP, &row->bp_rule, &row->bp_off);
	if (row->ra_rule == CFI_REG_UNSUPPORTED || row->ra_rule == CFI_REG_SAME)
		row->cfa_rule = CFI_CFA_UNSUPPORTED;
	if (row->cfa_rule == CFI_CFA_UNSUPPORTED) {
		/* nothing else of an unusable row matters (or is compared) */
		memset(row, 0, sizeof(*row));
		row->cfa_rule = CFI_CFA_UNSUPPORTED;
	}
	if (signal)
		row->flags |= CFI_ROW_SIGNAL;
}

/* ---- sections ---------------------------------------------------------- */

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *shdr)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		if (!gelf_getshdr(scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		const char *sn = elf_strptr(elf, shstrndx, shdr->sh_name);
		if (sn && !strcmp(sn, name))
			return scn;
	}
	return NULL;
}

/*
 * One FDE through libdw, which interprets it from its start again for
 * every row: done only while the FDE is short and the object's libdw work
 * stays within LIBDW_WORK_MAX (the reference engine is not bounded).
 */
static enum cfi_exec_result compile_fde_libdw(Dwarf_CFI *cfi, uint64_t lo,
					      uint64_t hi, size_t insn_len,
					      enum cfi_engine engine,
					      struct row_vec *rv,
					      struct cfi_table *t)
{
	bool bounded = engine == CFI_ENGINE_FAST;
	if (bounded && insn_len > LIBDW_FDE_MAX)
		return CFI_EXEC_BAD;
	t->slow_fdes++;
	for (uint64_t addr = lo; addr < hi;) {
		if (bounded && (rv->libdw_work += insn_len + 1) > LIBDW_WORK_MAX)
			return CFI_EXEC_BAD;
		Dwarf_Frame *fr;
		if (dwarf_cfi_addrframe(cfi, addr, &fr) != 0)
			break;
		Dwarf_Addr s, e;
		bool signal = false;
		struct cfi_row row;
		if (dwarf_frame_info(fr, &s, &e, &signal) < 0) {
			free(fr);
			break;
		}
		row_from_frame(fr, signal, &row);
		free(fr);
		if (row.cfa_rule == CFI_CFA_UNSUPPORTED)
			t->unsupported++;
		if (!vec_push(rv, addr, &row))
			return CFI_EXEC_STOPPED;
		if (e <= addr)
			break;
		addr = e < hi ? e : hi;
	}
	return CFI_EXEC_OK;
}

/*
 * Compiles every FDE of one CFI section. Returns the number of FDEs, or
 * -1 when the section is malformed or the budget ran out (rv says which).
 */
static long compile_section(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr,
			    bool eh, Dwarf_CFI *cfi, enum cfi_engine engine,
			    struct row_vec *rv, struct cfi_table *t)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	if (!ident)
		return -1;
	unsigned ptr_size = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	/* Go compresses .debug_frame; dwarf_begin_elf may already have
	 * decompressed it in place, so look at the header as it is now. */
	GElf_Shdr now;
	if (!gelf_getshdr(scn, &now))
		return -1;
	if ((now.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return -1;
	Elf_Data *data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return -1;
	const uint8_t *base = data->d_buf;
	/* the section's pages read so far go back as the FDEs are
	 * compiled, a window at a time (filepages.h): rows are the cost */
	bool drop = filepages_droppable(base, data->d_size);
	Dwarf_Off dropped = 0;

	struct {
		Dwarf_Off off;
		uint8_t enc;
		bool ok;
		struct cfi_cie info;
	} cies[8];
	struct cfi_cie info;
	unsigned ncies = 0, next_cie = 0;
	long fdes = 0;
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry ent;

	for (; off != (Dwarf_Off)-1; off = next) {
		if (drop && off > dropped + CFI_DROP_WINDOW) {
			filepages_drop(base + dropped, off - dropped);
			dropped = off;
		}
		int next_rc = dwarf_next_cfi(ident, data, eh, off, &next, &ent);
		if (next_rc == 1)
			break;
		if (next_rc != 0)
			return fdes ? fdes : -1;
		if (dwarf_cfi_cie_p(&ent))
			continue;

		/* The encoding of this FDE's addresses comes from its CIE. */
		uint8_t enc = 0;
		bool ok = false, found = false;
		for (unsigned i = 0; i < ncies; i++) {
			if (cies[i].off == ent.fde.CIE_pointer) {
				enc = cies[i].enc;
				ok = cies[i].ok;
				info = cies[i].info;
				found = true;
				break;
			}
		}
		if (!found) {
			Dwarf_CFI_Entry cie;
			Dwarf_Off cnext;
			ok = dwarf_next_cfi(ident, data, eh, ent.fde.CIE_pointer,
					    &cnext, &cie) == 0 &&
			     dwarf_cfi_cie_p(&cie) &&
			     cie_info(&cie.cie, ptr_size, &enc, &info);
			if (!eh)
				enc = DW_EH_PE_absptr;
			unsigned slot = ncies < 8 ? ncies++ : next_cie++ % 8;
			cies[slot].off = ent.fde.CIE_pointer;
			cies[slot].enc = enc;
			cies[slot].ok = ok;
			cies[slot].info = info;
		}
		if (!ok)
			continue;

		const uint8_t *p = ent.fde.start, *end = ent.fde.end;
		uint64_t lo, range;
		if (!read_encoded(&p, end, enc, ptr_size,
				  shdr->sh_addr + (uint64_t)(p - base), true, &lo) ||
		    !read_encoded(&p, end, enc, ptr_size, 0, false, &range))
			continue;
		if (range == 0 || lo == 0 || lo + range < lo)
			continue;	/* discarded by the linker */
		if (!in_range(rv, lo, lo + range))
			continue;	/* outside the object */
		fdes++;

		uint64_t hi = lo + range;
		uint64_t aug_len = 0;
		size_t mark = rv->n;
		enum cfi_exec_result rc = CFI_EXEC_LIBDW;
		if (info.has_z && (!cpa_uleb128(&p, end, &aug_len) ||
				   aug_len > (uint64_t)(end - p)))
			rc = CFI_EXEC_BAD;
		else
			p += aug_len;
		if (rc == CFI_EXEC_LIBDW && engine == CFI_ENGINE_FAST)
			rc = cfi_exec_fde(&info, p, end, lo, hi, emit_row, rv);
		if (rc == CFI_EXEC_LIBDW) {
			rv->n = mark;
			rc = compile_fde_libdw(cfi, lo, hi, (size_t)(end - p),
					       engine, rv, t);
		}
		if (rc == CFI_EXEC_STOPPED)
			return -1;
		if (rc != CFI_EXEC_OK) {
			/* what neither engine takes covers its range with
			 * one row that ends a walk there */
			struct cfi_row bad = { .cfa_rule = CFI_CFA_UNSUPPORTED };
			rv->n = mark;
			t->refused_fdes++;
			t->unsupported++;
			if (!vec_push(rv, lo, &bad))
				return -1;
		}
		struct cfi_row gap = { 0 };
		if (!vec_push(rv, hi, &gap))
			return -1;
	}
	return fdes;
}

/* Row order: by pc; at one address a function's first row before the
 * gap marker that ends the function below it; then by content, so that
 * which of two FDEs claiming one address wins does not depend on the
 * order of the sort. */
static int cmp_row(const struct cfi_row *a, const struct cfi_row *b)
{
	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	int none = (a->cfa_rule == CFI_CFA_NONE) - (b->cfa_rule == CFI_CFA_NONE);
	return none ? none : memcmp(a, b, sizeof(*a));
}

static void sift_down(struct cfi_row *v, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && cmp_row(&v[child], &v[child + 1]) < 0)
			child++;
		if (cmp_row(&v[root], &v[child]) >= 0)
			return;
		struct cfi_row t = v[root];
		v[root] = v[child];
		v[child] = t;
	}
}

/* Heapsort: in place, where glibc's qsort allocates a copy of the array
 * (tens of megabytes for a big object's rows). Skipped when the FDEs came
 * in address order, as a linker usually writes them. */
static void sort_rows(struct cfi_row *v, size_t n)
{
	size_t i = 1;
	while (i < n && cmp_row(&v[i - 1], &v[i]) <= 0)
		i++;
	if (i >= n)
		return;
	for (i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (i = n; i-- > 1;) {
		struct cfi_row t = v[0];
		v[0] = v[i];
		v[i] = t;
		sift_down(v, 0, i);
	}
}

static bool same_rule(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->cfa_rule == b->cfa_rule && a->cfa_off == b->cfa_off &&
	       a->ra_rule == b->ra_rule && a->ra_off == b->ra_off &&
	       a->bp_rule == b->bp_rule && a->bp_off == b->bp_off &&
	       a->flags == b->flags;
}

/* Sorts, drops duplicates and merges runs of equal rules, in place, into
 * t, then gives back what the merge freed. */
static void finish_table(struct row_vec *rv, struct cfi_table *t)
{
	if (rv->n == 0)
		return;
	sort_rows(rv->v, rv->n);
	struct cfi_row *rows = rv->v;
	uint32_t last = rows[rv->n - 1].pc, n = 0;
	for (size_t i = 0; i < rv->n; i++) {
		if (i > 0 && rows[i].pc == rows[i - 1].pc)
			continue;
		if (n > 0 && same_rule(&rows[n - 1], &rows[i]))
			continue;
		rows[n++] = rows[i];
	}
	struct cfi_row *shrunk = realloc(rows, n * sizeof(*rows));
	t->rows = shrunk ? shrunk : rows;
	rv->v = NULL;
	t->base = rv->base;
	t->end = rv->base + last;
	t->n = n;
}

/* The lowest address of elf's loadable segments, which the table's pcs
 * are relative to; 0 for an object without (a relocatable file). */
static uint64_t load_base(Elf *elf)
{
	size_t nph;
	uint64_t base = UINT64_MAX;
	if (elf_getphdrnum(elf, &nph) != 0)
		return 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < base)
			base = ph.p_vaddr;
	}
	return base == UINT64_MAX ? 0 : base;
}

/* What compiling costs per row: the row itself (the table is made in
 * place). */
#define COMPILE_ROW_BYTES sizeof(struct cfi_row)

static int compile(Elf *elf, Elf *dbg_elf, struct cfi_table *t,
		   enum cfi_engine engine, size_t max_bytes)
{
	struct row_vec rv = { .max = max_bytes / COMPILE_ROW_BYTES,
			      .base = load_base(elf) };
	GElf_Shdr shdr;
	Elf_Scn *scn;
	long fdes = 0;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	scn = find_section(elf, ".eh_frame", &shdr);
	if (scn) {
		Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
		if (cfi) {
			fdes = compile_section(elf, scn, &shdr, true, cfi,
					       engine, &rv, t);
			dwarf_cfi_end(cfi);
		}
		if (fdes < 0)
			rc = -1;
	}
	/* .debug_frame only when there is no .eh_frame to use: the two
	 * describe the same code when both exist. Go binaries have only
	 * .debug_frame. */
	if (fdes <= 0 && !rv.over && dbg_elf &&
	    (scn = find_section(dbg_elf, ".debug_frame", &shdr))) {
		/* libdw's session holds the debug sections, inflated: a
		 * small compressed section can be a very large one */
		size_t dwarf = cfi_dwarf_bytes(dbg_elf);
		if (dwarf > max_bytes) {
			free(rv.v);
			return CFI_OVER_BUDGET;
		}
		rv.max = (max_bytes - dwarf) / COMPILE_ROW_BYTES;
		Dwarf *dw = dwarf_begin_elf(dbg_elf, DWARF_C_READ, NULL);
		Dwarf_CFI *cfi = dw ? dwarf_getcfi(dw) : NULL;
		if (cfi) {
			rv.n = 0;
			t->unsupported = t->slow_fdes = t->refused_fdes = 0;
			fdes = compile_section(dbg_elf, scn, &shdr, false, cfi,
					       engine, &rv, t);
			rc = fdes < 0 ? -1 : 0;
		}
		if (dw)
			dwarf_end(dw);
	}
	if (rv.over) {
		free(rv.v);
		cfi_table_free(t);
		return CFI_OVER_BUDGET;
	}
	if (rv.oom)
		rc = -1;
	else
		finish_table(&rv, t);
	t->fdes = fdes > 0 ? (uint32_t)fdes : 0;
	free(rv.v);
	return rc;
}

int cfi_compile(Elf *elf, Elf *dbg_elf, struct cfi_table *t, size_t max_bytes)
{
	return compile(elf, dbg_elf, t, CFI_ENGINE_FAST, max_bytes);
}

int cfi_compile_engine(Elf *elf, Elf *dbg_elf, struct cfi_table *t,
		       enum cfi_engine engine)
{
	return compile(elf, dbg_elf, t, engine, SIZE_MAX);
}

size_t cfi_dwarf_bytes(Elf *elf)
{
	size_t shstrndx, n = 0;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".debug_", 7))
			continue;
		n += sh.sh_size;
		GElf_Chdr ch;
		if ((sh.sh_flags & SHF_COMPRESSED) && gelf_getchdr(scn, &ch))
			n += ch.ch_size;
	}
	return n;
}

void cfi_table_free(struct cfi_table *t)
{
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
