/* SPDX-License-Identifier: MIT */
/*
 * Side-band tracking: a dummy software event per CPU that samples nothing
 * but makes the kernel report every new executable mapping (MMAP2, with
 * the build id where the kernel has it), every exec (COMM with
 * COMM_EXEC), and process fork and exit. They become TASK and MMAP
 * records, time-ordered with the samples by the output queue.
 *
 * Exec comes from perf's COMM_EXEC rather than the sched_process_exec
 * tracepoint because the kernel emits it before the new image's
 * mappings; the tracepoint fires after them, and cpa-unwind would drop
 * the new mappings when it saw the exec.
 */
#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpa-capture.h"
#include "log.h"
#include "perf_ring.h"

#define TRACKING_PAGES 64	/* 256 KiB per CPU */

static const struct capture_config *cfg;
static struct perf_ring *rings;
static size_t n_rings;

/* sample_id_all with TID and TIME appends { u32 pid, tid; u64 time; } */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
};

struct mmap2_record {
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct {
			uint8_t build_id_size;
			uint8_t reserved1;
			uint16_t reserved2;
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
	char filename[];
};

struct task_record {
	struct perf_event_header h;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct comm_record {
	struct perf_event_header h;
	uint32_t pid, tid;
	char comm[];
};

struct lost_record {
	struct perf_event_header h;
	uint64_t id, lost;
};

static const struct sample_id *trailer(const struct perf_event_header *h)
{
	return (const void *)((const uint8_t *)h + h->size -
			      sizeof(struct sample_id));
}

static void on_mmap2(const struct mmap2_record *r)
{
	const struct sample_id *id = trailer(&r->h);
	const char *end = (const char *)id;
	struct cpa_mmap m;

	if ((const char *)r->filename >= end ||
	    !capture_process_selected(cfg, r->pid))
		return;
	memset(&m, 0, sizeof(m));
	m.time_ns = id->time;
	m.pid = r->pid;
	m.start = r->addr;
	m.len = r->len;
	m.pgoff = r->pgoff;
	m.prot = r->prot;
	m.flags = r->flags;
	if (r->h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		m.build_id_len = r->build_id_size <= CPA_BUILD_ID_MAX ?
					 r->build_id_size : 0;
		memcpy(m.build_id, r->build_id, m.build_id_len);
	} else {
		m.inode = r->ino;
	}
	m.path = r->filename;
	m.path_len = (uint16_t)strnlen(r->filename,
				       (size_t)(end - r->filename));
	output_queue_mmap(&m);
	capture_addons_mapping(&m, false);
}

static void on_record(const struct perf_event_header *h, int cpu, void *arg)
{
	(void)arg;
	if (h->size < sizeof(*h) + sizeof(struct sample_id))
		return;
	switch (h->type) {
	case PERF_RECORD_MMAP2:
		if (h->size >= sizeof(struct mmap2_record) +
				       sizeof(struct sample_id))
			on_mmap2((const void *)h);
		break;
	case PERF_RECORD_COMM: {
		const struct comm_record *r = (const void *)h;
		const struct sample_id *id = trailer(h);
		struct cpa_task t;

		if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC) ||
		    !capture_process_selected(cfg, r->pid))
			break;
		memset(&t, 0, sizeof(t));
		t.time_ns = id->time;
		t.pid = r->pid;
		t.tid = r->tid;
		t.event = CPA_TASK_EXEC;
		memcpy(t.comm, r->comm,
		       strnlen(r->comm, CPA_COMM_LEN - 1 <
						(size_t)((const char *)id - r->comm) ?
					CPA_COMM_LEN - 1 :
					(size_t)((const char *)id - r->comm)));
		output_queue_task(&t);
		capture_addons_exec(t.pid, t.time_ns);
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		const struct task_record *r = (const void *)h;
		struct cpa_task t;

		/* processes only: a new or exiting thread changes no
		 * mappings */
		if (h->size < sizeof(*r) || r->pid != r->tid ||
		    !capture_process_selected(cfg, r->pid))
			break;
		memset(&t, 0, sizeof(t));
		t.time_ns = r->time;
		t.pid = r->pid;
		t.tid = r->tid;
		t.ppid = r->ppid;
		t.event = h->type == PERF_RECORD_FORK ? CPA_TASK_FORK :
							CPA_TASK_EXIT;
		output_queue_task(&t);
		if (t.event == CPA_TASK_EXIT)
			capture_addons_exit(t.pid, t.time_ns);
		break;
	}
	case PERF_RECORD_LOST: {
		const struct lost_record *r = (const void *)h;

		output_queue_lost(trailer(h)->time, CPA_LOST_PERF,
				  (uint32_t)cpu, r->lost);
		break;
	}
	}
}

int tracking_open(const struct capture_config *config)
{
	struct perf_event_attr attr;
	struct cpa_cpuset online;
	int err = 0;

	cfg = config;
	if (cpa_cpuset_online(&online) < 0)
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	attr.sample_id_all = 1;
	attr.mmap = 1;
	attr.mmap2 = 1;
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.task = 1;
	attr.build_id = 1;
	/* the same clock as bpf_ktime_get_ns(), so the output can order
	 * side-band records with the samples */
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;

	rings = cpa_calloc(cpa_cpuset_count(&online), sizeof(*rings));
	for (int c = 0; c < CPA_CPUSET_MAX; c++) {
		if (!cpa_cpuset_has(&online, c))
			continue;
		err = perf_ring_open(&rings[n_rings], &attr, c, TRACKING_PAGES);
		if (err == -EINVAL && attr.build_id) {
			/* kernels before 5.12: inode numbers, no build ids */
			attr.build_id = 0;
			err = perf_ring_open(&rings[n_rings], &attr, c,
					     TRACKING_PAGES);
		}
		if (err < 0)
			break;
		n_rings++;
	}
	if (err < 0) {
		cpa_debug("side-band perf event: %s", strerror(-err));
		tracking_close();
		return -1;
	}
	return 0;
}

void tracking_drain(void)
{
	for (size_t i = 0; i < n_rings; i++)
		perf_ring_drain(&rings[i], on_record, NULL);
}

void tracking_close(void)
{
	for (size_t i = 0; i < n_rings; i++)
		perf_ring_close(&rings[i]);
	free(rings);
	rings = NULL;
	n_rings = 0;
}
