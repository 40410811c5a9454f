// SPDX-License-Identifier: MIT
/* Stepping through JVM frames by the JVM's frame layout (jvmwalk.h). */
#include <string.h>
#include <unistd.h>

#include "jvmcode.h"
#include "jvmwalk.h"

/* x86-64 interpreter frame slots, in bytes from its fp (frame_x86.hpp) */
#define INTERP_SENDER_SP (-8)
#define INTERP_METHOD (-24)
#define MAX_FRAME (1u << 20)	/* a frame larger than this is no frame */
#define PROLOGUE_MAX 192	/* prologue bytes looked at */
#define EPILOGUE_BYTES 24

/* A return address that may be one: code of the JVM, or of a mapping. */
static bool plausible(const struct proc *p, uint64_t ra)
{
	return ra && (jvm_in_code(p, ra) || proc_find_mapping(p, ra - 1));
}

static bool is_sub_rsp(const uint8_t *c, unsigned i, unsigned n,
		       unsigned *end)
{
	if (i + 4 <= n && c[i] == 0x48 && c[i + 1] == 0x83 && c[i + 2] == 0xec) {
		*end = i + 4;
		return true;
	}
	if (i + 7 <= n && c[i] == 0x48 && c[i + 1] == 0x81 && c[i + 2] == 0xec) {
		*end = i + 7;
		return true;
	}
	return false;
}

/*
 * Where the prologue of a compiled method saves rbp and allocates its
 * frame, from its code up to the frame-complete offset. C1, C2 and the
 * native wrappers emit, after the stack bang, "push rbp; [mov rbp, rsp;]
 * sub rsp, N", or without a bang "sub rsp, N; mov [rsp+N], rbp".
 */
static void read_prologue(struct proc *p, struct jvm_blob *b)
{
	uint8_t c[PROLOGUE_MAX];
	unsigned n = b->frame_complete > 0 ? (unsigned)b->frame_complete : 0, end;
	b->have_prologue = true;
	b->pro = (struct jvm_prologue){ -1, -1, -1 };
	if (n > PROLOGUE_MAX)
		n = PROLOGUE_MAX;
	if (!n || pread(jvm_memfd(p), c, n, (off_t)b->code_begin) != (ssize_t)n)
		return;
	for (unsigned i = 0; i + 1 < n; i++) {
		unsigned j = i + 1;
		if (c[i] != 0x55)
			continue;
		if (j + 3 <= n && c[j] == 0x48 &&
		    ((c[j + 1] == 0x89 && c[j + 2] == 0xe5) ||
		     (c[j + 1] == 0x8b && c[j + 2] == 0xec)))
			j += 3;		/* mov rbp, rsp */
		if (is_sub_rsp(c, j, n, &end)) {
			b->pro.push_end = (int16_t)(i + 1);
			b->pro.sub_end = (int16_t)end;
			return;
		}
	}
	for (unsigned i = 0; i < n; i++)
		if (is_sub_rsp(c, i, n, &end)) {
			b->pro.sub_end = (int16_t)end;
			/* mov [rsp+disp8], rbp */
			if (end + 5 <= n && c[end] == 0x48 && c[end + 1] == 0x89 &&
			    c[end + 2] == 0x6c && c[end + 3] == 0x24)
				b->pro.save_end = (int16_t)(end + 5);
			return;
		}
}

/*
 * Whether the sampled pc is in an epilogue: from pc to the ret, only
 * "add rsp, N", "pop rbp" and the return's safepoint poll ("cmp rsp,
 * [r15+N]; ja", or "test eax, [r10]"). Then *ra_at is where the return
 * address is, and *bp_at where rbp was saved (0: popped already).
 */
static bool in_epilogue(struct proc *p, uint64_t pc, uint64_t sp,
			uint64_t *ra_at, uint64_t *bp_at)
{
	uint8_t c[EPILOGUE_BYTES];
	uint64_t at = sp;
	unsigned i = 0;
	*bp_at = 0;
	if (pread(jvm_memfd(p), c, sizeof(c), (off_t)pc) != (ssize_t)sizeof(c))
		return false;
	while (i < sizeof(c)) {
		if (c[i] == 0xc3) {
			*ra_at = at;
			return true;
		}
		if (c[i] == 0x5d) {		/* pop rbp */
			*bp_at = at;
			at += 8;
			i += 1;
		} else if (i + 4 <= sizeof(c) && c[i] == 0x48 &&
			   c[i + 1] == 0x83 && c[i + 2] == 0xc4) {
			at += c[i + 3];		/* add rsp, imm8 */
			i += 4;
		} else if (i + 7 <= sizeof(c) && c[i] == 0x48 &&
			   c[i + 1] == 0x81 && c[i + 2] == 0xc4) {
			uint32_t imm;
			memcpy(&imm, c + i + 3, 4);
			if (imm > MAX_FRAME)
				return false;
			at += imm;
			i += 7;
		} else if (i + 4 <= sizeof(c) && c[i] == 0x49 &&
			   c[i + 1] == 0x3b && c[i + 2] == 0x67) {
			i += 4;			/* cmp rsp, [r15+disp8] */
		} else if (i + 7 <= sizeof(c) && c[i] == 0x49 &&
			   c[i + 1] == 0x3b && c[i + 2] == 0xa7) {
			i += 7;			/* cmp rsp, [r15+disp32] */
		} else if (i + 6 <= sizeof(c) && c[i] == 0x0f &&
			   c[i + 1] == 0x87) {
			i += 6;			/* ja rel32 */
		} else if (i + 2 <= sizeof(c) && c[i] == 0x77) {
			i += 2;			/* ja rel8 */
		} else if (i + 3 <= sizeof(c) && c[i] == 0x41 &&
			   c[i + 1] == 0x85 && c[i + 2] == 0x02) {
			i += 3;			/* test eax, [r10] */
		} else {
			return false;
		}
	}
	return false;
}

/* The return address at ra_at and the saved rbp at bp_at (0: rbp holds
 * it still); the caller's sp just above the return address. */
static int pop_frame(const struct proc *p, const struct walk_stack *ss,
		     uint64_t ra_at, uint64_t bp_at, uint64_t *ip,
		     uint64_t *sp, uint64_t *bp, bool *bp_known, uint8_t *why)
{
	uint64_t ra, nbp = *bp;
	if (ra_at < *sp || !walk_read(ss, ra_at, &ra, why) ||
	    (bp_at && !walk_read(ss, bp_at, &nbp, why)))
		return -1;
	if (!plausible(p, ra)) {
		*why = WALK_BAD_STACK;
		return -1;
	}
	*ip = ra;
	*sp = ra_at + 8;
	if (bp_at) {
		*bp = nbp;
		*bp_known = true;
	}
	return 0;
}

/* A frame kept by rbp: call stub, interpreter-like stubs. */
static int fp_frame(const struct proc *p, const struct walk_stack *ss,
		    uint64_t *ip, uint64_t *sp, uint64_t *bp, bool *bp_known,
		    uint8_t *why)
{
	if (!*bp_known || *bp < *sp || *bp - *sp > MAX_FRAME) {
		*why = WALK_NO_CFI;
		return -1;
	}
	return pop_frame(p, ss, *bp + 8, *bp, ip, sp, bp, bp_known, why);
}

static int interp_frame(struct proc *p, const struct walk_stack *ss,
			uint64_t *ip, uint64_t *sp, uint64_t *bp,
			bool *bp_known, uint64_t *method, uint8_t *why)
{
	uint64_t fp = *bp, ra, next, sender, m;
	if (!*bp_known || fp < *sp || fp - *sp > MAX_FRAME) {
		*why = WALK_NO_CFI;
		return -1;
	}
	if (!walk_read(ss, fp + 8, &ra, why) || !walk_read(ss, fp, &next, why) ||
	    !walk_read(ss, fp + INTERP_SENDER_SP, &sender, why) ||
	    !walk_read(ss, fp + INTERP_METHOD, &m, why))
		return -1;
	/* the sender's sp is at or above this frame's end; a frame not set
	 * up yet (a method's entry) fails this */
	if (!plausible(p, ra) || !m || sender < fp + 16 ||
	    sender - fp > MAX_FRAME || next <= fp) {
		*why = WALK_BAD_STACK;
		return -1;
	}
	*method = m;
	*ip = ra;
	*sp = sender;
	*bp = next;
	*bp_known = true;
	return 0;
}

/* A compiled method, native wrapper or stub with a frame of its own. */
static int sized_frame(struct proc *p, const struct walk_stack *ss,
		       struct jvm_blob *b, bool exact, uint64_t *ip,
		       uint64_t *sp, uint64_t *bp, bool *bp_known, uint8_t *why)
{
	uint64_t s = *sp, full = s + b->frame_size;
	if (exact && (b->kind == JVM_BLOB_NMETHOD || b->kind == JVM_BLOB_NATIVE) &&
	    b->frame_complete > 0 &&
	    *ip < b->code_begin + (uint64_t)b->frame_complete) {
		if (!b->have_prologue)
			read_prologue(p, b);
		int64_t off = (int64_t)(*ip - b->code_begin);
		const struct jvm_prologue *pr = &b->pro;
		if (pr->push_end >= 0) {
			if (off < pr->push_end)		/* before push rbp */
				return pop_frame(p, ss, s, 0, ip, sp, bp,
						 bp_known, why);
			if (off < pr->sub_end)		/* rbp pushed */
				return pop_frame(p, ss, s + 8, s, ip, sp, bp,
						 bp_known, why);
		} else if (pr->sub_end >= 0) {
			if (off < pr->sub_end)	/* before sub rsp */
				return pop_frame(p, ss, s, 0, ip, sp, bp,
						 bp_known, why);
			if (pr->save_end >= 0 && off < pr->save_end)
				return pop_frame(p, ss, full - 8, 0, ip, sp,
						 bp, bp_known, why);
		} else {
			/* a prologue not understood: the return address
			 * where the call left it, if it is one */
			uint64_t ra;
			if (walk_read(ss, s, &ra, why) && plausible(p, ra))
				return pop_frame(p, ss, s, 0, ip, sp, bp,
						 bp_known, why);
		}
	} else if (exact) {
		uint64_t ra_at, bp_at;
		if (in_epilogue(p, *ip, s, &ra_at, &bp_at))
			return pop_frame(p, ss, ra_at, bp_at, ip, sp, bp,
					 bp_known, why);
	}
	if (b->frame_size < 16) {
		*why = WALK_NO_CFI;
		return -1;
	}
	return pop_frame(p, ss, full - 8, full - 16, ip, sp, bp, bp_known,
			 why);
}

int jvm_walk_step(struct proc *p, const struct walk_stack *ss, bool exact,
		  uint64_t *ip, uint64_t *sp, uint64_t *bp, bool *bp_known,
		  uint64_t *method, uint64_t *orig, uint8_t *why)
{
	uint64_t pc = exact ? *ip : *ip - 1, ra;
	int memfd = jvm_memfd(p);
	struct jvm_blob *b = (struct jvm_blob *)jvm_blob_at(
		p->jvm.code, &p->jvm.interp.layout, memfd, pc, p->jvm.now_ns);
	*method = 0;
	*orig = 0;
	if (!b) {
		*why = WALK_NO_CFI;
		return -1;
	}
	/* a frame the JVM deoptimized returns into its handler; the pc it
	 * had is kept in the frame (nmethod::orig_pc_addr), and names it */
	uint64_t o;
	uint8_t w;
	if (!exact && b->deopt && *ip == b->deopt &&
	    walk_read(ss, *sp + (int64_t)b->orig_pc, &o, &w) &&
	    o > b->code_begin && o < b->code_end)
		*orig = o;
	switch (b->kind) {
	case JVM_BLOB_INTERP:
		return interp_frame(p, ss, ip, sp, bp, bp_known, method, why);
	case JVM_BLOB_PC_ONLY:
		if (!exact)
			return fp_frame(p, ss, ip, sp, bp, bp_known, why);
		return pop_frame(p, ss, *sp, 0, ip, sp, bp, bp_known, why);
	case JVM_BLOB_STUB:
		if (b->frame_size)
			break;
		/* frameless stubs: the call stub and others set up rbp;
		 * sampled in a leaf routine, only the return address */
		if (exact && !(*bp_known && *bp >= *sp && *bp - *sp < 4096 &&
			       walk_read(ss, *bp + 8, &ra, why) &&
			       plausible(p, ra)))
			return pop_frame(p, ss, *sp, 0, ip, sp, bp, bp_known,
					 why);
		return fp_frame(p, ss, ip, sp, bp, bp_known, why);
	default:
		break;
	}
	return sized_frame(p, ss, b, exact, ip, sp, bp, bp_known, why);
}
