// SPDX-License-Identifier: MIT
/*
 * A one-pass interpreter of DWARF call frame instructions, tracking only
 * what the walker needs: the CFA (register + offset, or one of the
 * expression shapes cfi.h names), the return address and rbp. Other
 * registers' rules are parsed and ignored. Nothing here allocates: rows go
 * to the caller as they are found, and the remember_state stack is fixed,
 * so neither a long FDE nor a flood of DW_CFA_remember_state costs more
 * than the caller's rows.
 */
#include <dwarf.h>
#include <string.h>

#include "cfi_exec.h"
#include "le.h"
#include "leb128.h"

#define REG_RBP 6
#define REG_RSP 7
#define MAX_EXPR_OPS 9		/* the longest shape: a PLT entry's CFA */

enum rule { R_UNSPEC = 0, R_UNDEF, R_SAME, R_OFFSET, R_OTHER };

struct reg_rule {
	uint8_t kind;
	int64_t off;
};

struct state {
	bool cfa_is_expr;	/* DW_CFA_def_cfa_expression: see cfa_expr */
	uint64_t cfa_reg;
	int64_t cfa_off;
	struct cfi_row cfa_expr;	/* its cfa_rule, cfa_off and flags */
	struct reg_rule ra, bp;
};

static bool fits16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

void cfi_cfa_from_ops(const Dwarf_Op *ops, size_t n, struct cfi_row *row)
{
	row->cfa_rule = CFI_CFA_UNSUPPORTED;
	if (n == 0)
		return;
	int reg = -1;
	int64_t off = 0;
	if (ops[0].atom == DW_OP_bregx) {
		reg = (int)ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	}
	if (reg < 0 || off < INT32_MIN || off > INT32_MAX)
		return;
	row->cfa_off = (int32_t)off;
	if (n == 1 && (reg == REG_RSP || reg == REG_RBP)) {
		row->cfa_rule = reg == REG_RSP ? CFI_CFA_SP : CFI_CFA_BP;
		return;
	}
	if (n == 2 && reg == REG_RSP && ops[1].atom == DW_OP_deref) {
		row->cfa_rule = CFI_CFA_DEREF_SP;
		return;
	}
	/*
	 * PLT entries (gcc/binutils):
	 *   breg7 8; breg16 0; lit15; and; litK; ge; lit3; shl; plus
	 * i.e. rsp + 8, plus 8 once the stub has pushed its argument.
	 */
	static const uint8_t plt[] = {
		DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
		DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus
	};
	if (n == 9 && reg == REG_RSP) {
		for (size_t i = 1; i < 9; i++) {
			if (i == 4) {
				if (ops[i].atom < DW_OP_lit0 ||
				    ops[i].atom > DW_OP_lit15)
					return;
				continue;
			}
			if (ops[i].atom != plt[i])
				return;
		}
		if (ops[1].number != 0)
			return;
		row->cfa_rule = CFI_CFA_PLT;
		row->flags |= (uint8_t)((ops[4].atom - DW_OP_lit0) << 4);
	}
}

/*
 * Decodes a CFA expression far enough to match the shapes above: any op
 * outside them, or more ops than the longest, makes it unsupported
 * without reading further (libdw would decode it, to no other end).
 */
static void cfa_from_expr(const uint8_t *p, const uint8_t *end,
			  struct cfi_row *row)
{
	Dwarf_Op ops[MAX_EXPR_OPS];
	size_t n = 0;
	memset(row, 0, sizeof(*row));
	row->cfa_rule = CFI_CFA_UNSUPPORTED;
	while (p < end) {
		if (n == MAX_EXPR_OPS)
			return;
		Dwarf_Op *op = &ops[n++];
		memset(op, 0, sizeof(*op));
		op->atom = *p++;
		int64_t s;
		uint64_t u;
		if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
			if (!cpa_sleb128(&p, end, &s))
				return;
			op->number = (Dwarf_Word)s;
		} else if (op->atom == DW_OP_bregx) {
			if (!cpa_uleb128(&p, end, &u) || !cpa_sleb128(&p, end, &s))
				return;
			op->number = u;
			op->number2 = (Dwarf_Word)s;
		} else if (!(op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31) &&
			   op->atom != DW_OP_deref && op->atom != DW_OP_and &&
			   op->atom != DW_OP_ge && op->atom != DW_OP_shl &&
			   op->atom != DW_OP_plus) {
			return;
		}
	}
	cfi_cfa_from_ops(ops, n, row);
}

/* The row for a state, with the same meaning cfi.c's libdw path gives. */
static void to_row(const struct state *s, bool signal, struct cfi_row *row)
{
	memset(row, 0, sizeof(*row));
	if (s->cfa_is_expr) {
		row->cfa_rule = s->cfa_expr.cfa_rule;
		row->cfa_off = s->cfa_expr.cfa_off;
		row->flags = s->cfa_expr.flags;
	} else if (s->cfa_off >= INT32_MIN && s->cfa_off <= INT32_MAX &&
		   (s->cfa_reg == REG_RSP || s->cfa_reg == REG_RBP)) {
		row->cfa_rule = s->cfa_reg == REG_RSP ? CFI_CFA_SP : CFI_CFA_BP;
		row->cfa_off = (int32_t)s->cfa_off;
	} else {
		row->cfa_rule = CFI_CFA_UNSUPPORTED;
	}
	switch (s->ra.kind) {
	case R_UNSPEC:	/* the x86-64 ABI: pushed by the call */
		row->ra_rule = CFI_REG_AT_CFA;
		row->ra_off = -8;
		break;
	case R_OFFSET:
		if (fits16(s->ra.off)) {
			row->ra_rule = CFI_REG_AT_CFA;
			row->ra_off = (int16_t)s->ra.off;
		} else {
			row->ra_rule = CFI_REG_UNSUPPORTED;
		}
		break;
	case R_UNDEF:
		row->ra_rule = CFI_REG_UNDEFINED;
		break;
	default:
		row->ra_rule = CFI_REG_UNSUPPORTED;
		break;
	}
	switch (s->bp.kind) {
	case R_UNSPEC:
	case R_SAME:
		row->bp_rule = CFI_REG_SAME;
		break;
	case R_OFFSET:
		if (fits16(s->bp.off)) {
			row->bp_rule = CFI_REG_AT_CFA;
			row->bp_off = (int16_t)s->bp.off;
		} else {
			row->bp_rule = CFI_REG_UNSUPPORTED;
		}
		break;
	case R_UNDEF:
		row->bp_rule = CFI_REG_UNDEFINED;
		break;
	default:
		row->bp_rule = CFI_REG_UNSUPPORTED;
		break;
	}
	if (row->ra_rule == CFI_REG_UNSUPPORTED)
		row->cfa_rule = CFI_CFA_UNSUPPORTED;
	if (row->cfa_rule == CFI_CFA_UNSUPPORTED) {
		row->cfa_off = 0;
		row->ra_rule = row->bp_rule = 0;
		row->ra_off = row->bp_off = 0;
		row->flags = 0;
	}
	if (signal)
		row->flags |= CFI_ROW_SIGNAL;
}

static struct reg_rule *tracked(struct state *s, uint64_t reg, uint64_t ra_reg)
{
	if (reg == ra_reg)
		return &s->ra;
	if (reg == REG_RBP)
		return &s->bp;
	return NULL;
}

struct exec {
	const struct cfi_cie *cie;
	struct state s, init;
	struct state stack[CFI_EXEC_MAX_REMEMBER];
	unsigned depth;
	uint64_t loc, hi;
	bool in_cie;
	cfi_emit_fn emit;
	void *arg;
};

static enum cfi_exec_result add_row(struct exec *x)
{
	if (x->loc >= x->hi)
		return CFI_EXEC_OK;
	struct cfi_row row;
	to_row(&x->s, x->cie->signal, &row);
	return x->emit(x->arg, x->loc, &row) ? CFI_EXEC_OK : CFI_EXEC_STOPPED;
}

static enum cfi_exec_result advance(struct exec *x, uint64_t delta)
{
	if (x->in_cie)
		return CFI_EXEC_LIBDW;	/* a CIE does not move the location */
	uint64_t to = x->loc + delta * x->cie->code_align;
	if (to < x->loc)
		return CFI_EXEC_BAD;
	if (to > x->loc) {
		enum cfi_exec_result rc = add_row(x);
		if (rc != CFI_EXEC_OK)
			return rc;
		x->loc = to;
	}
	return CFI_EXEC_OK;
}

static void set_rule(struct exec *x, uint64_t reg, uint8_t kind, int64_t off)
{
	struct reg_rule *r = tracked(&x->s, reg, x->cie->ra_reg);
	if (r) {
		r->kind = kind;
		r->off = off;
	}
}

/* Bytes as the leading operands of an instruction; false when truncated. */
#define ULEB(v) do { if (!cpa_uleb128(&p, end, &(v))) return CFI_EXEC_BAD; } while (0)
#define SLEB(v) do { if (!cpa_sleb128(&p, end, &(v))) return CFI_EXEC_BAD; } while (0)
#define NEED(k) do { if (end - p < (k)) return CFI_EXEC_BAD; } while (0)

static enum cfi_exec_result run(struct exec *x, const uint8_t *p,
				const uint8_t *end)
{
	const int64_t daf = x->cie->data_align;
	enum cfi_exec_result rc = CFI_EXEC_OK;
	uint64_t reg, u, u2;
	int64_t s;

	while (p < end) {
		uint8_t op = *p++;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			if ((rc = advance(x, op & 0x3f)) != CFI_EXEC_OK)
				return rc;
			continue;
		case DW_CFA_offset:
			ULEB(u);
			set_rule(x, op & 0x3f, R_OFFSET, (int64_t)u * daf);
			continue;
		case DW_CFA_restore:
			reg = op & 0x3f;
			goto restore;
		default:
			break;
		}
		switch (op) {
		case DW_CFA_nop:
			break;
		case DW_CFA_advance_loc1:
			NEED(1);
			rc = advance(x, p[0]);
			p += 1;
			break;
		case DW_CFA_advance_loc2:
			NEED(2);
			rc = advance(x, cpa_get_le16(p));
			p += 2;
			break;
		case DW_CFA_advance_loc4:
			NEED(4);
			rc = advance(x, cpa_get_le32(p));
			p += 4;
			break;
		case DW_CFA_offset_extended:
			ULEB(reg);
			ULEB(u);
			set_rule(x, reg, R_OFFSET, (int64_t)u * daf);
			break;
		case DW_CFA_offset_extended_sf:
			ULEB(reg);
			SLEB(s);
			set_rule(x, reg, R_OFFSET, s * daf);
			break;
		case DW_CFA_GNU_negative_offset_extended:
			ULEB(reg);
			ULEB(u);
			set_rule(x, reg, R_OFFSET, -(int64_t)u * daf);
			break;
		case DW_CFA_restore_extended:
			ULEB(reg);
		restore: {
			struct reg_rule *r = tracked(&x->s, reg, x->cie->ra_reg);
			struct reg_rule *i = tracked(&x->init, reg, x->cie->ra_reg);
			if (r)
				*r = *i;
			break;
		}
		case DW_CFA_undefined:
			ULEB(reg);
			set_rule(x, reg, R_UNDEF, 0);
			break;
		case DW_CFA_same_value:
			ULEB(reg);
			set_rule(x, reg, R_SAME, 0);
			break;
		case DW_CFA_register:
		case DW_CFA_val_offset:
			ULEB(reg);
			ULEB(u);
			set_rule(x, reg, R_OTHER, 0);
			break;
		case DW_CFA_val_offset_sf:
			ULEB(reg);
			SLEB(s);
			set_rule(x, reg, R_OTHER, 0);
			break;
		case DW_CFA_remember_state:
			/* Bounded: a flood of these must not cost memory
			 * (libdw copies every register's rule per level). */
			if (x->depth == CFI_EXEC_MAX_REMEMBER)
				return CFI_EXEC_BAD;
			x->stack[x->depth++] = x->s;
			break;
		case DW_CFA_restore_state:
			if (x->depth == 0)
				return CFI_EXEC_BAD;
			/* the CFA is part of the remembered state (as libdw
			 * and GCC's unwinder treat it) */
			x->s = x->stack[--x->depth];
			break;
		case DW_CFA_def_cfa:
			ULEB(reg);
			ULEB(u);
			x->s.cfa_is_expr = false;
			x->s.cfa_reg = reg;
			x->s.cfa_off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_sf:
			ULEB(reg);
			SLEB(s);
			x->s.cfa_is_expr = false;
			x->s.cfa_reg = reg;
			x->s.cfa_off = s * daf;
			break;
		case DW_CFA_def_cfa_register:
			ULEB(reg);
			if (x->s.cfa_is_expr)
				return CFI_EXEC_LIBDW;	/* no offset to keep */
			x->s.cfa_reg = reg;
			break;
		case DW_CFA_def_cfa_offset:
			ULEB(u);
			if (x->s.cfa_is_expr)
				return CFI_EXEC_LIBDW;
			x->s.cfa_off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_offset_sf:
			SLEB(s);
			if (x->s.cfa_is_expr)
				return CFI_EXEC_LIBDW;
			x->s.cfa_off = s * daf;
			break;
		case DW_CFA_def_cfa_expression:
			ULEB(u);
			if (u > (uint64_t)(end - p))
				return CFI_EXEC_BAD;
			x->s.cfa_is_expr = true;
			cfa_from_expr(p, p + u, &x->s.cfa_expr);
			p += u;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			ULEB(reg);
			ULEB(u2);
			if (u2 > (uint64_t)(end - p))
				return CFI_EXEC_BAD;
			/* the walker reads no register through an
			 * expression */
			set_rule(x, reg, R_OTHER, 0);
			p += u2;
			break;
		case DW_CFA_GNU_args_size:
			ULEB(u);
			break;
		default:
			/* DW_CFA_set_loc, vendor opcodes: libdw's job */
			return CFI_EXEC_LIBDW;
		}
		if (rc != CFI_EXEC_OK)
			return rc;
	}
	return CFI_EXEC_OK;
}

enum cfi_exec_result cfi_exec_fde(const struct cfi_cie *cie,
				  const uint8_t *insns, const uint8_t *end,
				  uint64_t lo, uint64_t hi, cfi_emit_fn emit,
				  void *arg)
{
	static __thread struct exec x;	/* 2 KB of remembered states */
	enum cfi_exec_result rc;
	memset(&x.s, 0, sizeof(x.s));
	x.cie = cie;
	x.depth = 0;
	x.loc = lo;
	x.hi = hi;
	x.emit = emit;
	x.arg = arg;
	x.s.cfa_reg = REG_RSP;
	x.s.cfa_off = 8;
	x.in_cie = true;
	if ((rc = run(&x, cie->insns, cie->insns_end)) != CFI_EXEC_OK)
		return rc;
	x.init = x.s;
	x.in_cie = false;
	if ((rc = run(&x, insns, end)) != CFI_EXEC_OK)
		return rc;
	return add_row(&x);
}
