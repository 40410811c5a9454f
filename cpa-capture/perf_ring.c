/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "perf_ring.h"
#include "timeparse.h"

int perf_event_open_fd(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	int fd = (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1,
			      PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int perf_ring_map(struct perf_ring *r, int fd, int cpu, size_t data_pages)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->base = mmap(NULL, (data_pages + 1) * page, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return -errno;
	}
	r->fd = fd;
	r->cpu = cpu;
	r->data_size = data_pages * page;
	return 0;
}

int perf_ring_open(struct perf_ring *r, struct perf_event_attr *attr,
		   int cpu, size_t data_pages)
{
	int fd = perf_event_open_fd(attr, -1, cpu);
	int err;

	if (fd < 0)
		return fd;
	err = perf_ring_map(r, fd, cpu, data_pages);
	if (err)
		close(fd);
	return err;
}

void perf_ring_drain(struct perf_ring *r,
		     void (*fn)(const struct perf_event_header *h, int cpu,
				void *arg),
		     void *arg)
{
	struct perf_event_mmap_page *meta = r->base;
	uint8_t *data;
	uint64_t head, tail;

	if (!meta)
		return;
	data = (uint8_t *)meta + meta->data_offset;
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	while (tail < head) {
		size_t off = tail % r->data_size;
		const struct perf_event_header *h = (const void *)(data + off);
		size_t size = h->size;

		if (size < sizeof(*h) || size > head - tail)
			break;	/* cannot happen with a sane kernel */
		if (off + size > r->data_size) {
			size_t first = r->data_size - off;

			if (size > r->wrap_cap) {
				r->wrap = cpa_realloc(r->wrap, size);
				r->wrap_cap = size;
			}
			memcpy(r->wrap, data + off, first);
			memcpy(r->wrap + first, data, size - first);
			h = (const void *)r->wrap;
		}
		fn(h, r->cpu, arg);
		tail += size;
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

void perf_ring_close(struct perf_ring *r)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (r->base)
		munmap(r->base, r->data_size + page);
	if (r->fd >= 0)
		close(r->fd);
	free(r->wrap);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

void sampling_attr(const struct capture_config *cfg, bool cycles,
		   struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	if (cycles) {
		attr->type = PERF_TYPE_HARDWARE;
		attr->config = PERF_COUNT_HW_CPU_CYCLES;
		attr->freq = 1;
		attr->sample_freq = cfg->freq;
	} else {
		/* cpu-clock counts nanoseconds: a fixed period gives exactly
		 * freq samples per second of CPU time */
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_CPU_CLOCK;
		attr->sample_period = CPA_NSEC_PER_SEC / cfg->freq;
	}
}
