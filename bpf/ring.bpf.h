// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The ring buffer every sample goes through and the drop counters, shared
 * by every BPF object of cpa-capture (the loader reuses the first object's
 * maps in the others), so user space reads one ring and one set of
 * counters.
 */
#ifndef CPA_BPF_RING_H
#define CPA_BPF_RING_H

/* The ring's size in bytes, set by the loader before load. */
const volatile __u64 ringbuf_bytes = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);	/* sized by the loader */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, DROP_COUNT);
} drops SEC(".maps");

static __always_inline void count_drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);

	if (n)
		*n += 1;
}

/* Wake the reader only when the ring is filling up; otherwise it drains
 * on its own poll interval, which saves a wakeup per sample. */
static __always_inline __u64 wakeup_flag(void)
{
	__u64 queued = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);

	return queued > ringbuf_bytes / 2 ? BPF_RB_FORCE_WAKEUP :
					    BPF_RB_NO_WAKEUP;
}

#endif
