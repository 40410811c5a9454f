// SPDX-License-Identifier: MIT
/* Per-frame DWARF CFI stepping over a stack snapshot. */
#include <string.h>

#include "jvmwalk.h"
#include "walk.h"

static const char *const end_names[WALK_END_COUNT] = {
	[WALK_OUTERMOST] = "outermost",
	[WALK_RA_ZERO] = "ra-zero",
	[WALK_TRUNCATED] = "truncated",
	[WALK_NO_SNAPSHOT] = "no-snapshot",
	[WALK_NO_MAPPING] = "no-mapping",
	[WALK_NO_CFI] = "no-cfi",
	[WALK_UNSUPPORTED] = "unsupported-rule",
	[WALK_BAD_STACK] = "bad-stack",
	[WALK_NO_PROGRESS] = "no-progress",
	[WALK_DEPTH] = "depth",
	[WALK_SPLICED] = "spliced",
};

const char *walk_end_name(unsigned end)
{
	return end < WALK_END_COUNT ? end_names[end] : "unknown";
}

/* The CFI row for pc in p, or NULL with *why set when there is none. */
static const struct cfi_row *row_for(struct proctab *t, struct proc *p,
				     uint64_t pc, uint8_t *why)
{
	struct mapping *m = proc_find_mapping(p, pc);
	if (!m) {
		*why = WALK_NO_MAPPING;
		return NULL;
	}
	*why = WALK_NO_CFI;
	if (m->kind != MAPPING_FILE && m->kind != MAPPING_VDSO)
		return NULL;
	struct elf_obj *o = proc_mapping_obj(t, p, m);
	uint64_t vaddr;
	if (!o || !elfobj_vaddr(o, pc - m->start + m->pgoff, &vaddr))
		return NULL;
	return cfi_lookup(&o->cfi, vaddr);
}

void walk_dwarf(struct proctab *t, struct proc *p,
		const struct cpa_raw_sample *s, struct walk_result *r)
{
	r->n = 0;
	r->fp_steps = 0;
	r->jvm_steps = 0;
	r->bp_known = false;
	if (s->n_regs <= CPA_REG_BP || s->stack_len < 8 || !s->stack) {
		r->end = WALK_NO_SNAPSHOT;
		if (s->n_regs > CPA_REG_IP && s->regs[CPA_REG_IP]) {
			r->method[r->n] = 0;
			r->ips[r->n++] = s->regs[CPA_REG_IP];
		}
		return;
	}
	struct walk_stack ss = {
		.bytes = s->stack,
		.base = s->regs[CPA_REG_SP],
		.end = s->regs[CPA_REG_SP] + s->stack_len,
		.cut = (s->flags & CPA_RAW_USER_TRUNCATED) != 0,
	};
	if (ss.end < ss.base) {
		r->end = WALK_BAD_STACK;
		return;
	}
	uint64_t ip = s->regs[CPA_REG_IP];
	uint64_t sp = s->regs[CPA_REG_SP];
	uint64_t bp = s->regs[CPA_REG_BP];
	bool bp_known = true;
	bool exact = true;	/* ip is the PC itself, not a return address */
	uint8_t why = WALK_DEPTH;

	while (r->n < WALK_MAX_FRAMES) {
		/* A return address points after the call, possibly past the
		 * end of the caller's function: look up the call itself. */
		uint64_t pc = exact ? ip : ip - 1;
		/* compiled and interpreted Java: the JVM's frame layout */
		if (jvm_in_code(p, pc)) {
			uint64_t orig;
			r->ips[r->n] = ip;
			int rc = jvm_walk_step(p, &ss, exact, &ip, &sp, &bp,
					       &bp_known, &r->method[r->n],
					       &orig, &why);
			if (orig)	/* named as it was before deopt */
				r->ips[r->n] = orig;
			r->n++;
			if (rc < 0)
				break;
			r->jvm_steps++;
			exact = false;
			why = WALK_DEPTH;
			if (ip == 0) {
				why = WALK_RA_ZERO;
				break;
			}
			continue;
		}
		const struct cfi_row *row = row_for(t, p, pc, &why);
		uint64_t cfa, ra;

		/* The sampled PC is always shown; a recovered return address
		 * outside every mapping is garbage, not a frame. */
		if (why == WALK_NO_MAPPING && r->n > 0)
			break;
		r->method[r->n] = 0;
		r->ips[r->n++] = ip;

		if (!row) {
			if (why == WALK_NO_MAPPING || !bp_known ||
			    bp < sp || !walk_read(&ss, bp + 8, &ra, &why))
				break;
			uint64_t next_bp;
			if (!walk_read(&ss, bp, &next_bp, &why))
				break;
			r->fp_steps++;
			sp = bp + 16;
			bp = next_bp;
			exact = false;
			if (ra == 0) {
				why = WALK_RA_ZERO;
				break;
			}
			ip = ra;
			continue;
		}

		switch (row->cfa_rule) {
		case CFI_CFA_SP:
			cfa = sp + (int64_t)row->cfa_off;
			break;
		case CFI_CFA_BP:
			if (!bp_known) {
				why = WALK_UNSUPPORTED;
				goto out;
			}
			cfa = bp + (int64_t)row->cfa_off;
			break;
		case CFI_CFA_DEREF_SP:
			if (!walk_read(&ss, sp + (int64_t)row->cfa_off, &cfa, &why))
				goto out;
			break;
		case CFI_CFA_PLT:
			cfa = sp + (int64_t)row->cfa_off +
			      ((ip & 15) >= (uint64_t)(row->flags >> 4) ? 8 : 0);
			break;
		default:
			why = WALK_UNSUPPORTED;
			goto out;
		}

		switch (row->ra_rule) {
		case CFI_REG_UNDEFINED:
			why = WALK_OUTERMOST;
			goto out;
		case CFI_REG_AT_CFA:
			if (!walk_read(&ss, cfa + (int64_t)row->ra_off, &ra, &why))
				goto out;
			break;
		case CFI_REG_AT_SP:
			if (!walk_read(&ss, sp + (int64_t)row->ra_off, &ra, &why))
				goto out;
			break;
		default:
			why = WALK_UNSUPPORTED;
			goto out;
		}

		switch (row->bp_rule) {
		case CFI_REG_SAME:
			break;
		case CFI_REG_AT_CFA:
			bp_known = walk_read(&ss, cfa + (int64_t)row->bp_off, &bp, &why);
			break;
		case CFI_REG_AT_SP:
			bp_known = walk_read(&ss, sp + (int64_t)row->bp_off, &bp, &why);
			break;
		default:
			bp_known = false;
			break;
		}

		if (ra == 0) {
			why = WALK_RA_ZERO;
			break;
		}
		bool signal = row->flags & CFI_ROW_SIGNAL;
		if (cfa <= sp && !signal) {
			why = WALK_NO_PROGRESS;
			break;
		}
		sp = cfa;
		ip = ra;
		exact = signal;
		why = WALK_DEPTH;
	}
out:
	r->end = why;
	r->bp_known = bp_known;
	r->bp = bp;
}

unsigned walk_fp(const struct cpa_raw_sample *s, uint64_t *ips, unsigned max)
{
	if (max == 0 || s->n_regs <= CPA_REG_BP || !s->regs[CPA_REG_IP])
		return 0;
	struct walk_stack ss = {
		.bytes = s->stack,
		.base = s->regs[CPA_REG_SP],
		.end = s->regs[CPA_REG_SP] + s->stack_len,
	};
	uint64_t bp = s->regs[CPA_REG_BP], next, ra;
	uint8_t why;
	unsigned n = 0;

	ips[n++] = s->regs[CPA_REG_IP];
	/* frames lie at rising addresses: one that does not is no frame,
	 * and the walk cannot loop */
	while (n < max && s->stack && ss.end >= ss.base && bp >= ss.base &&
	       walk_read(&ss, bp, &next, &why) && walk_read(&ss, bp + 8, &ra, &why) && ra) {
		ips[n++] = ra;
		if (next <= bp)
			break;
		bp = next;
	}
	return n;
}
