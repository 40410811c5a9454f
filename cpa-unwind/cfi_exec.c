// SPDX-License-Identifier: MIT
/*
 * A one-pass interpreter of DWARF call frame instructions, tracking only
 * what the walker needs: the CFA (register + offset), the return address
 * and rbp. Other registers' rules are parsed and ignored.
 */
#include <dwarf.h>
#include <string.h>

#include "cfi_exec.h"
#include "leb128.h"

#define REG_RBP 6
#define REG_RSP 7
#define MAX_ROWS 1024		/* per FDE; more goes through libdw */
#define MAX_REMEMBER 16		/* DW_CFA_remember_state depth */

enum rule { R_UNSPEC = 0, R_UNDEF, R_SAME, R_OFFSET, R_OTHER };

struct reg_rule {
	uint8_t kind;
	int64_t off;
};

struct state {
	uint64_t cfa_reg;
	int64_t cfa_off;
	struct reg_rule ra, bp;
};

struct pending {
	uint64_t pc;
	struct cfi_row row;
};

static bool fits16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* The row for a state, with the same meaning cfi.c's libdw path gives. */
static void to_row(const struct state *s, bool signal, struct cfi_row *row)
{
	memset(row, 0, sizeof(*row));
	if (s->cfa_off >= INT32_MIN && s->cfa_off <= INT32_MAX &&
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
	struct state stack[MAX_REMEMBER];
	unsigned depth;
	uint64_t loc, hi;
	struct pending rows[MAX_ROWS];
	unsigned n;
	bool in_cie;
};

static bool add_row(struct exec *x)
{
	if (x->loc >= x->hi)
		return true;
	if (x->n == MAX_ROWS)
		return false;
	x->rows[x->n].pc = x->loc;
	to_row(&x->s, x->cie->signal, &x->rows[x->n].row);
	x->n++;
	return true;
}

static bool advance(struct exec *x, uint64_t delta)
{
	if (x->in_cie)
		return false;	/* a CIE does not move the location */
	uint64_t to = x->loc + delta * x->cie->code_align;
	if (to < x->loc)
		return false;
	if (to > x->loc) {
		if (!add_row(x))
			return false;
		x->loc = to;
	}
	return true;
}

static void set_rule(struct exec *x, uint64_t reg, uint8_t kind, int64_t off)
{
	struct reg_rule *r = tracked(&x->s, reg, x->cie->ra_reg);
	if (r) {
		r->kind = kind;
		r->off = off;
	}
}

/* Runs instructions; false when one needs libdw or the bytes are bad. */
static bool run(struct exec *x, const uint8_t *p, const uint8_t *end)
{
	const int64_t daf = x->cie->data_align;
	uint64_t reg, u, u2;
	int64_t s;

	while (p < end) {
		uint8_t op = *p++;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			if (!advance(x, op & 0x3f))
				return false;
			continue;
		case DW_CFA_offset:
			if (!cpa_uleb128(&p, end, &u))
				return false;
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
			if (end - p < 1 || !advance(x, p[0]))
				return false;
			p += 1;
			break;
		case DW_CFA_advance_loc2:
			if (end - p < 2 || !advance(x, (uint64_t)p[0] | (uint64_t)p[1] << 8))
				return false;
			p += 2;
			break;
		case DW_CFA_advance_loc4:
			if (end - p < 4 ||
			    !advance(x, (uint64_t)p[0] | (uint64_t)p[1] << 8 |
					(uint64_t)p[2] << 16 | (uint64_t)p[3] << 24))
				return false;
			p += 4;
			break;
		case DW_CFA_offset_extended:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_uleb128(&p, end, &u))
				return false;
			set_rule(x, reg, R_OFFSET, (int64_t)u * daf);
			break;
		case DW_CFA_offset_extended_sf:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_sleb128(&p, end, &s))
				return false;
			set_rule(x, reg, R_OFFSET, s * daf);
			break;
		case DW_CFA_GNU_negative_offset_extended:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_uleb128(&p, end, &u))
				return false;
			set_rule(x, reg, R_OFFSET, -(int64_t)u * daf);
			break;
		case DW_CFA_restore_extended:
			if (!cpa_uleb128(&p, end, &reg))
				return false;
		restore: {
			struct reg_rule *r = tracked(&x->s, reg, x->cie->ra_reg);
			struct reg_rule *i = tracked(&x->init, reg, x->cie->ra_reg);
			if (r)
				*r = *i;
			break;
		}
		case DW_CFA_undefined:
			if (!cpa_uleb128(&p, end, &reg))
				return false;
			set_rule(x, reg, R_UNDEF, 0);
			break;
		case DW_CFA_same_value:
			if (!cpa_uleb128(&p, end, &reg))
				return false;
			set_rule(x, reg, R_SAME, 0);
			break;
		case DW_CFA_register:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_uleb128(&p, end, &u))
				return false;
			set_rule(x, reg, R_OTHER, 0);
			break;
		case DW_CFA_val_offset:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_uleb128(&p, end, &u))
				return false;
			set_rule(x, reg, R_OTHER, 0);
			break;
		case DW_CFA_val_offset_sf:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_sleb128(&p, end, &s))
				return false;
			set_rule(x, reg, R_OTHER, 0);
			break;
		case DW_CFA_remember_state:
			if (x->depth == MAX_REMEMBER)
				return false;
			x->stack[x->depth++] = x->s;
			break;
		case DW_CFA_restore_state: {
			if (x->depth == 0)
				return false;
			/* the CFA is part of the remembered state (as libdw
			 * and GCC's unwinder treat it) */
			x->s = x->stack[--x->depth];
			break;
		}
		case DW_CFA_def_cfa:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_uleb128(&p, end, &u))
				return false;
			x->s.cfa_reg = reg;
			x->s.cfa_off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_sf:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_sleb128(&p, end, &s))
				return false;
			x->s.cfa_reg = reg;
			x->s.cfa_off = s * daf;
			break;
		case DW_CFA_def_cfa_register:
			if (!cpa_uleb128(&p, end, &reg))
				return false;
			x->s.cfa_reg = reg;
			break;
		case DW_CFA_def_cfa_offset:
			if (!cpa_uleb128(&p, end, &u))
				return false;
			x->s.cfa_off = (int64_t)u;
			break;
		case DW_CFA_def_cfa_offset_sf:
			if (!cpa_sleb128(&p, end, &s))
				return false;
			x->s.cfa_off = s * daf;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (!cpa_uleb128(&p, end, &reg) || !cpa_uleb128(&p, end, &u2) ||
			    u2 > (uint64_t)(end - p))
				return false;
			if (tracked(&x->s, reg, x->cie->ra_reg))
				return false;	/* libdw reads the expression */
			p += u2;
			break;
		case DW_CFA_GNU_args_size:
			if (!cpa_uleb128(&p, end, &u))
				return false;
			break;
		default:
			/* DW_CFA_def_cfa_expression, DW_CFA_set_loc, vendor
			 * opcodes: libdw's job */
			return false;
		}
	}
	return true;
}

int cfi_exec_fde(const struct cfi_cie *cie, const uint8_t *insns,
		 const uint8_t *end, uint64_t lo, uint64_t hi, cfi_emit_fn emit,
		 void *arg)
{
	static __thread struct exec x;	/* 40 KB: off the stack */
	memset(&x.s, 0, sizeof(x.s));
	x.cie = cie;
	x.depth = 0;
	x.n = 0;
	x.loc = lo;
	x.hi = hi;
	x.s.cfa_reg = REG_RSP;
	x.s.cfa_off = 8;
	x.in_cie = true;
	if (!run(&x, cie->insns, cie->insns_end))
		return -1;
	x.init = x.s;
	x.in_cie = false;
	if (!run(&x, insns, end) || !add_row(&x))
		return -1;
	for (unsigned i = 0; i < x.n; i++)
		emit(arg, x.rows[i].pc, &x.rows[i].row);
	return 0;
}
