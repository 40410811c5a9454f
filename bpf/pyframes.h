/* SPDX-License-Identifier: MIT */
/*
 * What the Python frame walker (bpf/pywalk.bpf.h) shares with its loader
 * (cpa-capture/python.c): the per-process description of an interpreter
 * the loader writes into the py_procs map, and the frames the walker
 * writes into each sample. Offsets come from lib/runtime/pyoffsets.c.
 */
#ifndef CPA_BPF_PYFRAMES_H
#define CPA_BPF_PYFRAMES_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define CAPTURE_MAX_PY 64		/* = CPA_MAX_PY_FRAMES */
#define CAPTURE_PY_THREADS 64		/* thread states searched per miss */
#define CAPTURE_PY_READ 128		/* most bytes of a frame read at once */
#define CAPTURE_PY_NO_CFRAME 0xffff

/* the same bits as CPA_PY_* and CPA_PY_FRAME_ENTRY in lib/format/stream.h */
#define CAPTURE_PY_TRUNCATED 0x1
#define CAPTURE_PY_BROKEN 0x2
#define CAPTURE_PY_FRAME_ENTRY 0x1

/* How a thread state names its thread. */
enum py_tid_kind {
	PY_TID_NATIVE = 0,	/* native_thread_id: the kernel's tid (3.11+) */
	PY_TID_PTHREAD = 1,	/* thread_id: pthread_self(), the TLS base */
};

/* One Python process: where its thread states are and how to read its
 * frames. Keyed by tgid in py_procs. */
struct capture_py_proc {
	__u64 interp_head;	/* address of _PyRuntime.interpreters.head */
	__u16 version;		/* major << 8 | minor */
	__u16 interp_threads;	/* PyInterpreterState: threads.head */
	__u16 tstate_next;	/* PyThreadState: next */
	__u16 tstate_tid;	/* PyThreadState: native_thread_id or thread_id */
	__u16 tstate_frame;	/* PyThreadState: cframe, current_frame or frame */
	__u16 cframe_frame;	/* _PyCFrame: current_frame, or CAPTURE_PY_NO_CFRAME */
	__u16 frame_code;	/* frame: its code object */
	__u16 frame_previous;	/* frame: the caller's frame */
	__u16 frame_instr;	/* frame: prev_instr, instr_ptr or f_lasti */
	__u16 frame_entry;	/* frame: is_entry or owner */
	__u16 frame_read;	/* bytes of a frame read, at most CAPTURE_PY_READ */
	__u16 code_bytecode;	/* code object: co_code_adaptive */
	__u8 tid_kind;
	__u8 entry_mask;	/* frame_entry's byte & this: an entry frame */
	__u8 entry_each;	/* 1: every frame is an entry (before 3.11) */
	__u8 instr_index;	/* 1: frame_instr is f_lasti, an int index */
	__u8 instr_shift;	/* f_lasti << this: a byte offset */
	/* frame_entry's byte equal to this: the eval function's own shim
	 * frame (3.12+), skipped, the frame before it an entry; 0xff none */
	__u8 shim_owner;
	__u8 pad[4];
};

struct capture_py_frame {
	__u64 code;
	__u32 instr;
	__u32 flags;
};

/* The walk of one sample. */
struct capture_py_frames {
	__u16 version, n;
	__u32 flags;
	struct capture_py_frame f[CAPTURE_MAX_PY];
};

#endif
