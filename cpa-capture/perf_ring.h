/* SPDX-License-Identifier: MIT */
/* perf_event_open and its mmap ring buffer, for the perf backend and the
 * side-band tracking events. */
#ifndef CPA_CAPTURE_PERF_RING_H
#define CPA_CAPTURE_PERF_RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpa-capture.h"

struct perf_ring {
	int fd;
	int cpu;
	void *base;		/* metadata page, then the data pages */
	size_t data_size;
	uint8_t *wrap;		/* a record that wraps around is copied here */
	size_t wrap_cap;
};

int perf_event_open_fd(struct perf_event_attr *attr, pid_t pid, int cpu);
/* Opens the event and maps data_pages (a power of two) of ring. Returns
 * 0 or -errno. */
int perf_ring_open(struct perf_ring *r, struct perf_event_attr *attr,
		   int cpu, size_t data_pages);
/* Maps the ring of an open event; the ring owns fd from then on. */
int perf_ring_map(struct perf_ring *r, int fd, int cpu, size_t data_pages);
/* Calls fn for each record written since the last drain. */
void perf_ring_drain(struct perf_ring *r,
		     void (*fn)(const struct perf_event_header *h, int cpu,
				void *arg),
		     void *arg);
void perf_ring_close(struct perf_ring *r);

/* The sampling event for on-CPU profiles: hardware cycles at --freq, or
 * the cpu-clock timer with a period of 1/--freq s. */
void sampling_attr(const struct capture_config *cfg, bool cycles,
		   struct perf_event_attr *attr);

#endif
