/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The Python frame walker, included by capture.bpf.c: at sample time, the
 * sampled thread's chain of CPython frames, code object and instruction
 * offset each, from the interpreter state cpa-capture found for the
 * process (cpa-capture/python.c). A process that is not Python costs one
 * hash lookup by tgid.
 *
 * Versions differ only in the offsets and a few flags of that state
 * (lib/runtime/pyoffsets.c), never in which code runs. The thread's state is
 * found by its kernel tid (or, before 3.11, by its pthread_t, the TLS
 * base), not by who holds the GIL, so a thread that
 * released it is found too; the last match per thread is cached and
 * checked again on each use. Every read is of user memory and may fail:
 * the walk then stops, and the sample says so (CAPTURE_PY_BROKEN).
 */
#ifndef CPA_BPF_PYWALK_H
#define CPA_BPF_PYWALK_H

#include "pyframes.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct capture_py_proc);
	__uint(max_entries, 4096);
} py_procs SEC(".maps");

/* tid -> address of its PyThreadState, as last found */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
} py_threads SEC(".maps");

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* What a thread state at ts says its thread is. */
static __always_inline __u64 py_tstate_tid(const struct capture_py_proc *pp,
					   __u64 ts)
{
	return py_read_ptr(ts + pp->tstate_tid);
}

static __always_inline __u64 py_thread_key(const struct capture_py_proc *pp,
					   struct task_struct *task, __u32 tid)
{
#if defined(__TARGET_ARCH_x86)
	if (pp->tid_kind == PY_TID_PTHREAD)
		return BPF_CORE_READ(task, thread.fsbase);
#endif
	return tid;
}

/* The thread state of the sampled thread, 0 when it has none. */
static __always_inline __u64 py_thread_state(const struct capture_py_proc *pp,
					     struct task_struct *task,
					     __u32 tid)
{
	__u64 want = py_thread_key(pp, task, tid);
	__u64 *cached = bpf_map_lookup_elem(&py_threads, &tid);
	__u64 ts;

	if (cached && *cached && py_tstate_tid(pp, *cached) == want)
		return *cached;
	ts = py_read_ptr(pp->interp_head);
	if (!ts)
		return 0;
	ts = py_read_ptr(ts + pp->interp_threads);
	for (int i = 0; i < CAPTURE_PY_THREADS && ts; i++) {
		if (py_tstate_tid(pp, ts) == want) {
			bpf_map_update_elem(&py_threads, &tid, &ts, BPF_ANY);
			return ts;
		}
		ts = py_read_ptr(ts + pp->tstate_next);
	}
	return 0;
}

/* Fields of a frame read into buf (CAPTURE_PY_READ bytes). */
static __always_inline __u64 py_word(const __u64 *buf, __u16 off)
{
	return buf[(off >> 3) & (CAPTURE_PY_READ / 8 - 1)];
}

static __always_inline __u8 py_byte(const __u64 *buf, __u16 off)
{
	return ((const __u8 *)buf)[off & (CAPTURE_PY_READ - 1)];
}

/* The byte offset of the frame's current instruction in its code's
 * bytecode. 3.11+: a pointer to the last instruction begun (one unit
 * before the first before the frame starts), into the code object;
 * before: f_lasti, an int index (-1 before the frame starts). */
static __always_inline __u32 py_instr(const struct capture_py_proc *pp,
				      const __u64 *buf, __u64 code)
{
	__u64 w = py_word(buf, pp->frame_instr), off;

	if (pp->instr_index) {
		__s32 lasti = (__s32)w;

		return lasti < 0 ? 0 : (__u32)lasti << (pp->instr_shift & 3);
	}
	off = w - (code + pp->code_bytecode);
	return off > 0x7fffffff ? 0 : (__u32)off;
}

/*
 * Walks the current thread's Python frames into out, leaf first. buf is
 * CAPTURE_PY_READ bytes of per-CPU scratch. Leaves out->n = 0 and
 * out->version = 0 for a process that is not Python. Not inlined, so the
 * verifier checks the loop once per caller, not once per path into it.
 */
static __noinline void py_walk(struct capture_py_frames *out, __u64 *buf,
			       struct task_struct *task, __u32 tgid, __u32 tid)
{
	struct capture_py_proc *pp;
	__u64 frame, ts;
	__u32 len, n;

	if (!out || !buf)
		return;
	out->n = 0;
	out->flags = 0;
	out->version = 0;
	pp = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!pp)
		return;
	out->version = pp->version;
	ts = py_thread_state(pp, task, tid);
	if (!ts)
		return;
	frame = py_read_ptr(ts + pp->tstate_frame);
	if (frame && pp->cframe_frame != CAPTURE_PY_NO_CFRAME)
		frame = py_read_ptr(frame + pp->cframe_frame);
	len = pp->frame_read;
	if (len > CAPTURE_PY_READ || len == 0)
		len = CAPTURE_PY_READ;
	for (n = 0; n < CAPTURE_MAX_PY && frame; n++) {
		__u64 code;
		__u8 entry;

		if (bpf_probe_read_user(buf, len, (void *)frame)) {
			out->flags |= CAPTURE_PY_BROKEN;
			break;
		}
		entry = py_byte(buf, pp->frame_entry);
		/* the eval function's own frame under each entry frame
		 * (3.12+): the frame before it is the entry, the one after
		 * it is read in its place; a second shim in a row, only in
		 * a corrupt chain, is taken as a frame */
		if (pp->shim_owner != 0xff && entry == pp->shim_owner) {
			if (n > 0)
				out->f[(n - 1) & (CAPTURE_MAX_PY - 1)].flags |=
					CAPTURE_PY_FRAME_ENTRY;
			frame = py_word(buf, pp->frame_previous);
			if (!frame)
				break;
			if (bpf_probe_read_user(buf, len, (void *)frame)) {
				out->flags |= CAPTURE_PY_BROKEN;
				break;
			}
			entry = py_byte(buf, pp->frame_entry);
		}
		code = py_word(buf, pp->frame_code);
		out->f[n].code = code;
		out->f[n].instr = py_instr(pp, buf, code);
		/* 3.11's is_entry; every frame an entry before 3.11 */
		out->f[n].flags = (entry & pp->entry_mask) | pp->entry_each;
		frame = py_word(buf, pp->frame_previous);
	}
	if (frame && n >= CAPTURE_MAX_PY)
		out->flags |= CAPTURE_PY_TRUNCATED;
	out->n = n;
}

#endif
