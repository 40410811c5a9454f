// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * cpa-capture --mem malloc: sampled heap profiling on uprobes of the C
 * library's allocator, as tcmalloc and Go's runtime sample:
 *
 *   Every selected thread counts down the bytes it allocates; when the
 *   count crosses zero, the allocation that crossed it is sampled and a
 *   new count is drawn from an exponential distribution of mean
 *   --mem-sample-bytes. An allocation of s bytes is then sampled with
 *   probability 1 - exp(-s/N), whatever the sizes around it, so user
 *   space scales its weight by the inverse and totals stay unbiased.
 *
 *   A sampled block is sent at the allocator's return, where its address
 *   is known and the user stack is the caller's: kind heap-inuse with a
 *   fresh allocation id (user space also writes it as heap-alloc). Its
 *   address is kept, per process, in a bounded table; free() or realloc()
 *   of that address sends a free of the id, without a stack, which
 *   cpa-unwind gives the allocating stack. When the process ends, its
 *   blocks still held are sent as freed: in use falls back to zero, and
 *   the table keeps no dead process's blocks.
 *
 * Unsampled calls cost the uprobe (and, for the allocating functions, the
 * uretprobe) plus a hash lookup: docs/capture.md has the measured price.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "capture.h"
#include "heap.h"
#include "mem.h"
#include "filter.bpf.h"
#include "ring.bpf.h"
#include "ustack.bpf.h"

/* Set by the loader before load. */
const volatile bool heap_user_stacks = true;	/* FP chain, regs, snapshot */
const volatile __u32 heap_stack_size = 0;	/* snapshot bytes, 0: none */
const volatile __u64 heap_interval[HEAP_INTERVAL_STEPS] = {};

__u64 heap_next_id = 0;

struct heap_scratch {
	struct capture_event ev;
	__u8 stack[MEM_MAX_STACK + CAPTURE_STACK_SLACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct heap_scratch);
	__uint(max_entries, 1);		/* CPUs, set by the loader */
} heap_scratch SEC(".maps");

/* Bytes each thread allocates before its next sample. LRU: threads end
 * without telling, and a forgotten count is only drawn again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, __s64);
	__uint(max_entries, 65536);
} heap_left SEC(".maps");

/* A sampled call, from the allocator's entry to its return, per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct heap_call);
	__uint(max_entries, 16384);
} heap_calls SEC(".maps");

/* Sampled blocks still allocated. Not LRU: an evicted block's free would
 * never be sent, so a full table refuses the block (counted as
 * DROP_STATE_FULL; it is still sent as heap-alloc). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct heap_key);
	__type(value, struct heap_block);
	__uint(max_entries, HEAP_DEFAULT_MAX_BLOCKS);
} heap_blocks SEC(".maps");

/* Sampled blocks held per process, so an exit walks the block table only
 * when it holds some of that process. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 16384);
} heap_procs SEC(".maps");

static __always_inline void procs_add(__u32 pid, __s64 n)
{
	__u64 *held = bpf_map_lookup_elem(&heap_procs, &pid), one = 1;

	if (held)
		__sync_fetch_and_add(held, n);
	else if (n > 0)
		bpf_map_update_elem(&heap_procs, &pid, &one, BPF_NOEXIST);
}

static __always_inline __s64 next_interval(void)
{
	__u32 i = bpf_get_prandom_u32() & (HEAP_INTERVAL_STEPS - 1);

	return (__s64)heap_interval[i];
}

/* The count-down at an allocator's entry: the call is remembered for its
 * return when it crosses the sampling point. */
static __always_inline void alloc_enter(__u64 size, __u64 memptr)
{
	struct task_struct *task;
	struct heap_call call = { .size = size, .memptr = memptr };
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__s64 *left, first;

	if (!size)
		return;
	left = bpf_map_lookup_elem(&heap_left, &tid);
	if (!left) {
		task = bpf_get_current_task_btf();
		if (!task_selected(task, bpf_get_smp_processor_id()))
			return;
		first = next_interval();
		bpf_map_update_elem(&heap_left, &tid, &first, BPF_ANY);
		left = bpf_map_lookup_elem(&heap_left, &tid);
		if (!left)
			return;
	}
	if (*left > (__s64)size) {
		*left -= size;
		return;
	}
	*left = next_interval();
	bpf_map_update_elem(&heap_calls, &tid, &call, BPF_ANY);
}

static __always_inline struct heap_scratch *scratch(__u32 cpu)
{
	return bpf_map_lookup_elem(&heap_scratch, &cpu);
}

/* The event of a sample of the current task, without its stack, in this
 * CPU's scratch; NULL when there is none. */
static __always_inline struct heap_scratch *heap_event(__u16 kind,
						       __u64 size,
						       __u16 flags, __u64 id)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct heap_scratch *s = scratch(cpu);
	struct capture_event *ev;

	if (!s)
		return NULL;
	ev = &s->ev;
	ev->mono_ns = bpf_ktime_get_ns();
	ev->weight = size;	/* scaled by cpa-capture */
	ev->cpu = cpu;
	ev->kind = kind;
	ev->flags = flags | CAPTURE_F_ESTIMATE;
	ev->alloc_id = id;
	ev->n_kernel = 0;
	ev->n_user = 0;
	ev->n_regs = 0;
	ev->stack_len = 0;
	fill_task(ev, bpf_get_current_task_btf());
	return s;
}

static __always_inline void send_free(__u64 size, __u64 id)
{
	struct heap_scratch *s = heap_event(CAPTURE_KIND_HEAP_INUSE, size,
					    CAPTURE_F_FREE | CAPTURE_F_ALLOC_ID,
					    id);

	if (s && bpf_ringbuf_output(&events, s, sizeof(struct capture_event),
				    wakeup_flag()))
		count_drop(DROP_RINGBUF);
}

/* A sample of the current task at an allocator's return: the stack is its
 * caller's. */
static __always_inline void heap_sample(struct pt_regs *ctx, __u16 kind,
					__u64 size, __u16 flags, __u64 id)
{
	struct heap_scratch *s = heap_event(kind, size, flags, id);
	__u64 regs[CAPTURE_NREGS] = { PT_REGS_IP(ctx), PT_REGS_SP(ctx),
				      PT_REGS_FP(ctx) };
	__u64 len;

	if (!s)
		return;
	if (heap_user_stacks)
		user_stack_sample(ctx, &s->ev, regs, s->stack, MEM_MAX_STACK,
				  heap_stack_size);
	len = s->ev.stack_len;
	if (len > MEM_MAX_STACK)
		len = MEM_MAX_STACK;
	if (bpf_ringbuf_output(&events, s, sizeof(struct capture_event) + len,
			       wakeup_flag()))
		count_drop(DROP_RINGBUF);
}

/* free(addr), or the old block of realloc: the free of a sampled block. */
static __always_inline void block_free(__u64 addr)
{
	struct heap_key key = { .pid = bpf_get_current_pid_tgid() >> 32,
				.addr = addr };
	struct heap_block *b;
	__u64 id, size;

	if (!addr)
		return;
	b = bpf_map_lookup_elem(&heap_blocks, &key);
	if (!b)
		return;
	id = b->alloc_id;
	size = b->size;
	if (bpf_map_delete_elem(&heap_blocks, &key))
		return;		/* freed meanwhile by another thread */
	procs_add(key.pid, -1);
	send_free(size, id);
}

/* At the allocator's return: the block of a sampled call, at addr. */
static __always_inline void alloc_exit(struct pt_regs *ctx, bool via_memptr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct heap_call *c = bpf_map_lookup_elem(&heap_calls, &tid);
	struct heap_block blk;
	struct heap_key key = {};
	__u64 addr = 0, memptr, size;

	if (!c)
		return;
	size = c->size;
	memptr = c->memptr;
	bpf_map_delete_elem(&heap_calls, &tid);
	if (via_memptr) {
		if (PT_REGS_RC(ctx) != 0 ||
		    bpf_probe_read_user(&addr, sizeof(addr), (void *)memptr))
			return;
	} else {
		addr = PT_REGS_RC(ctx);
	}
	if (!addr)
		return;
	key.pid = bpf_get_current_pid_tgid() >> 32;
	key.addr = addr;
	/* a block at this address whose free went unseen */
	block_free(addr);
	blk.alloc_id = HEAP_ID_BIT | __sync_fetch_and_add(&heap_next_id, 1);
	blk.size = size;
	if (bpf_map_update_elem(&heap_blocks, &key, &blk, BPF_NOEXIST)) {
		count_drop(DROP_STATE_FULL);
		heap_sample(ctx, CAPTURE_KIND_HEAP_ALLOC, size, 0, 0);
		return;
	}
	procs_add(key.pid, 1);
	heap_sample(ctx, CAPTURE_KIND_HEAP_INUSE, size, CAPTURE_F_ALLOC_ID,
		    blk.alloc_id);
}

SEC("uprobe")
int BPF_KPROBE(malloc_enter, __u64 size)
{
	alloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(calloc_enter, __u64 n, __u64 size)
{
	__u64 limit;

	/* an overflowing product fails in calloc itself (the barrier keeps
	 * clang from checking it with a 128-bit multiply BPF lacks) */
	if (!size)
		return 0;
	limit = ~0ull / size;
	barrier_var(limit);
	if (n > limit)
		return 0;
	alloc_enter(n * size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(realloc_enter, __u64 addr, __u64 size)
{
	block_free(addr);
	alloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(aligned_alloc_enter, __u64 align, __u64 size)
{
	alloc_enter(size, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(posix_memalign_enter, __u64 memptr, __u64 align, __u64 size)
{
	alloc_enter(size, memptr);
	return 0;
}

SEC("uretprobe")
int BPF_KPROBE(alloc_exit_rc)
{
	alloc_exit(ctx, false);
	return 0;
}

SEC("uretprobe")
int BPF_KPROBE(alloc_exit_memptr)
{
	alloc_exit(ctx, true);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(free_enter, __u64 addr)
{
	block_free(addr);
	return 0;
}

/* bpf_for_each_map_elem over the blocks at a process's end. */
static long exit_block(struct bpf_map *map, struct heap_key *key,
		       struct heap_block *b, __u32 *pid)
{
	if (key->pid == *pid) {
		send_free(b->size, b->alloc_id);
		bpf_map_delete_elem(map, key);
	}
	return 0;
}

/* The last thread of a process ends: its blocks are gone with it. */
SEC("raw_tp/sched_process_exit")
int BPF_PROG(heap_exit, struct task_struct *p)
{
	__u32 pid = BPF_CORE_READ(p, tgid);

	if (BPF_CORE_READ(p, signal, live.counter) != 0 ||
	    !bpf_map_lookup_elem(&heap_procs, &pid))
		return 0;
	bpf_map_delete_elem(&heap_procs, &pid);
	bpf_for_each_map_elem(&heap_blocks, exit_block, &pid, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
