/* SPDX-License-Identifier: MIT */
/*
 * What bpf/mem.bpf.c shares with its loader, cpa-capture/memory.c. The
 * events themselves are struct capture_event (capture.h), written to the
 * same ring buffer as every other sample.
 */
#ifndef CPA_BPF_MEM_H
#define CPA_BPF_MEM_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Bits of the --mem modes the loader asks for. */
#define MEM_WANT_VIRT (1u << 0)
#define MEM_WANT_PHYS (1u << 1)
#define MEM_WANT_USAGE (1u << 2)
#define MEM_WANT_MALLOC (1u << 3)	/* bpf/heap.bpf.c, not this object */

/* Largest --mem-stack-size: user stack bytes copied per memory sample,
 * so cpa-unwind can unwind through libc's leaf functions (memset, the
 * mmap wrapper) by CFI and continue with the frame-pointer chain. */
#define MEM_MAX_STACK (16 * 1024)
#define MEM_DEFAULT_STACK 1024

/* Scratch slots per CPU: a page allocation can interrupt a system call
 * program on the same CPU. */
enum mem_slot { MEM_SLOT_SYSCALL = 0, MEM_SLOT_FAULT = 1, MEM_SLOT_COUNT };

/* Per-page state of --mem usage: the allocation a resident page belongs
 * to, and the bytes its free gives back (scaled as the allocation was). */
struct mem_page {
	__u64 alloc_id;
	__u64 bytes;
};

/* --mem usage pages tracked at once, by default. */
#define MEM_DEFAULT_MAX_PAGES (256 * 1024)

#endif
