// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cpa-capture's BPF side: every sample source writes the same event
 * (struct capture_event in capture.h) to one ring buffer.
 *
 *   on_cpu         perf_event: timer (cpu-clock) or cycles sample per CPU
 *   irqoff_switch  raw_tp: marks idle periods for the IRQ-off gap check
 *   sched_switch   raw_tp: off-CPU intervals start at switch-out, end at
 *   sched_wakeup   switch-in; a wakeup splits blocked time from the
 *                  scheduling delay that follows it
 *   sched_exit     raw_tp: frees the task's off-CPU state
 *   probe_tp       tracepoint probes (--probe tracepoint:G:N)
 *   probe_regs     kprobe, uprobe and uretprobe probes
 *
 * Filters (--pid, --tid, --comm, --cgroup, --cpu) are applied here, before
 * any stack is walked, so unselected tasks cost one map lookup.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "capture.h"
#include "filter.bpf.h"
#include "ring.bpf.h"
#include "ustack.bpf.h"
#include "pywalk.bpf.h"

#define PF_EXITING 0x00000004
#define TASK_RUNNING 0

/* Set by the loader before load; the verifier sees them as constants, so
 * disabled features cost nothing. */
const volatile __u32 stack_size = 0;	/* user stack snapshot bytes, 0: none */
const volatile bool snapshot_auto = true;	/* FP chain alone in fp_procs */
const volatile bool user_stacks = true;	/* FP chain, registers, snapshot */
const volatile bool include_idle = false;
const volatile __u64 irqoff_gap_ns = 0;	/* 0: IRQ-off detection off */
const volatile __u32 offcpu_want = 0;	/* OFFCPU_WANT_* bits */
const volatile __u64 offcpu_min_ns = 0;
const volatile __u32 offcpu_stack_size = 0;	/* 0: no off-CPU snapshot */
const volatile __u32 probe_rate = 0;	/* hits per second per CPU, 0: any */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct capture_scratch);
	__uint(max_entries, 1);		/* CPUs * SLOT_COUNT, set by the loader */
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct cpu_state);
	__uint(max_entries, 1);
} cpu_states SEC(".maps");

/* Off-CPU state per thread, allocated on first switch-out and freed at
 * exit; a full table is counted as DROP_STATE_FULL. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_state);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} offcpu SEC(".maps");

/* Off-CPU snapshots per thread, only with --offcpu-stack-size (the
 * loader shrinks the table to one entry otherwise). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_snap);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} offcpu_snaps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct offcpu_snap);
	__uint(max_entries, 1);
} offcpu_snap_zero SEC(".maps");

/* A zeroed state to insert from: the value is too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct offcpu_state);
	__uint(max_entries, 1);
} offcpu_zero SEC(".maps");

/* The mapping each thread's sp was last found in: a thread's stack does
 * not move, and bpf_find_vma, which takes the mm's lock and, from the
 * timer's interrupt, queues an irq_work to drop it, cost more than a
 * quarter of a sample. An sp outside the remembered range (an exec, a
 * main stack grown down, a signal or coroutine stack) looks it up again. */
struct stack_vma {
	__u64 start, end;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);		/* tid */
	__type(value, struct stack_vma);
	__uint(max_entries, 16384);
} stack_vmas SEC(".maps");

/* Processes whose code keeps frame pointers, by tgid, kept by
 * cpa-capture (fpframes.c) from their mappings. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct capture_fp_proc);
	__uint(max_entries, 4096);
} fp_procs SEC(".maps");

/*
 * The process's frame-pointer code when the FP chain alone may be the
 * whole user stack, else NULL: ip lies in code that keeps frame
 * pointers, and the word at sp is no return address into that code.
 * Where it is, or is a return into one of its roots, ip is in a function
 * that has not set up its frame (a frameless leaf, or the entry before
 * push %rbp), and the FP chain would skip that function's caller: the
 * snapshot is taken, and cpa-unwind
 * walks it by CFI. A code pointer that is only a local costs a snapshot,
 * never a frame. A process's first samples take the snapshot too
 * (fp->learn). walk_fp_chain has the last word, frame by frame.
 */
static __always_inline struct capture_fp_proc *fp_chain_code(__u32 pid,
							     __u64 ip,
							     __u64 sp)
{
	struct capture_fp_proc *fp = bpf_map_lookup_elem(&fp_procs, &pid);
	bool in_ip = false, in_top = false;
	__u64 top = 0;

	if (!fp)
		return NULL;
	if (fp->learn) {	/* racy between CPUs: a sample more or less */
		fp->learn--;
		return NULL;
	}
	if (bpf_probe_read_user(&top, sizeof(top), (void *)sp))
		return NULL;
	for (int i = 0; i < CAPTURE_FP_RANGES; i++) {
		in_ip |= fp->start[i] <= ip && ip < fp->end[i];
		in_top |= fp->start[i] <= top && top < fp->end[i];
	}
	in_top |= top == fp->root[0] || top == fp->root[1];
	return in_ip && !in_top ? fp : NULL;
}

static __always_inline struct capture_scratch *scratch_slot(__u32 cpu,
							      __u32 slot)
{
	__u32 key = cpu * SLOT_COUNT + slot;

	return bpf_map_lookup_elem(&scratch, &key);
}

/* Registers at the moment of a sample, read by the program from its
 * context (a perf event or a kprobe/uprobe's pt_regs). */
struct sample_regs {
	__u64 ip, sp, bp;
	bool user_mode;
};

#if defined(__TARGET_ARCH_x86)
/* cs is word 17 of the uapi pt_regs; a perf_event context accepts only
 * 8-byte loads there, so read the whole word (volatile keeps clang from
 * narrowing the load). */
#define REGS_USER_MODE(r) ((((const volatile __u64 *)(r))[17] & 3) == 3)
#elif defined(__TARGET_ARCH_arm64)
#define REGS_USER_MODE(r) (((r)->pstate & 0xf) == 0)
#else
#error "unsupported architecture"
#endif

static __always_inline void read_regs(struct sample_regs *out,
				      struct pt_regs *r)
{
	out->ip = PT_REGS_IP(r);
	out->sp = PT_REGS_SP(r);
	out->bp = PT_REGS_FP(r);
	out->user_mode = REGS_USER_MODE(r);
}

static long vma_range_of(struct task_struct *task,
			 struct vm_area_struct *vma, void *range)
{
	((struct stack_vma *)range)->start = vma->vm_start;
	((struct stack_vma *)range)->end = vma->vm_end;
	return 0;
}

/* The end of the mapping sp is in, 0 when not found. */
static __always_inline __u64 stack_end_of(struct task_struct *task,
					  __u32 tid, __u64 sp)
{
	struct stack_vma *known = bpf_map_lookup_elem(&stack_vmas, &tid);
	struct stack_vma vma = {};

	if (known && known->start <= sp && sp < known->end)
		return known->end;
	if (bpf_find_vma(task, sp, vma_range_of, &vma, 0))
		return 0;
	bpf_map_update_elem(&stack_vmas, &tid, &vma, BPF_ANY);
	return vma.end;
}

/*
 * Room for the snapshot in a sample's record: --stack-size rounded up to a
 * power of two, for copy_stack_pages' masks, and its slack. The verifier
 * sees stack_size as the constant the loader set, so this is one too.
 */
static __always_inline __u32 snapshot_room(void)
{
	__u32 n = stack_size - 1;

	n |= n >> 1;
	n |= n >> 2;
	n |= n >> 4;
	n |= n >> 8;
	n |= n >> 16;
	return n + 1;
}

/*
 * The snapshot: up to --stack-size bytes from sp, and no further than the
 * end of sp's mapping, where a thread's stack ends just past its first
 * frame; reading on from there would copy bytes that are no stack, or
 * fault. Returns true when the snapshot holds the whole live stack, so
 * that every frame-pointer frame on it is in the snapshot too.
 */
static __always_inline bool copy_user_stack(struct capture_event *ev,
					    struct task_struct *task, __u64 sp)
{
	__u64 end = stack_end_of(task, ev->tid, sp);
	__u32 limit = stack_size, copied;
	bool whole = false;

	if (end > sp && end - sp <= limit) {
		limit = end - sp;
		whole = true;
	}
	copied = copy_stack_pages((__u8 *)(ev + 1), snapshot_room(), sp, limit);
	ev->stack_len = copied;
	/* The stack's end unknown (bpf_find_vma returns -EBUSY while another
	 * holds the mm's lock) or beyond the limit: what was copied may be
	 * short of the stack's top, so it is flagged cut, and the kernel's FP
	 * chain is kept for cpa-unwind to continue with. */
	if (!whole || copied == 0) {
		ev->flags |= copied ? CAPTURE_F_USER_TRUNCATED
				    : copy_flags(0, limit);
		return false;
	}
	if (copied < limit) {	/* a page of the stack not resident */
		ev->flags |= CAPTURE_F_USER_TRUNCATED;
		return false;
	}
	return true;
}

/* Off-CPU samples are put together in the scratch slot, from what
 * switch-out saved, then copied to the ring. */
static __always_inline void submit(struct capture_scratch *s)
{
	__u64 len = s->ev.stack_len;

	if (len > CAPTURE_MAX_STACK)
		len = CAPTURE_MAX_STACK;
	if (bpf_ringbuf_output(&events, s, sizeof(struct capture_event) + len,
			       wakeup_flag()))
		count_drop(DROP_RINGBUF);
}

/*
 * The frame-pointer chain from ip and bp, leaf first, as the kernel's
 * walk (bpf_get_stack with BPF_F_USER_STACK) gives it: ip, then each
 * frame's return address, while frames lie further up the stack. Walked
 * here, 16 bytes a frame, it spares the kernel's walk its word-by-word
 * reads and perf's callchain buffers.
 *
 * Returns the frames when the chain is whole: it ends at one of fp's
 * roots, at a frame pointer or return address of 0 (the outermost
 * frame's, as Go and clone leave them), or with the frames full. Else 0:
 * a return address outside fp's code (the chain went through code
 * without frame pointers, which may have hidden the frame that called
 * into it), or a frame pointer that is no frame (ip at a function's
 * entry, before its frame is set up, under a caller without them).
 */
static __always_inline __u16 walk_fp_chain(__u64 *ips, __u64 ip, __u64 bp,
					   const struct capture_fp_proc *fp)
{
	struct {
		__u64 next, ret;
	} f;
	__u32 n = 1;

	ips[0] = ip;
	for (int i = 1; i < CAPTURE_MAX_FRAMES; i++) {
		bool in_fp = false;

		if (!bp)
			break;
		if ((bp & 7) || bpf_probe_read_user(&f, sizeof(f), (void *)bp))
			return 0;
		if (!f.ret)
			break;
		barrier_var(n);
		if (n >= CAPTURE_MAX_FRAMES)
			break;
		ips[n++] = f.ret;
		for (int r = 0; r < CAPTURE_FP_RANGES; r++)
			in_fp |= fp->start[r] <= f.ret && f.ret < fp->end[r];
		if (!in_fp) {
			if (f.ret == fp->root[0] || f.ret == fp->root[1])
				break;	/* cpa-unwind knows what lies beyond */
			return 0;
		}
		if (f.next && f.next <= bp)
			return 0;
		bp = f.next;
	}
	return n;
}

/* The current task's user registers: the interrupted ones when the
 * sample came from user mode, else those saved at kernel entry. */
static __always_inline void user_regs(__u64 *out, struct sample_regs *regs,
				      struct task_struct *task)
{
	struct pt_regs *uregs;

	if (regs && regs->user_mode) {
		out[0] = regs->ip;
		out[1] = regs->sp;
		out[2] = regs->bp;
		return;
	}
	uregs = (struct pt_regs *)bpf_task_pt_regs(task);
	out[0] = PT_REGS_IP(uregs);
	out[1] = PT_REGS_SP(uregs);
	out[2] = PT_REGS_FP(uregs);
}

/*
 * A sample of the current task: kernel stack, and unless kernel-only the
 * user registers and either the frame-pointer user chain alone (code
 * that keeps frame pointers, fp_chain_code) or the stack snapshot and,
 * where the snapshot does not hold the whole stack, the chain as well.
 * regs are the interrupted registers (perf event, uprobe) or NULL; when
 * they are not user mode the task's saved user registers are used.
 */
static __always_inline int sample_current(void *ctx, struct sample_regs *regs,
					  __u32 slot, __u16 kind, __u64 weight,
					  __u64 now, __u32 cpu)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct capture_scratch *s = scratch_slot(cpu, slot);
	bool user = user_stacks && task->mm;
	bool snapshot = user;	/* the loader sets a stack_size with them */
	struct capture_fp_proc *fp = NULL;
	struct capture_event *ev;
	__u64 ur[CAPTURE_NREGS];
	__u16 n_fp = 0;
	long n;

	if (!s)
		return 0;
	if (user) {
		user_regs(ur, regs, task);
		if (snapshot && snapshot_auto)
			fp = fp_chain_code(task->tgid, ur[0], ur[1]);
	}
	/* The sample is written in place in the ring, snapshot included:
	 * a copy through the scratch slot touched twice the pages, and on a
	 * virtual machine a page touched from the timer's interrupt is what
	 * a sample costs most. What the record holds past the snapshot is
	 * never read (stack_len says where it ends). A chain that leaves
	 * frame-pointer code is found only by walking it: its record is
	 * given back, and the snapshot taken after all. */
	ev = NULL;
	if (fp) {
		ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
		if (!ev) {
			count_drop(DROP_RINGBUF);
			return 0;
		}
		n_fp = walk_fp_chain(ev->user_ips, ur[0], ur[2], fp);
		if (n_fp) {
			snapshot = false;
		} else {
			bpf_ringbuf_discard(ev, BPF_RB_NO_WAKEUP);
			ev = NULL;
		}
	}
	if (!ev && snapshot)
		ev = bpf_ringbuf_reserve(&events, sizeof(*ev) + snapshot_room() +
					 CAPTURE_STACK_SLACK, 0);
	else if (!ev)
		ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_drop(DROP_RINGBUF);
		return 0;
	}
	ev->mono_ns = now;
	ev->weight = weight;
	ev->cpu = cpu;
	ev->kind = kind;
	ev->flags = 0;
	ev->n_user = 0;
	ev->n_regs = 0;
	ev->stack_len = 0;
	ev->alloc_id = 0;
	ev->pad = 0;
	ev->pad2 = 0;
	fill_task(ev, task);

	if (!regs || !regs->user_mode)
		ev->flags |= CAPTURE_F_IN_KERNEL;
	n = bpf_get_stack(ctx, ev->kernel_ips, sizeof(ev->kernel_ips), 0);
	if (n < 0) {
		ev->flags |= CAPTURE_F_KSTACK_FAILED;
		n = 0;
	}
	ev->n_kernel = n / 8;

	if (user) {
		ev->regs[0] = ur[0];
		ev->regs[1] = ur[1];
		ev->regs[2] = ur[2];
		ev->n_regs = CAPTURE_NREGS;
		/* Code that keeps frame pointers: the chain alone. Else
		 * the snapshot, and the kernel's frame-pointer walk only
		 * where it does not hold the whole stack: that walk costs
		 * more than the rest of the sample together, and where the
		 * snapshot holds the stack, cpa-unwind walks the same chain
		 * from it. */
		if (!snapshot) {
			ev->n_user = n_fp;
		} else if (!copy_user_stack(ev, task, ur[1])) {
			n = bpf_get_stack(ctx, ev->user_ips,
					  sizeof(ev->user_ips),
					  BPF_F_USER_STACK);
			if (n < 0) {
				ev->flags |= CAPTURE_F_USTACK_FAILED;
				n = 0;
			}
			ev->n_user = n / 8;
		}
		py_walk(&ev->py, s->py_buf, task, ev->pid, ev->tid);
	} else {
		ev->py.n = 0;
		ev->py.version = 0;
		ev->py.flags = 0;
	}
	bpf_ringbuf_submit(ev, wakeup_flag());
	return 0;
}

/* IRQ-off detection: the timer could not fire while interrupts were
 * off, so a gap between two timer samples on a CPU well above the period
 * is time spent with interrupts disabled (or the vCPU not running). An
 * idle CPU takes no timer samples either, so a gap during which the CPU
 * went idle is not reported. */
static __always_inline void check_gap(void *ctx, struct sample_regs *regs,
				      __u64 now, __u32 cpu)
{
	__u32 zero = 0;
	struct cpu_state *cs = bpf_map_lookup_elem(&cpu_states, &zero);
	__u64 last;

	if (!cs)
		return;
	last = cs->last_tick_ns;
	cs->last_tick_ns = now;
	if (last && now - last > irqoff_gap_ns && cs->idle_ns < last &&
	    task_selected(bpf_get_current_task_btf(), cpu))
		sample_current(ctx, regs, SLOT_TIMER, CAPTURE_KIND_IRQOFF,
			       now - last, now, cpu);
}

SEC("perf_event")
int on_cpu(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	struct sample_regs regs;

	read_regs(&regs, (struct pt_regs *)&ctx->regs);
	if (irqoff_gap_ns)
		check_gap(ctx, &regs, now, cpu);
	if (!include_idle && task->pid == 0)
		return 0;
	if (!task_selected(task, cpu))
		return 0;
	return sample_current(ctx, &regs, SLOT_TIMER, CAPTURE_KIND_ONCPU, 1,
			      now, cpu);
}

/* --irqoff: notes when a CPU goes idle (see check_gap). */
SEC("raw_tp/sched_switch")
int BPF_PROG(irqoff_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next)
{
	__u32 zero = 0;
	struct cpu_state *cs;

	if (BPF_CORE_READ(next, pid) != 0)
		return 0;
	cs = bpf_map_lookup_elem(&cpu_states, &zero);
	if (cs)
		cs->idle_ns = bpf_ktime_get_ns();
	return 0;
}

/* ---- off-CPU ---------------------------------------------------------- */

static __always_inline __u16 phase_kind(__u8 phase)
{
	switch (phase) {
	case PHASE_BLOCKED:
		return CAPTURE_KIND_OFFCPU_BLOCKED;
	case PHASE_PREEMPTED:
		return CAPTURE_KIND_SCHED_PREEMPTED;
	case PHASE_YIELDED:
		return CAPTURE_KIND_SCHED_YIELDED;
	default:
		return CAPTURE_KIND_SCHED_DELAY;
	}
}

/* Emits the phase that ends now, with the stacks taken at switch-out and
 * the CPU the task left. The sample's time is the end of the interval. */
static __always_inline void end_phase(struct offcpu_state *st, __u32 tid,
				      __u64 now, __u32 cpu)
{
	__u16 kind = phase_kind(st->phase);
	__u64 dur = now - st->start_ns;
	struct capture_scratch *s;
	struct capture_event *ev;
	__u64 *regs = NULL;
	__u8 *stack = NULL;
	__u32 len = 0;

	if (!(offcpu_want & (1u << kind)) || dur < offcpu_min_ns)
		return;
	s = scratch_slot(cpu, SLOT_SCHED);
	if (!s)
		return;
	ev = &s->ev;
	ev->mono_ns = now;
	ev->cgroup_id = st->cgroup_id;
	ev->weight = dur;
	ev->pid = st->pid;
	ev->tid = tid;
	ev->cpu = st->cpu;
	ev->kind = kind;
	ev->flags = st->flags;
	__builtin_memcpy(ev->comm, st->comm, sizeof(ev->comm));
	__builtin_memcpy(ev->pcomm, st->pcomm, sizeof(ev->pcomm));
	ev->n_kernel = st->n_kernel;
	ev->n_user = st->n_user;
	ev->n_regs = 0;
	ev->stack_len = 0;
	bpf_probe_read_kernel(ev->kernel_ips, sizeof(ev->kernel_ips),
			      st->kernel_ips);
	bpf_probe_read_kernel(ev->user_ips, sizeof(ev->user_ips),
			      st->user_ips);
	bpf_probe_read_kernel(&ev->py, sizeof(ev->py), &st->py);
	/* the stack copy: in the state itself, or in a table of its own */
	if (st->n_regs) {
		regs = st->regs;
		len = st->stack_len;
		if (len > OFFCPU_INLINE_STACK)
			len = OFFCPU_INLINE_STACK;
		stack = st->stack;
	} else if (offcpu_stack_size > OFFCPU_INLINE_STACK) {
		struct offcpu_snap *sn = bpf_map_lookup_elem(&offcpu_snaps, &tid);

		if (sn) {
			regs = sn->regs;
			len = sn->stack_len;
			if (len > OFFCPU_MAX_STACK)
				len = OFFCPU_MAX_STACK;
			stack = sn->stack;
			ev->flags |= sn->flags;
		}
	}
	if (regs) {
		ev->regs[0] = regs[0];
		ev->regs[1] = regs[1];
		ev->regs[2] = regs[2];
		ev->n_regs = CAPTURE_NREGS;
		if (len && !bpf_probe_read_kernel(s->stack, len, stack))
			ev->stack_len = len;
	}
	submit(s);
}

/*
 * The switching-out task's user registers and the first bytes of its
 * stack, kept in its off-CPU state (a --offcpu-stack-size up to
 * OFFCPU_INLINE_STACK); prev is current in sched_switch. One read does:
 * only a stack whose top lies within the limit makes it fail, and then
 * the rest of sp's page is what there is.
 */
static __always_inline void save_small_snapshot(struct offcpu_state *st)
{
	__u64 sp = save_user_regs(st->regs);
	__u32 n = offcpu_stack_size, room;

	st->n_regs = CAPTURE_NREGS;
	if (n > OFFCPU_INLINE_STACK)
		n = OFFCPU_INLINE_STACK;
	if (bpf_probe_read_user(st->stack, n, (void *)sp)) {
		room = CAPTURE_PAGE - (sp & (CAPTURE_PAGE - 1));
		n = room < n ? room : 0;
		barrier_var(n);
		if (n > OFFCPU_INLINE_STACK)
			n = OFFCPU_INLINE_STACK;
		if (n && bpf_probe_read_user(st->stack, n, (void *)sp))
			n = 0;
	}
	st->stack_len = n;
	st->flags |= copy_flags(n, offcpu_stack_size);
}

/* The switching-out task's user registers and stack, for a --offcpu-
 * stack-size above OFFCPU_INLINE_STACK; prev is current in sched_switch. */
static __always_inline void save_snapshot(__u32 tid)
{
	struct offcpu_snap *sn = bpf_map_lookup_elem(&offcpu_snaps, &tid);

	if (!sn) {
		__u32 zero = 0;
		struct offcpu_snap *init =
			bpf_map_lookup_elem(&offcpu_snap_zero, &zero);

		if (!init)
			return;
		if (bpf_map_update_elem(&offcpu_snaps, &tid, init, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&offcpu_snaps, &tid)) {
			count_drop(DROP_STATE_FULL);
			return;
		}
		sn = bpf_map_lookup_elem(&offcpu_snaps, &tid);
		if (!sn)
			return;
	}
	sn->stack_len = copy_stack_pages(sn->stack, OFFCPU_MAX_STACK,
					 save_user_regs(sn->regs),
					 offcpu_stack_size);
	sn->flags = copy_flags(sn->stack_len, offcpu_stack_size);
}

#if defined(__TARGET_ARCH_x86)
#define NR_SCHED_YIELD 24
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define NR_SCHED_YIELD 124
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, syscallno)
#endif

/*
 * A runnable task that leaves the CPU was preempted unless it asked to
 * go: the preempt argument only covers preemption inside the kernel (a
 * task preempted on its way back to user mode calls schedule() like
 * sched_yield() does), so a yield is told by the system call the task is
 * in.
 */
static __always_inline bool in_sched_yield(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	return SYSCALL_NR(regs) == NR_SCHED_YIELD;
}

/* Switch-out: remember when and why the task left, and its stacks. */
static __always_inline void switch_out(void *ctx, bool preempt,
				       struct task_struct *prev,
				       unsigned int prev_state, __u64 now,
				       __u32 cpu)
{
	__u32 tid = BPF_CORE_READ(prev, pid);
	struct capture_scratch *s;
	struct offcpu_state *st;
	__u8 phase;
	long n;

	if (tid == 0 || (BPF_CORE_READ(prev, flags) & PF_EXITING))
		return;
	if (prev_state != TASK_RUNNING)
		phase = PHASE_BLOCKED;
	else if (!preempt && in_sched_yield())
		phase = PHASE_YIELDED;
	else
		phase = PHASE_PREEMPTED;
	/* a blocked task may later wait on the runqueue, so blocked needs
	 * the stacks when either blocked or delay time is wanted */
	if (phase == PHASE_BLOCKED &&
	    !(offcpu_want & (OFFCPU_WANT_BLOCKED | OFFCPU_WANT_DELAY)))
		return;
	if (phase != PHASE_BLOCKED && !(offcpu_want & (1u << phase_kind(phase))))
		return;
	if (!task_selected(prev, cpu))
		return;

	st = bpf_map_lookup_elem(&offcpu, &tid);
	if (!st) {
		__u32 zero = 0;
		struct offcpu_state *init = bpf_map_lookup_elem(&offcpu_zero, &zero);

		if (!init)
			return;
		if (bpf_map_update_elem(&offcpu, &tid, init, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&offcpu, &tid)) {
			count_drop(DROP_STATE_FULL);
			return;
		}
		st = bpf_map_lookup_elem(&offcpu, &tid);
		if (!st)
			return;
	}
	st->start_ns = now;
	st->cpu = cpu;
	st->phase = phase;
	st->flags = 0;
	st->pid = BPF_CORE_READ(prev, tgid);
	st->cgroup_id = task_cgroup_id(prev);
	BPF_CORE_READ_STR_INTO(&st->comm, prev, comm);
	BPF_CORE_READ_STR_INTO(&st->pcomm, prev, group_leader, comm);
	/* prev is current here: the stacks are the task's own */
	n = bpf_get_stack(ctx, st->kernel_ips, sizeof(st->kernel_ips), 0);
	if (n < 0) {
		st->flags |= CAPTURE_F_KSTACK_FAILED;
		n = 0;
	}
	st->n_kernel = n / 8;
	st->n_user = 0;
	st->py.n = 0;
	st->py.version = 0;
	st->n_regs = 0;
	st->stack_len = 0;
	if (user_stacks && BPF_CORE_READ(prev, mm)) {
		n = bpf_get_stack(ctx, st->user_ips, sizeof(st->user_ips),
				  BPF_F_USER_STACK);
		if (n < 0) {
			st->flags |= CAPTURE_F_USTACK_FAILED;
			n = 0;
		}
		st->n_user = n / 8;
		s = scratch_slot(cpu, SLOT_SCHED);
		if (s)
			py_walk(&st->py, s->py_buf, prev, st->pid, tid);
		if (offcpu_stack_size > OFFCPU_INLINE_STACK)
			save_snapshot(tid);
		else if (offcpu_stack_size)
			save_small_snapshot(st);
	}
	st->flags |= CAPTURE_F_IN_KERNEL;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();
	__u32 tid = BPF_CORE_READ(next, pid);
	struct offcpu_state *st;

	switch_out(ctx, preempt, prev, prev_state, now, cpu);

	/* switch-in: the runqueue wait (or a blocked time whose wakeup was
	 * not seen) ends */
	st = bpf_map_lookup_elem(&offcpu, &tid);
	if (st && st->phase != PHASE_NONE) {
		end_phase(st, tid, now, cpu);
		st->phase = PHASE_NONE;
	}
	return 0;
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);
	struct offcpu_state *st = bpf_map_lookup_elem(&offcpu, &tid);
	__u64 now;

	if (!st || st->phase != PHASE_BLOCKED)
		return 0;
	now = bpf_ktime_get_ns();
	end_phase(st, tid, now, bpf_get_smp_processor_id());
	st->phase = PHASE_WOKEN;
	st->start_ns = now;
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(sched_exit, struct task_struct *p)
{
	__u32 tid = BPF_CORE_READ(p, pid);

	bpf_map_delete_elem(&offcpu, &tid);
	bpf_map_delete_elem(&stack_vmas, &tid);
	if (offcpu_stack_size > OFFCPU_INLINE_STACK)
		bpf_map_delete_elem(&offcpu_snaps, &tid);
	return 0;
}

/* ---- probes ----------------------------------------------------------- */

static __always_inline bool probe_rate_ok(__u64 now)
{
	__u32 zero = 0;
	struct cpu_state *cs;

	if (!probe_rate)
		return true;
	cs = bpf_map_lookup_elem(&cpu_states, &zero);
	if (!cs)
		return false;
	if (now - cs->rate_window_ns >= 1000000000ull) {
		cs->rate_window_ns = now;
		cs->rate_count = 0;
	}
	if (cs->rate_count >= probe_rate) {
		count_drop(DROP_PROBE_RATE);
		return false;
	}
	cs->rate_count++;
	return true;
}

static __always_inline int probe_hit(void *ctx, struct sample_regs *regs)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_ns();
	__u32 cpu = bpf_get_smp_processor_id();

	if (!task_selected(task, cpu) || !probe_rate_ok(now))
		return 0;
	return sample_current(ctx, regs, SLOT_PROBE, CAPTURE_KIND_PROBE, 1, now,
			      cpu);
}

SEC("tracepoint")
int probe_tp(void *ctx)
{
	return probe_hit(ctx, NULL);
}

SEC("kprobe")
int probe_regs(struct pt_regs *ctx)
{
	struct sample_regs regs;

	read_regs(&regs, ctx);
	return probe_hit(ctx, &regs);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
