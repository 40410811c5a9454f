/* SPDX-License-Identifier: MIT */
/*
 * What bpf/heap.bpf.c (--mem malloc) shares with its loader,
 * cpa-capture/heap.c. Samples are struct capture_event (capture.h) on the
 * ring buffer every other sample uses.
 */
#ifndef CPA_BPF_HEAP_H
#define CPA_BPF_HEAP_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* The intervals between samples are drawn from this many quantiles of an
 * exponential distribution of mean --mem-sample-bytes, computed by the
 * loader: BPF has no logarithm. */
#define HEAP_INTERVAL_STEPS 1024

#define HEAP_DEFAULT_SAMPLE_BYTES (512 * 1024)
/* Sampled blocks tracked at once (their address -> allocation id). */
#define HEAP_DEFAULT_MAX_BLOCKS (256 * 1024)

/* Set in every heap allocation id, so they never meet the ids of
 * bpf/mem.bpf.c's page allocations in cpa-unwind's table. */
#define HEAP_ID_BIT (1ull << 63)

/* A sampled block of one process, by its address. */
struct heap_key {
	__u32 pid;
	__u32 pad;
	__u64 addr;
};

struct heap_block {
	__u64 alloc_id;
	__u64 size;		/* bytes asked for, unscaled */
};

/* A sampled call between the allocator's entry and its return. */
struct heap_call {
	__u64 size;
	__u64 memptr;		/* posix_memalign's out pointer, else 0 */
};

#endif
