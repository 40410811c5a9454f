/* SPDX-License-Identifier: MIT */
/*
 * The perf backend: plain on-CPU sampling without BPF, for hosts where
 * the BPF program cannot load (no BTF, no CAP_BPF, verifier rejection) or
 * with --backend perf. The kernel writes each sample (callchain, user
 * registers, user stack) to a per-CPU perf ring buffer; this file turns
 * them into the same raw samples the BPF backend produces. Filters other
 * than --cpu are applied here in user space.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#endif

#include "cpa-capture.h"
#include "log.h"
#include "perf_ring.h"
#include "timeparse.h"

#define COMM_CACHE 4096		/* threads whose names are remembered */
#define COMM_TTL_NS CPA_NSEC_PER_SEC

static const struct capture_config *cfg;
static struct perf_ring *rings;
static struct pollfd *pfds;
static size_t n_rings;
static bool with_cgroup;
static uint64_t n_samples_seen;

/* tid -> thread and process names, refreshed from /proc after a second */
struct comm_entry {
	uint32_t tid, pid;
	uint64_t loaded_ns;
	char comm[CPA_COMM_LEN], pcomm[CPA_COMM_LEN];
};
static struct comm_entry *comms;

static const struct comm_entry *lookup_comm(uint32_t pid, uint32_t tid,
					    uint64_t now)
{
	struct comm_entry *e = &comms[(tid * 2654435761u) % COMM_CACHE];

	if (e->tid == tid && e->pid == pid && now - e->loaded_ns < COMM_TTL_NS)
		return e;
	memset(e, 0, sizeof(*e));
	e->tid = tid;
	e->pid = pid;
	e->loaded_ns = now;
	if (procscan_comm(pid, tid, e->comm) < 0)
		snprintf(e->comm, sizeof(e->comm), "[%u]", tid);
	if (procscan_comm(pid, pid, e->pcomm) < 0)
		memcpy(e->pcomm, e->comm, sizeof(e->pcomm));
	return e;
}

static bool tid_selected(uint32_t tid)
{
	if (!cfg->n_tids)
		return true;
	for (size_t i = 0; i < cfg->n_tids; i++)
		if (cfg->tids[i] == tid)
			return true;
	return false;
}

struct reader {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t get64(struct reader *r)
{
	uint64_t v = 0;

	if (r->end - r->p < 8) {
		r->bad = true;
		return 0;
	}
	memcpy(&v, r->p, 8);
	r->p += 8;
	return v;
}

static void on_sample(const struct perf_event_header *h)
{
	struct reader r = { (const uint8_t *)(h + 1),
			    (const uint8_t *)h + h->size, false };
	struct cpa_raw_sample s;
	uint64_t v, nr;
	uint64_t *dst = NULL;
	uint16_t *ndst = NULL;

	memset(&s, 0, sizeof(s));
	s.weight = 1;
	s.kind = CPA_KIND_ONCPU;
	(void)get64(&r);			/* IP */
	v = get64(&r);				/* TID */
	s.pid = (uint32_t)v;
	s.tid = (uint32_t)(v >> 32);
	s.time_ns = get64(&r);			/* TIME */
	s.cpu = (uint32_t)get64(&r);		/* CPU */
	nr = get64(&r);				/* CALLCHAIN */
	for (uint64_t i = 0; i < nr && !r.bad; i++) {
		uint64_t ip = get64(&r);

		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			if (ip == (uint64_t)PERF_CONTEXT_KERNEL) {
				dst = s.kernel_ips;
				ndst = &s.n_kernel;
			} else if (ip == (uint64_t)PERF_CONTEXT_USER) {
				dst = s.user_ips;
				ndst = &s.n_user;
			} else {
				dst = NULL;
			}
			continue;
		}
		if (dst && *ndst < CPA_MAX_FRAMES)
			dst[(*ndst)++] = ip;
	}
	if (!cfg->kernel_only) {
		uint64_t abi = get64(&r);	/* REGS_USER */

		if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
#if defined(__x86_64__)
			/* ascending register number: bp, sp, ip */
			s.regs[CPA_REG_BP] = get64(&r);
			s.regs[CPA_REG_SP] = get64(&r);
			s.regs[CPA_REG_IP] = get64(&r);
			s.n_regs = 3;
#endif
		}
		v = get64(&r);			/* STACK_USER */
		if (v && !r.bad && (uint64_t)(r.end - r.p) >= v + 8) {
			const uint8_t *data = r.p;
			uint64_t dyn;

			r.p += v;
			dyn = get64(&r);
			s.stack = data;
			s.stack_len = (uint32_t)(dyn < v ? dyn : v);
			if (s.stack_len >= cfg->stack_size)
				s.flags |= CPA_RAW_USER_TRUNCATED;
		} else if (s.n_regs) {
			s.flags |= CPA_RAW_SNAPSHOT_FAILED;
		}
	}
	if (with_cgroup)
		s.cgroup_id = get64(&r);
	if (r.bad)
		return;
	if (h->misc & PERF_RECORD_MISC_KERNEL)
		s.flags |= CPA_RAW_IN_KERNEL;
	if ((s.pid == 0 && !cfg->include_idle) ||
	    !capture_process_selected(cfg, s.pid) || !tid_selected(s.tid))
		return;
	const struct comm_entry *e = lookup_comm(s.pid, s.tid, s.time_ns);

	memcpy(s.comm, e->comm, CPA_COMM_LEN);
	memcpy(s.pcomm, e->pcomm, CPA_COMM_LEN);
	n_samples_seen++;
	output_queue_sample(&s);
}

static void on_record(const struct perf_event_header *h, int cpu, void *arg)
{
	(void)arg;
	if (h->type == PERF_RECORD_SAMPLE) {
		on_sample(h);
	} else if (h->type == PERF_RECORD_LOST &&
		   h->size >= sizeof(*h) + 16) {
		uint64_t lost;

		memcpy(&lost, (const uint8_t *)(h + 1) + 8, 8);
		output_queue_lost(mono_now_ns(), CPA_LOST_PERF, (uint32_t)cpu,
				  lost);
	}
}

static int perf_wait(int timeout_ms)
{
	int rc = poll(pfds, n_rings, timeout_ms);

	return rc < 0 ? -errno : 0;
}

static void perf_drain(void)
{
	for (size_t i = 0; i < n_rings; i++)
		perf_ring_drain(&rings[i], on_record, NULL);
}

static void perf_stop(void)
{
	for (size_t i = 0; i < n_rings; i++)
		if (rings[i].fd >= 0)
			ioctl(rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	perf_drain();
}

static void perf_print_stats(double seconds)
{
	(void)seconds;
	fprintf(stderr, "%s: perf backend: %llu samples taken by the kernel\n",
		cpa_progname(), (unsigned long long)n_samples_seen);
}

static uint64_t perf_bpf_run_ns(void)
{
	return 0;
}

static void perf_close(void)
{
	for (size_t i = 0; i < n_rings; i++)
		perf_ring_close(&rings[i]);
	free(rings);
	free(pfds);
	free(comms);
	rings = NULL;
	pfds = NULL;
	comms = NULL;
	n_rings = 0;
}

/* Ring pages per CPU for half a second of samples, a power of two. */
static size_t ring_pages(void)
{
	uint64_t bytes = (uint64_t)cfg->freq *
			 (2048 + (cfg->kernel_only ? 0 : cfg->stack_size)) / 2;
	size_t pages = 64;

	while (pages * 4096 < bytes && pages < 4096)
		pages <<= 1;
	return pages;
}

int perf_backend_open(const struct capture_config *config,
		      const struct capture_features *f, struct backend *b)
{
	struct perf_event_attr attr;
	bool cycles = f->pmu;
	size_t pages;
	int err = 0;

	cfg = config;
	pages = ring_pages();
	comms = cpa_calloc(COMM_CACHE, sizeof(*comms));
	sampling_attr(cfg, cycles, &attr);
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			   PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			   PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP;
	if (cfg->kernel_only) {
		attr.exclude_callchain_user = 1;
	} else {
		attr.sample_type |= PERF_SAMPLE_REGS_USER |
				    PERF_SAMPLE_STACK_USER;
#if defined(__x86_64__)
		attr.sample_regs_user = (1ull << PERF_REG_X86_IP) |
					(1ull << PERF_REG_X86_SP) |
					(1ull << PERF_REG_X86_BP);
#endif
		attr.sample_stack_user = cfg->stack_size;
	}
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.watermark = 1;
	attr.wakeup_watermark = (uint32_t)(pages * 4096 / 2);
	with_cgroup = true;

	rings = cpa_calloc(cpa_cpuset_count(&cfg->cpus), sizeof(*rings));
	pfds = cpa_calloc(cpa_cpuset_count(&cfg->cpus), sizeof(*pfds));
	for (int c = 0; c < CPA_CPUSET_MAX; c++) {
		if (!cpa_cpuset_has(&cfg->cpus, c))
			continue;
		err = perf_ring_open(&rings[n_rings], &attr, c, pages);
		if (err == -EINVAL && with_cgroup) {
			/* PERF_SAMPLE_CGROUP needs 5.7 */
			attr.sample_type &= ~(uint64_t)PERF_SAMPLE_CGROUP;
			with_cgroup = false;
			err = perf_ring_open(&rings[n_rings], &attr, c, pages);
		}
		if (err < 0) {
			cpa_err("perf backend: cannot open the %s event on CPU "
				"%d: %s%s", cycles ? "cycles" : "cpu-clock", c,
				strerror(-err),
				err == -EACCES || err == -EPERM ?
					" (needs CAP_PERFMON or "
					"kernel.perf_event_paranoid <= 0)" :
					"");
			perf_close();
			return -1;
		}
		pfds[n_rings].fd = rings[n_rings].fd;
		pfds[n_rings].events = POLLIN;
		n_rings++;
	}
	b->name = "perf";
	b->event = cycles ? "cycles" : "cpu-clock";
	b->wait = perf_wait;
	b->drain = perf_drain;
	b->stop = perf_stop;
	b->print_stats = perf_print_stats;
	b->bpf_run_ns = perf_bpf_run_ns;
	b->close = perf_close;
	return 0;
}
