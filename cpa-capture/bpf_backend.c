/* SPDX-License-Identifier: MIT */
/*
 * The BPF backend: loads bpf/capture.bpf.c through its skeleton, feeds it
 * the filters, attaches it to one sampling event per selected CPU, to the
 * scheduler tracepoints (--offcpu) and to the probes, and turns its ring
 * buffer events and drop counters into stream records.
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "capture.skel.h"
#include "cpa-capture.h"
#include "log.h"
#include "perf_ring.h"
#include "timeparse.h"

_Static_assert(CAPTURE_MAX_FRAMES == CPA_MAX_FRAMES, "frame limits differ");
_Static_assert(CAPTURE_MAX_PY == CPA_MAX_PY_FRAMES &&
		       sizeof(struct capture_py_frame) ==
			       sizeof(struct cpa_py_frame) &&
		       CAPTURE_PY_TRUNCATED == CPA_PY_TRUNCATED &&
		       CAPTURE_PY_BROKEN == CPA_PY_BROKEN &&
		       CAPTURE_PY_FRAME_ENTRY == CPA_PY_FRAME_ENTRY,
	       "Python frames must match the stream's");
_Static_assert(CAPTURE_MAX_STACK == CPA_MAX_STACK_BYTES, "stack limits");
_Static_assert((int)DROP_RINGBUF == (int)CPA_LOST_RINGBUF &&
		       (int)DROP_STACK_COPY == (int)CPA_LOST_STACK_COPY &&
		       (int)DROP_PROBE_RATE == (int)CPA_LOST_PROBE_RATE &&
		       (int)DROP_STATE_FULL == (int)CPA_LOST_STATE_FULL,
	       "drop reasons must match the stream's lost reasons");
_Static_assert(CAPTURE_F_FREE == CPA_FLAG_FREE &&
		       CAPTURE_F_ESTIMATE == CPA_FLAG_ESTIMATE &&
		       CAPTURE_F_ALLOC_ID == CPA_RAW_ALLOC_ID,
	       "flags must match the stream's");
_Static_assert((int)CAPTURE_KIND_MEM_VIRT == (int)CPA_KIND_MEM_VIRT &&
		       (int)CAPTURE_KIND_MEM_PHYS == (int)CPA_KIND_MEM_PHYS &&
		       (int)CAPTURE_KIND_MEM_USAGE == (int)CPA_KIND_MEM_USAGE &&
		       (int)CAPTURE_KIND_HEAP_INUSE == (int)CPA_KIND_HEAP_INUSE,
	       "memory kinds must match the stream's");
_Static_assert((int)CAPTURE_KIND_PROBE == (int)CPA_KIND_PROBE &&
		       (int)CAPTURE_KIND_IRQOFF == (int)CPA_KIND_IRQOFF &&
		       (int)CAPTURE_KIND_SCHED_DELAY == (int)CPA_KIND_SCHED_DELAY,
	       "kinds must match the stream's");

static const struct capture_config *cfg;
static struct capture_bpf *skel;
static struct ring_buffer *rb;
/* the ring's consumer and producer positions, mapped read-only beside
 * libbpf's own mapping: their difference is the fill the reader finds */
static void *ring_pos;
static size_t ring_pos_len;
static uint64_t *ring_peak;
static struct bpf_link **links;
static size_t n_links;
static int ncpus;		/* possible CPUs */
static uint64_t *drops_seen;	/* [reason * ncpus + cpu] */
static uint64_t *drops_now;
static int stats_fd = -1;
static uint64_t start_ns;
/* --irqoff: the sampling events' own small rings, which carry only the
 * kernel's THROTTLE and UNTHROTTLE records */
static struct perf_ring *throttle_rings;
static size_t n_throttle_rings;
static uint64_t *throttle_end;	/* per CPU, CLOCK_MONOTONIC ns */
static uint64_t irqoff_throttled;

/* libbpf's messages (verifier logs included) only with --verbose: a
 * failure is reported in one line by the caller. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (!cpa_verbose() || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static void add_link(struct bpf_link *l)
{
	links = cpa_realloc(links, (n_links + 1) * sizeof(*links));
	links[n_links++] = l;
}

static bool is_offcpu_kind(unsigned kind)
{
	return kind >= CPA_KIND_OFFCPU_BLOCKED && kind <= CPA_KIND_SCHED_DELAY;
}

/* Off-CPU kernel stacks are taken inside the sched_switch program. */
static void trim_bpf_frames(struct cpa_raw_sample *s)
{
	unsigned skip = kstack_bpf_frames(s->kernel_ips, s->n_kernel);

	if (!skip)
		return;
	memmove(s->kernel_ips, s->kernel_ips + skip,
		8u * (s->n_kernel - skip));
	s->n_kernel = (uint16_t)(s->n_kernel - skip);
}

/* The Python walk, when the process is one the walker knows and the walk
 * found something to say. */
static void copy_py_frames(struct cpa_raw_sample *s,
			   const struct capture_py_frames *py)
{
	if (!py->version || (!py->n && !py->flags) || py->n > CAPTURE_MAX_PY)
		return;
	s->flags |= CPA_RAW_PY_FRAMES;
	s->py_version = py->version;
	s->py_flags = py->flags;
	s->n_py = py->n;
	memcpy(s->py, py->f, sizeof(py->f[0]) * py->n);
}

/* Which user stack each sample of the timer and probes took (--stats):
 * the frame-pointer chain alone, the snapshot alone (it held the whole
 * stack), or both (it did not). */
static uint64_t took_fp, took_snapshot, took_both;

static void count_path(const struct capture_event *ev)
{
	if (ev->kind != CAPTURE_KIND_ONCPU && ev->kind != CAPTURE_KIND_IRQOFF &&
	    ev->kind != CAPTURE_KIND_PROBE)
		return;
	if (!ev->n_regs)
		return;
	if (!ev->stack_len)
		took_fp++;
	else if (ev->n_user)
		took_both++;
	else
		took_snapshot++;
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct capture_event *ev = data;
	struct cpa_raw_sample s;

	(void)ctx;
	if (size < sizeof(*ev) || ev->stack_len > size - sizeof(*ev) ||
	    ev->n_kernel > CPA_MAX_FRAMES || ev->n_user > CPA_MAX_FRAMES ||
	    ev->n_regs > CAPTURE_NREGS)
		return 0;	/* the program never writes these */
	count_path(ev);
	memset(&s, 0, sizeof(s));
	s.time_ns = ev->mono_ns;
	s.cgroup_id = ev->cgroup_id;
	s.weight = ev->weight;
	s.pid = ev->pid;
	s.tid = ev->tid;
	s.cpu = ev->cpu;
	s.kind = ev->kind;
	s.flags = ev->flags;
	memcpy(s.comm, ev->comm, CPA_COMM_LEN);
	memcpy(s.pcomm, ev->pcomm, CPA_COMM_LEN);
	s.n_kernel = ev->n_kernel;
	s.n_user = ev->n_user;
	s.n_regs = ev->n_regs;
	memcpy(s.kernel_ips, ev->kernel_ips, 8u * ev->n_kernel);
	if (is_offcpu_kind(ev->kind))
		trim_bpf_frames(&s);
	memcpy(s.user_ips, ev->user_ips, 8u * ev->n_user);
	memcpy(s.regs, ev->regs, 8u * ev->n_regs);
	s.stack_len = ev->stack_len;
	s.stack = (const uint8_t *)data + sizeof(*ev);
	if (ev->flags & CAPTURE_F_ALLOC_ID)
		s.alloc_id = ev->alloc_id;
	copy_py_frames(&s, &ev->py);
	/* an add-on's kind is its own to queue (heap sizes are scaled) */
	if (!capture_addons_sample(&s))
		output_queue_sample(&s);
	return 0;
}

/*
 * Ring buffer size: a quarter second of timer samples at full stack size
 * on every CPU (the reader drains every 250 ms and is woken when the ring
 * is half full). Probes and scheduler events come in bursts that no
 * reader keeps up with (a loop of 1000 write()s takes a millisecond), so
 * those modes get room for a burst: 64 MiB holds 2500 probe hits with
 * 16 KiB snapshots (a record has room for 16 KiB, rounded up to a power
 * of two, and the copy's slack: the program writes it in place).
 * --max-queue N sizes it for N samples instead, --ringbuf-size in bytes.
 */
static uint32_t ringbuf_size(void)
{
	uint64_t room = 0;	/* a sample's record holds its snapshot's room */
	while (!cfg->kernel_only && cfg->stack_size && room < cfg->stack_size)
		room = room ? room << 1 : 1;
	uint64_t per_sample = sizeof(struct capture_event) + 16 +
			      (room ? room + CAPTURE_STACK_SLACK : 0);
	uint64_t want = per_sample * cfg->freq *
			cpa_cpuset_count(&cfg->cpus) / 4;
	uint64_t size = 1u << 22;	/* 4 MiB at least */

	if (cfg->ringbuf_size)
		return (uint32_t)cfg->ringbuf_size;
	/* CPA's --max_queue_size: room for so many full samples, the rest
	 * dropped and counted (lost, ringbuf) while unwinding lags */
	if (cfg->max_queue) {
		want = per_sample * cfg->max_queue;
		size = 1u << 16;
		while (size < want && size < (1u << 30))
			size <<= 1;
		return (uint32_t)size;
	}

	if (cfg->n_probes && want < (64u << 20))
		want = 64u << 20;
	if (cfg->offcpu && want < (16u << 20))
		want = 16u << 20;
	/* a page fault burst sends a sample per page */
	if (cfg->mem_modes && want < (64u << 20))
		want = 64u << 20;
	while (size < want && size < (1u << 30))
		size <<= 1;
	return (uint32_t)size;
}

static int fill_filters(void)
{
	uint8_t one = 1;
	int fd;

	fd = bpf_map__fd(skel->maps.pids);
	for (size_t i = 0; i < cfg->n_pids; i++) {
		uint32_t k = (uint32_t)cfg->pids[i];

		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			return -errno;
	}
	fd = bpf_map__fd(skel->maps.tids);
	for (size_t i = 0; i < cfg->n_tids; i++) {
		uint32_t k = (uint32_t)cfg->tids[i];

		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			return -errno;
	}
	fd = bpf_map__fd(skel->maps.comms);
	for (size_t i = 0; i < cfg->n_comms; i++) {
		struct capture_comm k;

		memset(&k, 0, sizeof(k));
		strncpy(k.comm, cfg->comms[i], sizeof(k.comm) - 1);
		if (bpf_map_update_elem(fd, &k, &one, BPF_ANY))
			return -errno;
	}
	fd = bpf_map__fd(skel->maps.cgroups);
	for (size_t i = 0; i < cfg->n_cgroup_ids; i++)
		if (bpf_map_update_elem(fd, &cfg->cgroup_ids[i], &one, BPF_ANY))
			return -errno;
	fd = bpf_map__fd(skel->maps.cgroups_v1);
	for (size_t i = 0; i < cfg->n_cgroup_v1_ids; i++)
		if (bpf_map_update_elem(fd, &cfg->cgroup_v1_ids[i], &one,
					BPF_ANY))
			return -errno;
	fd = bpf_map__fd(skel->maps.cpus);
	for (uint32_t c = 0; c < (uint32_t)ncpus; c++) {
		uint8_t on = cpa_cpuset_has(&cfg->cpus, c);

		if (bpf_map_update_elem(fd, &c, &on, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int attach_sampling(bool cycles)
{
	struct perf_event_attr attr;

	sampling_attr(cfg, cycles, &attr);
	if (cfg->irqoff) {
		/* throttle records carry a time on the samples' clock */
		attr.sample_type = PERF_SAMPLE_TIME;
		attr.sample_id_all = 1;
		attr.use_clockid = 1;
		attr.clockid = CLOCK_MONOTONIC;
		throttle_rings = cpa_calloc(cpa_cpuset_count(&cfg->cpus),
					    sizeof(*throttle_rings));
		throttle_end = cpa_calloc((size_t)ncpus, sizeof(uint64_t));
	}
	for (int c = 0; c < CPA_CPUSET_MAX; c++) {
		struct bpf_link *l;
		int fd, dupfd;

		if (!cpa_cpuset_has(&cfg->cpus, c))
			continue;
		fd = perf_event_open_fd(&attr, -1, c);
		if (fd < 0) {
			cpa_err("cannot open the %s event on CPU %d: %s",
				cycles ? "cycles" : "cpu-clock", c,
				strerror(-fd));
			return -1;
		}
		/* the link owns fd; the throttle ring gets its own copy */
		dupfd = cfg->irqoff ? dup(fd) : -1;
		l = bpf_program__attach_perf_event(skel->progs.on_cpu, fd);
		if (!l) {
			int err = errno;

			close(fd);
			if (dupfd >= 0)
				close(dupfd);
			cpa_err("cannot attach the BPF program to CPU %d's "
				"sampling event: %s", c, strerror(err));
			return -1;
		}
		add_link(l);
		if (dupfd >= 0) {
			if (perf_ring_map(&throttle_rings[n_throttle_rings],
					  dupfd, c, 1) < 0) {
				close(dupfd);
				cpa_warn("CPU %d: throttling cannot be seen; "
					 "IRQ-off gaps may include throttled "
					 "periods", c);
			} else {
				n_throttle_rings++;
			}
		}
	}
	return 0;
}

static void on_throttle(const struct perf_event_header *h, int cpu, void *arg)
{
	uint64_t t;

	(void)arg;
	if (cpu < 0 || cpu >= ncpus || h->size < sizeof(*h) + 8)
		return;
	memcpy(&t, h + 1, sizeof(t));
	if (h->type == PERF_RECORD_THROTTLE)
		throttle_end[cpu] = UINT64_MAX;	/* until unthrottled */
	else if (h->type == PERF_RECORD_UNTHROTTLE)
		throttle_end[cpu] = t;
}

/* A gap that overlaps a throttled period is perf's doing, not the
 * interrupts' being off. */
static bool keep_sample(const struct cpa_raw_sample *s)
{
	if (s->kind != CPA_KIND_IRQOFF || !throttle_end ||
	    s->cpu >= (uint32_t)ncpus ||
	    throttle_end[s->cpu] < s->time_ns - s->weight)
		return true;
	irqoff_throttled++;
	return false;
}

static int attach_offcpu(void)
{
	struct bpf_program *progs[] = { skel->progs.sched_switch,
					skel->progs.sched_wakeup,
					skel->progs.sched_exit };

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_link *l = bpf_program__attach(progs[i]);

		if (!l) {
			cpa_err("cannot attach %s to its raw tracepoint: %s",
				bpf_program__name(progs[i]), strerror(errno));
			return -1;
		}
		add_link(l);
	}
	return 0;
}

/* One system call per reason, so the counters are read once a second
 * (and at stop), not every poll cycle; a LOST record is at most that late. */
#define DROPS_PERIOD_NS CPA_NSEC_PER_SEC

static void read_drops(uint64_t now, bool at_stop)
{
	static uint64_t last;
	int fd = bpf_map__fd(skel->maps.drops);

	if (!at_stop && last && now - last < DROPS_PERIOD_NS)
		return;
	last = now;
	for (uint32_t r = 1; r < DROP_COUNT; r++) {
		if (bpf_map_lookup_elem(fd, &r, drops_now))
			continue;
		for (int c = 0; c < ncpus; c++) {
			uint64_t *seen = &drops_seen[r * ncpus + c];

			if (drops_now[c] > *seen) {
				output_queue_lost(now, r, (uint32_t)c,
						  drops_now[c] - *seen);
				*seen = drops_now[c];
			}
		}
	}
}

/* What ring_buffer__poll does, with the fill the reader found on
 * waking noted in between: the ring's peak level (selfstats.h). */
static int bpf_wait(int timeout_ms)
{
	struct epoll_event ev;
	int rc = epoll_wait(ring_buffer__epoll_fd(rb), &ev, 1, timeout_ms);

	if (rc < 0)
		return -errno;
	if (ring_pos) {
		const volatile unsigned long *cons = ring_pos;
		const volatile unsigned long *prod = (const volatile unsigned long *)
			((const char *)ring_pos + ring_pos_len / 2);
		uint64_t fill = (uint64_t)(*prod - *cons);

		if (fill > *ring_peak)
			*ring_peak = fill;
	}
	rc = ring_buffer__consume(rb);
	return rc < 0 ? rc : 0;
}

static void drain_throttle_rings(void)
{
	for (size_t i = 0; i < n_throttle_rings; i++)
		perf_ring_drain(&throttle_rings[i], on_throttle, NULL);
}

static void bpf_drain(void)
{
	ring_buffer__consume(rb);
	drain_throttle_rings();
	read_drops(mono_now_ns(), false);
}

/* Off-CPU intervals still open at stop are written with the time so far,
 * so a task blocked for the whole capture still shows up. */
static void flush_open_intervals(void)
{
	int fd = bpf_map__fd(skel->maps.offcpu);
	int snap_fd = bpf_map__fd(skel->maps.offcpu_snaps);
	struct offcpu_snap *snap =
		skel->rodata->offcpu_stack_size > OFFCPU_INLINE_STACK ?
			cpa_malloc(sizeof(*snap)) : NULL;
	uint64_t now = mono_now_ns();
	struct offcpu_state st;
	uint32_t key, next;
	uint32_t *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &st) ||
		    st.phase == PHASE_NONE || now < st.start_ns)
			continue;
		unsigned kind = st.phase == PHASE_BLOCKED ?
					CPA_KIND_OFFCPU_BLOCKED :
				st.phase == PHASE_PREEMPTED ?
					CPA_KIND_SCHED_PREEMPTED :
				st.phase == PHASE_YIELDED ?
					CPA_KIND_SCHED_YIELDED :
					CPA_KIND_SCHED_DELAY;
		if (!(cfg->offcpu_want & (1u << kind)) ||
		    now - st.start_ns < cfg->offcpu_min_ns)
			continue;
		struct cpa_raw_sample s;

		memset(&s, 0, sizeof(s));
		s.time_ns = now;
		s.cgroup_id = st.cgroup_id;
		s.weight = now - st.start_ns;
		s.pid = st.pid;
		s.tid = key;
		s.cpu = st.cpu;
		s.kind = (uint16_t)kind;
		s.flags = st.flags;
		memcpy(s.comm, st.comm, CPA_COMM_LEN);
		memcpy(s.pcomm, st.pcomm, CPA_COMM_LEN);
		s.n_kernel = st.n_kernel > CPA_MAX_FRAMES ? 0 : st.n_kernel;
		s.n_user = st.n_user > CPA_MAX_FRAMES ? 0 : st.n_user;
		memcpy(s.kernel_ips, st.kernel_ips, 8u * s.n_kernel);
		memcpy(s.user_ips, st.user_ips, 8u * s.n_user);
		copy_py_frames(&s, &st.py);
		trim_bpf_frames(&s);
		if (st.n_regs == CAPTURE_NREGS) {
			memcpy(s.regs, st.regs, sizeof(st.regs));
			s.n_regs = CAPTURE_NREGS;
			s.stack_len = st.stack_len <= OFFCPU_INLINE_STACK ?
					      st.stack_len : 0;
			s.stack = st.stack;
		} else if (snap && bpf_map_lookup_elem(snap_fd, &key, snap) == 0) {
			memcpy(s.regs, snap->regs, sizeof(snap->regs));
			s.n_regs = CAPTURE_NREGS;
			s.flags |= snap->flags;
			s.stack_len = snap->stack_len <= OFFCPU_MAX_STACK ?
					      snap->stack_len : 0;
			s.stack = snap->stack;
		}
		output_queue_sample(&s);
	}
	free(snap);
}

static void bpf_stop(void)
{
	for (size_t i = 0; i < n_links; i++)
		bpf_link__destroy(links[i]);
	n_links = 0;
	capture_addons_detach();
	ring_buffer__consume(rb);
	drain_throttle_rings();
	if (cfg->offcpu)
		flush_open_intervals();
	read_drops(mono_now_ns(), true);
}

static uint64_t bpf_run_ns(void)
{
	if (stats_fd < 0)
		return 0;
	return capture_prog_ns(skel->progs.on_cpu) +
	       capture_prog_ns(skel->progs.irqoff_switch) +
	       capture_prog_ns(skel->progs.sched_switch) +
	       capture_prog_ns(skel->progs.sched_wakeup) +
	       capture_prog_ns(skel->progs.sched_exit) +
	       capture_prog_ns(skel->progs.probe_tp) +
	       capture_prog_ns(skel->progs.probe_regs) +
	       capture_addons_run_ns();
}

static void bpf_print_stats(double seconds)
{
	fprintf(stderr, "%s:   user stacks: %llu frame pointers, %llu "
		"snapshot, %llu snapshot and frame pointers\n", cpa_progname(),
		(unsigned long long)took_fp, (unsigned long long)took_snapshot,
		(unsigned long long)took_both);
	capture_prog_stats(skel->progs.on_cpu, seconds);
	capture_prog_stats(skel->progs.irqoff_switch, seconds);
	capture_prog_stats(skel->progs.sched_switch, seconds);
	capture_prog_stats(skel->progs.sched_wakeup, seconds);
	capture_prog_stats(skel->progs.probe_tp, seconds);
	capture_prog_stats(skel->progs.probe_regs, seconds);
	capture_addons_print_stats(seconds);
	if (cfg->irqoff)
		fprintf(stderr, "%s: IRQ-off gaps ignored as throttled: %llu\n",
			cpa_progname(), (unsigned long long)irqoff_throttled);
	if (stats_fd < 0)
		fprintf(stderr, "%s: bpf run times unavailable (cannot enable "
			"BPF_STATS_RUN_TIME)\n", cpa_progname());
}

static void bpf_close(void)
{
	for (size_t i = 0; i < n_links; i++)
		bpf_link__destroy(links[i]);
	free(links);
	links = NULL;
	n_links = 0;
	ring_buffer__free(rb);
	rb = NULL;
	if (ring_pos)
		munmap(ring_pos, ring_pos_len);
	ring_pos = NULL;
	capture_addons_close();
	capture_bpf__destroy(skel);
	skel = NULL;
	free(drops_seen);
	free(drops_now);
	drops_seen = drops_now = NULL;
	for (size_t i = 0; i < n_throttle_rings; i++)
		perf_ring_close(&throttle_rings[i]);
	free(throttle_rings);
	free(throttle_end);
	throttle_rings = NULL;
	throttle_end = NULL;
	n_throttle_rings = 0;
	output_set_filter(NULL);
	kstack_trim_free();
	if (stats_fd >= 0)
		close(stats_fd);
	stats_fd = -1;
}

int bpf_backend_open(const struct capture_config *config,
		     const struct capture_features *f, struct backend *b,
		     bool *fallback, char *why, size_t whylen)
{
	bool cycles = f->pmu && !config->irqoff;
	bool user = !config->kernel_only &&
		    (!f->nofault_hazard || config->force_user_stacks);
	int err;

	cfg = config;
	*fallback = false;
	start_ns = mono_now_ns();
	libbpf_set_print(libbpf_print);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus <= 0) {
		snprintf(why, whylen, "cannot count the possible CPUs");
		return -1;
	}
	if (!f->btf) {
		snprintf(why, whylen, "the kernel has no BTF "
			 "(/sys/kernel/btf/vmlinux)");
		*fallback = true;
		return -1;
	}
	skel = capture_bpf__open_opts(capture_open_opts());
	if (!skel) {
		snprintf(why, whylen, "cannot open the BPF object: %s",
			 strerror(errno));
		*fallback = true;
		return -1;
	}
	skel->rodata->stack_size = user ? cfg->stack_size : 0;
	skel->rodata->user_stacks = user;
	skel->rodata->snapshot_auto = !cfg->snapshot_always;
	skel->rodata->include_idle = cfg->include_idle;
	CAPTURE_SET_FILTERS(skel->rodata, cfg);
	/* a gap over 1.1 periods means the timer could not fire */
	skel->rodata->irqoff_gap_ns =
		cfg->irqoff ? CPA_NSEC_PER_SEC * 11 / (10ull * cfg->freq) : 0;
	skel->rodata->offcpu_want = cfg->offcpu ? cfg->offcpu_want : 0;
	skel->rodata->offcpu_min_ns = cfg->offcpu_min_ns;
	skel->rodata->offcpu_stack_size =
		cfg->offcpu && user ? cfg->offcpu_stack_size : 0;
	skel->rodata->probe_rate = cfg->probe_rate;
	skel->rodata->ringbuf_bytes = ringbuf_size();

	bpf_map__set_max_entries(skel->maps.events, ringbuf_size());
	bpf_map__set_max_entries(skel->maps.scratch,
				 (uint32_t)ncpus * SLOT_COUNT);
	bpf_map__set_max_entries(skel->maps.cpus, (uint32_t)ncpus);
	if (skel->rodata->offcpu_stack_size <= OFFCPU_INLINE_STACK)
		bpf_map__set_max_entries(skel->maps.offcpu_snaps, 1);
	bpf_program__set_autoload(skel->progs.on_cpu,
				  !cfg->no_oncpu || cfg->irqoff);
	bpf_program__set_autoload(skel->progs.irqoff_switch, cfg->irqoff);
	bpf_program__set_autoload(skel->progs.sched_switch, cfg->offcpu);
	bpf_program__set_autoload(skel->progs.sched_wakeup, cfg->offcpu);
	bpf_program__set_autoload(skel->progs.sched_exit, cfg->offcpu);
	bpf_program__set_autoload(skel->progs.probe_tp, cfg->n_probes > 0);
	bpf_program__set_autoload(skel->progs.probe_regs, cfg->n_probes > 0);

	err = capture_bpf__load(skel);
	if (err) {
		snprintf(why, whylen, "cannot load the BPF program: %s%s",
			 strerror(-err),
			 err == -EPERM ? " (needs CAP_BPF and CAP_PERFMON)" :
			 cpa_verbose() ? "" : " (--verbose shows libbpf's log)");
		*fallback = true;
		goto fail;
	}
	if (cfg->offcpu)
		kstack_trim_init();
	if (cfg->stats || cfg->selfstats.file || cfg->selfstats.interval_ns) {
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (stats_fd < 0)
			stats_fd = -1;
	}
	err = fill_filters();
	if (err) {
		snprintf(why, whylen, "cannot fill the filter maps: %s",
			 strerror(-err));
		goto fail;
	}
	struct capture_shared sh = {
		.events = skel->maps.events, .drops = skel->maps.drops,
		.pids = skel->maps.pids, .tids = skel->maps.tids,
		.comms = skel->maps.comms, .cgroups = skel->maps.cgroups,
		.cgroups_v1 = skel->maps.cgroups_v1, .cpus = skel->maps.cpus,
		.py_procs_fd = bpf_map__fd(skel->maps.py_procs),
		.fp_procs_fd = bpf_map__fd(skel->maps.fp_procs),
		.ringbuf_bytes = skel->rodata->ringbuf_bytes,
		.ncpus = ncpus, .user_stacks = user,
	};
	if (capture_addons_open(cfg, &sh, why, whylen) < 0)
		goto fail;
	drops_seen = cpa_calloc((size_t)DROP_COUNT * ncpus, sizeof(uint64_t));
	drops_now = cpa_calloc((size_t)ncpus, sizeof(uint64_t));
	rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, NULL,
			      NULL);
	if (!rb) {
		snprintf(why, whylen, "cannot map the BPF ring buffer: %s",
			 strerror(errno));
		goto fail;
	}
	ring_pos_len = 2 * (size_t)sysconf(_SC_PAGESIZE);
	ring_pos = mmap(NULL, ring_pos_len, PROT_READ, MAP_SHARED,
			bpf_map__fd(skel->maps.events), 0);
	if (ring_pos == MAP_FAILED)
		ring_pos = NULL;
	ring_peak = cpa_peak("ringbuf_peak_bytes");
	*cpa_gauge("ringbuf_size_bytes") = skel->rodata->ringbuf_bytes;
	if (bpf_program__autoload(skel->progs.on_cpu) &&
	    attach_sampling(cycles) < 0)
		goto fail_reported;
	if (cfg->offcpu && attach_offcpu() < 0)
		goto fail_reported;
	if (cfg->irqoff) {
		struct bpf_link *l = bpf_program__attach(skel->progs.irqoff_switch);

		if (!l) {
			cpa_err("cannot attach irqoff_switch to its raw "
				"tracepoint: %s", strerror(errno));
			goto fail_reported;
		}
		add_link(l);
	}
	for (size_t i = 0; i < cfg->n_probes; i++) {
		struct bpf_link *l = probe_attach(&cfg->probes[i],
						  skel->progs.probe_tp,
						  skel->progs.probe_regs);
		if (!l)
			goto fail_reported;
		add_link(l);
	}

	output_set_filter(keep_sample);
	b->name = "bpf";
	b->event = cfg->no_oncpu && !cfg->irqoff ? "none" :
		   cycles ? "cycles" : "cpu-clock";
	b->wait = bpf_wait;
	b->drain = bpf_drain;
	b->stop = bpf_stop;
	b->print_stats = bpf_print_stats;
	b->bpf_run_ns = bpf_run_ns;
	b->close = bpf_close;
	return 0;

fail_reported:
	why[0] = 0;	/* the attach error was printed where it happened */
fail:
	bpf_close();
	return -1;
}
