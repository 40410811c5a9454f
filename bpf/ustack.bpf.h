// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Copies of the user stack for DWARF unwinding in cpa-unwind, shared by
 * every BPF object of cpa-capture.
 */
#ifndef CPA_BPF_USTACK_H
#define CPA_BPF_USTACK_H

#include "ring.bpf.h"

/*
 * Copies up to limit bytes of user stack from sp into dst (a buffer of
 * max + CAPTURE_STACK_SLACK bytes, max a power of two), a page at a time:
 * a read that runs past the top of the stack fails as a whole, so copying
 * page by page keeps everything up to the last mapped page. Returns the
 * bytes copied.
 */
static __always_inline __u32 copy_stack_pages(__u8 *dst, __u32 max, __u64 sp,
					      __u32 limit)
{
	__u32 copied = 0, want;

	want = CAPTURE_PAGE - (sp & (CAPTURE_PAGE - 1));
	for (int i = 0; i <= CAPTURE_MAX_STACK / CAPTURE_PAGE; i++) {
		__u32 off, n;

		if (copied >= limit)
			break;
		if (want > limit - copied)
			want = limit - copied;
		/* copied < limit <= max and want <= 4 KiB: the masks change
		 * nothing but let the verifier see the bounds (the barriers
		 * keep clang from dropping them as redundant) */
		barrier_var(copied);
		barrier_var(want);
		off = copied & (max - 1);
		n = want & (2 * CAPTURE_PAGE - 1);
		if (bpf_probe_read_user(dst + off, n, (void *)(sp + copied)))
			break;
		copied += want;
		want = CAPTURE_PAGE;
	}
	return copied;
}

/* Flags for a copy of copied bytes out of limit; a failed copy is
 * counted. */
static __always_inline __u16 copy_flags(__u32 copied, __u32 limit)
{
	if (copied == 0) {
		count_drop(DROP_STACK_COPY);
		return CAPTURE_F_SNAPSHOT_FAILED;
	}
	return copied >= limit ? CAPTURE_F_USER_TRUNCATED : 0;
}

/* The current task's user registers, saved at kernel entry, into
 * regs[CAPTURE_NREGS]; returns sp. */
static __always_inline __u64 save_user_regs(__u64 *regs)
{
	struct pt_regs *r =
		(struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

	regs[0] = PT_REGS_IP_CORE(r);
	regs[1] = PT_REGS_SP_CORE(r);
	regs[2] = PT_REGS_FP_CORE(r);
	return regs[1];
}

/* The user half of a sample whose registers are regs (ip, sp, bp): the
 * frame-pointer chain and, with limit, a copy of limit bytes of stack from
 * sp into buf (max bytes, a power of two, plus CAPTURE_STACK_SLACK). */
static __always_inline void user_stack_sample(void *ctx,
					      struct capture_event *ev,
					      const __u64 *regs, __u8 *buf,
					      __u32 max, __u32 limit)
{
	long n = bpf_get_stack(ctx, ev->user_ips, sizeof(ev->user_ips),
			       BPF_F_USER_STACK);

	if (n < 0) {
		ev->flags |= CAPTURE_F_USTACK_FAILED;
		n = 0;
	}
	ev->n_user = n / 8;
	ev->regs[0] = regs[0];
	ev->regs[1] = regs[1];
	ev->regs[2] = regs[2];
	ev->n_regs = CAPTURE_NREGS;
	if (limit) {
		ev->stack_len = copy_stack_pages(buf, max, regs[1], limit);
		ev->flags |= copy_flags(ev->stack_len, limit);
	}
}

#endif
