/* SPDX-License-Identifier: MIT */
/*
 * What bpf/capture.bpf.c shares with its loader, cpa-capture: the layout of
 * the events it writes to the BPF ring buffer and the indexes of its
 * counters. Both sides include this file; it uses only the kernel's __u*
 * types so it compiles against vmlinux.h and against <linux/types.h>.
 */
#ifndef CPA_BPF_CAPTURE_H
#define CPA_BPF_CAPTURE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#include "pyframes.h"

#define CAPTURE_MAX_FRAMES 127		/* = CPA_MAX_FRAMES */
#define CAPTURE_MAX_STACK (64 * 1024)	/* = CPA_MAX_STACK_BYTES */
#define CAPTURE_COMM_LEN 16
#define CAPTURE_NREGS 3			/* ip, sp, bp (frame pointer) */
#define CAPTURE_PAGE 4096

/*
 * Scratch slots per CPU. A sample is assembled in an array map entry
 * (it is far larger than the 512-byte BPF stack) and then copied to the
 * ring buffer with its real length. A timer sample can interrupt a probe
 * or scheduler program on the same CPU, so each context has its own slot.
 */
enum capture_slot {
	SLOT_TIMER = 0,
	SLOT_SCHED = 1,
	SLOT_PROBE = 2,
	SLOT_COUNT
};

/* Event kinds: the same numbers as enum cpa_kind in lib/format/stream.h. */
enum capture_kind {
	CAPTURE_KIND_ONCPU = 0,
	CAPTURE_KIND_OFFCPU_BLOCKED = 1,
	CAPTURE_KIND_SCHED_PREEMPTED = 2,
	CAPTURE_KIND_SCHED_YIELDED = 3,
	CAPTURE_KIND_SCHED_DELAY = 4,
	CAPTURE_KIND_IRQOFF = 5,
	CAPTURE_KIND_PROBE = 6,
	CAPTURE_KIND_MEM_VIRT = 7,
	CAPTURE_KIND_MEM_PHYS = 8,
	CAPTURE_KIND_MEM_USAGE = 9,
	CAPTURE_KIND_HEAP_ALLOC = 10,
	CAPTURE_KIND_HEAP_INUSE = 11,
};

/* Flags: the same bits as CPA_RAW_* in lib/format/stream.h. */
#define CAPTURE_F_USER_TRUNCATED 0x0001
#define CAPTURE_F_KSTACK_FAILED 0x0002
#define CAPTURE_F_USTACK_FAILED 0x0004
#define CAPTURE_F_SNAPSHOT_FAILED 0x0008
#define CAPTURE_F_IN_KERNEL 0x0010
#define CAPTURE_F_FREE 0x0040		/* weight freed, not allocated */
#define CAPTURE_F_ESTIMATE 0x0080	/* weight scaled up from sampling */
#define CAPTURE_F_ALLOC_ID 0x0100	/* alloc_id is set */

/* Drop counters, per CPU: the same numbers as enum cpa_lost_reason. */
enum capture_drop {
	DROP_RINGBUF = 1,	/* ring buffer full */
	DROP_STACK_COPY = 2,	/* user stack snapshot could not be copied */
	DROP_PROBE_RATE = 3,	/* probe hit over --probe-rate */
	DROP_STATE_FULL = 4,	/* off-CPU task or --mem usage page table full */
	DROP_COUNT = 8
};

/* One sample as written to the ring buffer: this fixed part, then
 * stack_len bytes of user stack copied from regs[1] (the user SP). */
struct capture_event {
	__u64 mono_ns;		/* bpf_ktime_get_ns(); the loader adds the
				 * CLOCK_REALTIME offset */
	__u64 cgroup_id;	/* cgroup v2 id */
	__u64 weight;
	__u32 pid, tid, cpu;
	__u16 kind, flags;
	char comm[CAPTURE_COMM_LEN];
	char pcomm[CAPTURE_COMM_LEN];
	__u16 n_kernel, n_user, n_regs, pad;
	__u32 stack_len;
	__u32 pad2;
	__u64 alloc_id;		/* with CAPTURE_F_ALLOC_ID: the allocation
				 * a usage-like sample adds or frees */
	__u64 regs[CAPTURE_NREGS];
	__u64 kernel_ips[CAPTURE_MAX_FRAMES];
	__u64 user_ips[CAPTURE_MAX_FRAMES];
	struct capture_py_frames py;	/* Python processes only */
	/* followed by stack_len bytes of stack */
};

/* Slack after the stack so that page-sized copies need only a mask to
 * satisfy the verifier. */
#define CAPTURE_STACK_SLACK (2 * CAPTURE_PAGE)

struct capture_scratch {
	struct capture_event ev;
	__u8 stack[CAPTURE_MAX_STACK + CAPTURE_STACK_SLACK];
	__u64 py_buf[CAPTURE_PY_READ / 8];	/* a Python frame, read */
};

/*
 * A process whose code keeps frame pointers (cpa-capture/fpframes.c):
 * the executable mappings of its frame-pointer code. A sample whose ip
 * lies in one of them takes the kernel's frame-pointer chain and no
 * stack snapshot; an unused range is 0, 0.
 */
#define CAPTURE_FP_RANGES 4

#define CAPTURE_FP_ROOTS 2

struct capture_fp_proc {
	__u64 start[CAPTURE_FP_RANGES];
	__u64 end[CAPTURE_FP_RANGES];
	/* Return addresses into the roots of its libc, without frame
	 * pointers, that call frame-pointer code: into start_thread and
	 * __libc_start_call_main. An FP chain may end at one; any other
	 * return address outside the ranges means the chain went through
	 * code without frame pointers (a libc qsort calling a comparator),
	 * which may have hidden its caller, and the snapshot is taken. 0 is
	 * none. */
	__u64 root[CAPTURE_FP_ROOTS];
	/* samples that still take the snapshot, so that cpa-unwind learns
	 * what lies beyond the FP chain's root (cpa-unwind/roottail.c) */
	__u32 learn;
	__u32 pad;
};
#define CAPTURE_FP_LEARN 8

/* Key of the --comm filter map: a NUL-padded name. */
struct capture_comm {
	char comm[CAPTURE_COMM_LEN];
};

/* Phases of an off-CPU interval, kept per task between switch-out and
 * switch-in. */
enum offcpu_phase {
	PHASE_NONE = 0,
	PHASE_BLOCKED = 1,	/* switched out asleep, waiting for wakeup */
	PHASE_PREEMPTED = 2,	/* switched out runnable, involuntarily */
	PHASE_YIELDED = 3,	/* switched out runnable, voluntarily */
	PHASE_WOKEN = 4,	/* woken, waiting on the runqueue */
};

/* Bits of the off-CPU kinds the loader asks for. */
#define OFFCPU_WANT_BLOCKED (1u << CAPTURE_KIND_OFFCPU_BLOCKED)
#define OFFCPU_WANT_PREEMPTED (1u << CAPTURE_KIND_SCHED_PREEMPTED)
#define OFFCPU_WANT_YIELDED (1u << CAPTURE_KIND_SCHED_YIELDED)
#define OFFCPU_WANT_DELAY (1u << CAPTURE_KIND_SCHED_DELAY)

/* --offcpu-stack-size up to this many bytes is kept in the task's
 * off-CPU state itself: enough for the frames of libc's blocking wrappers
 * (at most 256 bytes from sp to the caller's return address in Debian 12's
 * glibc, pthread_cond_wait the deepest) and the frame of their caller, so
 * cpa-unwind can unwind them by CFI and continue with the frame-pointer
 * chain. */
#define OFFCPU_INLINE_STACK 1024
#define OFFCPU_DEFAULT_STACK 512

/* Per task off-CPU state: the stacks taken at switch-out wait here until
 * the interval ends. The loader reads the table at stop to flush the
 * intervals still open. */
struct offcpu_state {
	__u64 start_ns;		/* start of the current phase */
	__u32 cpu;		/* CPU the task left */
	__u32 pid;		/* thread group id */
	__u8 phase;		/* enum offcpu_phase */
	__u8 pad;
	__u16 flags;
	__u16 n_kernel, n_user;
	__u64 cgroup_id;
	char comm[CAPTURE_COMM_LEN];
	char pcomm[CAPTURE_COMM_LEN];
	__u64 kernel_ips[CAPTURE_MAX_FRAMES];
	__u64 user_ips[CAPTURE_MAX_FRAMES];
	struct capture_py_frames py;
	/* user registers and stack copy for a small --offcpu-stack-size */
	__u64 regs[CAPTURE_NREGS];
	__u16 n_regs;
	__u16 stack_len;
	__u32 pad2;
	__u8 stack[OFFCPU_INLINE_STACK];
};

/* A larger --offcpu-stack-size: user registers and a stack copy taken at
 * switch-out, kept per task in a table of its own (used only when asked
 * for) until the interval ends. */
#define OFFCPU_MAX_STACK (16 * 1024)

struct offcpu_snap {
	__u64 regs[CAPTURE_NREGS];
	__u32 stack_len;
	__u16 flags;
	__u16 pad;
	__u8 stack[OFFCPU_MAX_STACK + CAPTURE_STACK_SLACK];
};

/* Per CPU state of the timer and probe programs. */
struct cpu_state {
	__u64 last_tick_ns;	/* previous timer sample, for IRQ-off gaps */
	__u64 idle_ns;		/* last switch to the idle task */
	__u64 rate_window_ns;	/* start of the current --probe-rate second */
	__u32 rate_count;
	__u32 pad;
};

#endif
