/* SPDX-License-Identifier: MIT */
/*
 * Unwinding through a JVM's compiled and interpreted frames (x86-64) from
 * the JVM's own frame layout, so that no frame pointer is needed:
 *
 *  - a compiled frame (nmethod, native wrapper, runtime stub) is its
 *    CodeBlob's frame size: the caller's stack pointer is sp + frame
 *    size, the return address and saved rbp the two words below it (as
 *    HotSpot's frame::sender_for_compiled_frame); a sampled PC in the
 *    prologue or the epilogue is placed by the instructions around it;
 *  - an interpreted frame keeps rbp: the return address at fp + 8, the
 *    caller's fp at fp, the caller's (unextended) sp at fp - 8 and the
 *    Method* at fp - 24 (frame::sender_for_interpreter_frame);
 *  - the call stub and other frameless stubs keep rbp too; adapters and
 *    vtable stubs, sampled, have only the return address on the stack.
 *
 * The walker (walk.c) calls it for each PC in the code cache, and takes
 * CFI again for the C++ and C frames around.
 */
#ifndef CPA_UNWIND_JVMWALK_H
#define CPA_UNWIND_JVMWALK_H

#include <stdbool.h>
#include <stdint.h>

#include "proc.h"
#include "walk.h"

/* Whether pc is in p's code cache (known once the layout is read). */
static inline bool jvm_in_code(const struct proc *p, uint64_t pc)
{
	const struct jvm_layout *l = &p->jvm.interp.layout;
	return p->jvm.code && pc >= l->cc_lo && pc < l->cc_hi;
}

/*
 * One frame at *ip (exact: the sampled PC, else a return address) with
 * stack pointer *sp and frame pointer *bp (*bp_known): on success the
 * caller's in their place, *method the Method* of an interpreted frame
 * (else 0), *orig the pc a frame the JVM deoptimized had before its
 * return address was replaced by the deoptimization handler (else 0),
 * and 0 returned; -1 with *why when the frame cannot be unwound.
 */
int jvm_walk_step(struct proc *p, const struct walk_stack *ss, bool exact,
		  uint64_t *ip, uint64_t *sp, uint64_t *bp, bool *bp_known,
		  uint64_t *method, uint64_t *orig, uint8_t *why);

#endif
