// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cpa-capture's memory modes (--mem virt,phys,usage), tracepoints only:
 *
 *   virt   syscalls: the length at sys_enter of mmap, brk and mremap, the
 *          result at sys_exit; a successful call is a sample of the bytes
 *          of address space it added (brk and mremap: growth only)
 *   phys   raw_tp page_fault_user marks the faulting thread with the
 *          faulting instruction; raw_tp mm_page_alloc, while the thread's
 *          saved user registers still say "that fault", is a sample of
 *          PAGE_SIZE << order bytes
 *   usage  the same allocations, each with an allocation id kept per page
 *          (struct page *) in a bounded table; mm_page_free and
 *          mm_page_free_batched of a tracked page send a free of that id,
 *          whoever frees it (munmap, exit, reclaim, swap-out)
 *
 * Samples carry the user stack only: the kernel path of a page fault
 * says nothing about which code holds the memory. They go to the ring
 * buffer and drop counters of bpf/capture.bpf.c (the loader reuses its
 * maps), filtered by the same filter maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "capture.h"
#include "mem.h"
#include "filter.bpf.h"
#include "ring.bpf.h"
#include "ustack.bpf.h"

#define PAGE_BYTES 4096ull
#define MIGRATE_MOVABLE_TYPE 1	/* enum migratetype's MIGRATE_MOVABLE */
#define PAGE_ALIGN_UP(x) (((x) + PAGE_BYTES - 1) & ~(PAGE_BYTES - 1))
#define IS_ERR_VALUE(x) ((unsigned long)(x) >= (unsigned long)-4095)

/* Set by the loader before load. */
const volatile __u32 mem_want = 0;		/* MEM_WANT_* bits */
const volatile bool mem_user_stacks = true;	/* FP chain, regs, snapshot */
const volatile __u32 mem_stack_size = 0;	/* snapshot bytes, 0: none */
const volatile __u32 mem_probability = 100;	/* percent of page events */

/* Allocation ids, unique within one capture. */
__u64 next_alloc_id = 0;

struct mem_scratch {
	struct capture_event ev;
	__u8 stack[MEM_MAX_STACK + CAPTURE_STACK_SLACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct mem_scratch);
	__uint(max_entries, 1);		/* CPUs * MEM_SLOT_COUNT, by the loader */
} mem_scratch SEC(".maps");

/* A system call's arguments from sys_enter to sys_exit, per thread. LRU:
 * a thread killed inside the call never reaches sys_exit. */
struct syscall_args {
	__u64 a, b;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct syscall_args);
	__uint(max_entries, 16384);
} mem_calls SEC(".maps");

/* The instruction of each selected thread's latest user page fault. LRU,
 * as threads come and go without telling. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
} fault_ip SEC(".maps");

/* --mem usage: struct page * -> the allocation it belongs to. Not LRU:
 * an evicted page would never be subtracted, so a full table refuses the
 * allocation instead, counted as DROP_STATE_FULL. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct mem_page);
	__uint(max_entries, MEM_DEFAULT_MAX_PAGES);	/* --mem-max-pages */
} mem_pages SEC(".maps");

static __always_inline struct mem_scratch *mem_slot(__u32 cpu, __u32 slot)
{
	__u32 key = cpu * MEM_SLOT_COUNT + slot;

	return bpf_map_lookup_elem(&mem_scratch, &key);
}

/* A sample of the current task in a system call or page fault: its user
 * stack as the kernel saved it at entry. */
static __always_inline void mem_sample(void *ctx, __u32 slot, __u16 kind,
				       __u64 weight, __u16 flags,
				       __u64 alloc_id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 cpu = bpf_get_smp_processor_id();
	struct mem_scratch *s = mem_slot(cpu, slot);
	struct capture_event *ev;
	__u64 len, sp;
	long n;

	if (!s)
		return;
	ev = &s->ev;
	ev->mono_ns = bpf_ktime_get_ns();
	ev->weight = weight;
	ev->cpu = cpu;
	ev->kind = kind;
	ev->flags = flags | CAPTURE_F_IN_KERNEL;
	ev->alloc_id = alloc_id;
	ev->n_kernel = 0;
	ev->n_user = 0;
	ev->n_regs = 0;
	ev->stack_len = 0;
	fill_task(ev, task);
	if (mem_user_stacks) {
		n = bpf_get_stack(ctx, ev->user_ips, sizeof(ev->user_ips),
				  BPF_F_USER_STACK);
		if (n < 0) {
			ev->flags |= CAPTURE_F_USTACK_FAILED;
			n = 0;
		}
		ev->n_user = n / 8;
		ev->n_regs = CAPTURE_NREGS;
		sp = save_user_regs(ev->regs);
		if (mem_stack_size) {
			ev->stack_len = copy_stack_pages(s->stack, MEM_MAX_STACK,
							 sp, mem_stack_size);
			ev->flags |= copy_flags(ev->stack_len, mem_stack_size);
		}
	}
	len = ev->stack_len;
	if (len > MEM_MAX_STACK)
		len = MEM_MAX_STACK;
	if (bpf_ringbuf_output(&events, s, sizeof(struct capture_event) + len,
			       wakeup_flag()))
		count_drop(DROP_RINGBUF);
}

/* ---- virt: mmap, brk, mremap ------------------------------------------ */

static __always_inline void call_enter(__u64 a, __u64 b)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tid = BPF_CORE_READ(task, pid);
	struct syscall_args args = { .a = a, .b = b };

	if (!task_selected(task, bpf_get_smp_processor_id()))
		return;
	bpf_map_update_elem(&mem_calls, &tid, &args, BPF_ANY);
}

/* The arguments saved at entry, taken out of the table; false when the
 * thread was not selected. */
static __always_inline bool call_exit(struct syscall_args *out)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct syscall_args *args = bpf_map_lookup_elem(&mem_calls, &tid);

	if (!args)
		return false;
	*out = *args;
	bpf_map_delete_elem(&mem_calls, &tid);
	return true;
}

static __always_inline void virt_sample(void *ctx, __u64 bytes)
{
	if (bytes)
		mem_sample(ctx, MEM_SLOT_SYSCALL, CAPTURE_KIND_MEM_VIRT, bytes,
			   0, 0);
}

/* Every successful mmap counts, anonymous or file-backed, private or
 * shared: it is address space the process asked for, as do_mmap sees
 * it. */
SEC("tracepoint/syscalls/sys_enter_mmap")
int mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	call_enter(ctx->args[1], 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct syscall_args args;

	if (call_exit(&args) && !IS_ERR_VALUE(ctx->ret))
		virt_sample(ctx, PAGE_ALIGN_UP(args.a));
	return 0;
}

/* brk: the growth of the heap's mapping, from the break before the call
 * to the break it returns (the old one when it failed). */
SEC("tracepoint/syscalls/sys_enter_brk")
int brk_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();

	call_enter(BPF_CORE_READ(task, mm, brk), 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_brk")
int brk_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct syscall_args args;
	__u64 old, new;

	if (!call_exit(&args))
		return 0;
	old = PAGE_ALIGN_UP(args.a);
	new = PAGE_ALIGN_UP((__u64)ctx->ret);
	if (new > old)
		virt_sample(ctx, new - old);
	return 0;
}

/* mremap: only growth adds address space. */
SEC("tracepoint/syscalls/sys_enter_mremap")
int mremap_enter(struct trace_event_raw_sys_enter *ctx)
{
	call_enter(ctx->args[1], ctx->args[2]);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mremap")
int mremap_exit(struct trace_event_raw_sys_exit *ctx)
{
	struct syscall_args args;
	__u64 old, new;

	if (!call_exit(&args) || IS_ERR_VALUE(ctx->ret))
		return 0;
	old = PAGE_ALIGN_UP(args.a);
	new = PAGE_ALIGN_UP(args.b);
	if (new > old)
		virt_sample(ctx, new - old);
	return 0;
}

/* ---- phys and usage: pages allocated by user page faults --------------- */

#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, syscallno)
#endif

SEC("raw_tp/page_fault_user")
int BPF_PROG(fault_mark, unsigned long address, struct pt_regs *regs,
	     unsigned long error_code)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tid;
	__u64 ip;

	if (!task_selected(task, bpf_get_smp_processor_id()))
		return 0;
	tid = BPF_CORE_READ(task, pid);
	ip = PT_REGS_IP_CORE(regs);
	bpf_map_update_elem(&fault_ip, &tid, &ip, BPF_ANY);
	return 0;
}

/*
 * True while the current thread handles the user page fault it was last
 * marked for: its saved user registers are an exception's (no system
 * call number), at the marked instruction. A later system call of the
 * thread has a call number and a different instruction pointer, so its
 * allocations (page cache, page tables of another mapping) are not
 * mistaken for the fault's.
 */
static __always_inline bool in_marked_fault(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u32 tid = BPF_CORE_READ(task, pid);
	__u64 *ip = bpf_map_lookup_elem(&fault_ip, &tid);

	return ip && (long)SYSCALL_NR(regs) == -1 &&
	       PT_REGS_IP_CORE(regs) == *ip;
}

SEC("raw_tp/mm_page_alloc")
int BPF_PROG(page_alloc, struct page *page, unsigned int order,
	     unsigned int gfp, int migratetype)
{
	__u64 bytes = PAGE_BYTES << (order & 31), key = (__u64)page;
	struct mem_page st;
	__u16 flags = 0;

	/* The process's own pages, anonymous or file, are movable; what
	 * else the fault allocates is the kernel's (page tables, freed an
	 * RCU grace period after the process is gone; slab pages, kept by
	 * the slab) and would stay charged to the stack. */
	if (migratetype != MIGRATE_MOVABLE_TYPE || !in_marked_fault())
		return 0;
	if (mem_probability < 100) {
		if (bpf_get_prandom_u32() % 100 >= mem_probability)
			return 0;
		bytes = bytes * 100 / mem_probability;
		flags = CAPTURE_F_ESTIMATE;
	}
	if (mem_want & MEM_WANT_PHYS)
		mem_sample(ctx, MEM_SLOT_FAULT, CAPTURE_KIND_MEM_PHYS, bytes,
			   flags, 0);
	if (!(mem_want & MEM_WANT_USAGE))
		return 0;
	st.alloc_id = __sync_fetch_and_add(&next_alloc_id, 1) + 1;
	st.bytes = bytes;
	if (bpf_map_update_elem(&mem_pages, &key, &st, BPF_ANY)) {
		count_drop(DROP_STATE_FULL);
		return 0;
	}
	mem_sample(ctx, MEM_SLOT_FAULT, CAPTURE_KIND_MEM_USAGE, bytes,
		   flags | CAPTURE_F_ALLOC_ID, st.alloc_id);
	return 0;
}

/* A tracked page freed, by whichever task frees it: the allocation's
 * bytes go back, with no stack (cpa-unwind gives the free the
 * allocation's). A huge page split before its free gives back all its
 * bytes with its first page. */
static __always_inline void page_freed(struct page *page, unsigned int order)
{
	__u64 key = (__u64)page;
	struct mem_page *st = bpf_map_lookup_elem(&mem_pages, &key);
	struct capture_event *ev;
	__u64 id, bytes;

	if (!st)
		return;
	id = st->alloc_id;
	bytes = st->bytes;
	if (bpf_map_delete_elem(&mem_pages, &key))
		return;		/* freed on another CPU at the same time */
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_drop(DROP_RINGBUF);
		return;
	}
	ev->mono_ns = bpf_ktime_get_ns();
	ev->cgroup_id = 0;
	ev->weight = bytes;
	ev->pid = 0;
	ev->tid = 0;
	ev->cpu = bpf_get_smp_processor_id();
	ev->kind = CAPTURE_KIND_MEM_USAGE;
	ev->flags = CAPTURE_F_FREE | CAPTURE_F_ALLOC_ID |
		    (mem_probability < 100 ? CAPTURE_F_ESTIMATE : 0);
	__builtin_memset(ev->comm, 0, sizeof(ev->comm));
	__builtin_memset(ev->pcomm, 0, sizeof(ev->pcomm));
	ev->n_kernel = 0;
	ev->n_user = 0;
	ev->n_regs = 0;
	ev->pad = 0;
	ev->stack_len = 0;
	ev->pad2 = 0;
	ev->alloc_id = id;
	bpf_ringbuf_submit(ev, wakeup_flag());
}

SEC("raw_tp/mm_page_free")
int BPF_PROG(page_free, struct page *page, unsigned int order)
{
	page_freed(page, order);
	return 0;
}

SEC("raw_tp/mm_page_free_batched")
int BPF_PROG(page_free_batched, struct page *page)
{
	page_freed(page, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
