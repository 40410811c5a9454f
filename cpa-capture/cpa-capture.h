/* SPDX-License-Identifier: MIT */
/*
 * cpa-capture's modules and what they share. Each .c file is one concern:
 *   options.c       command line -> struct capture_config
 *   features.c      what this kernel can do, reported in one line
 *   kernel.c        kernel releases with known hazards
 *   filters.c       --cgroup / --container resolved to cgroup ids
 *   kstack.c        the BPF frames at the top of scheduler kernel stacks
 *   output.c        time-ordered queue of records -> the cpa stream
 *   procscan.c      tasks and executable mappings already running (/proc)
 *   perf_ring.c     perf_event_open and its mmap ring buffer
 *   tracking.c      exec, fork, exit and new mappings (perf side-band)
 *   python.c        Python interpreters found, described to the walker
 *   bpf_backend.c   the BPF program: on-CPU, off-CPU, probes, IRQ-off
 *   probes.c        --probe specs, parsed and attached
 *   memory.c        --mem virt, phys, usage: the memory BPF object
 *   heap.c          --mem malloc: uprobes on the C library's allocator
 *   java.c          --java-alloc, --java-live: the JVMTI agent's samples
 *   perf_backend.c  on-CPU sampling without BPF
 *   main.c          the poll loop
 */
#ifndef CPA_CAPTURE_H
#define CPA_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "selfstats.h"
#include "stream.h"

#define CAPTURE_DEFAULT_FREQ 49
#define CAPTURE_DEFAULT_STACK (16 * 1024)
/* The reader wakes on this timer, not per sample (the BPF side forces a
 * wakeup only when the ring is half full): each cycle costs a few system
 * calls whatever it carries, so on a quiet host the period is the cost. */
#define CAPTURE_POLL_MS 250
/* Records are written in time order; a record this recent may still be
 * racing with an older one being committed on another CPU, so it waits
 * for the next poll cycle. */
#define CAPTURE_HOLD_NS (5 * 1000000ull)
/* A process is still sampled after its exit is reported: do_exit goes on
 * freeing its memory and files after the exit tracepoint and the perf
 * exit record. Its exit record sorts this much later than it happened, so
 * it still follows the process's last sample (its own time is kept). */
#define CAPTURE_EXIT_GRACE_NS (100 * 1000000ull)

enum backend_kind { BACKEND_AUTO, BACKEND_BPF, BACKEND_PERF };

enum probe_type {
	PROBE_TRACEPOINT,
	PROBE_UPROBE,
	PROBE_URETPROBE,
	PROBE_KPROBE,
	PROBE_KRETPROBE,
};

struct probe_spec {
	const char *spec;	/* as given, for messages */
	enum probe_type type;
	char *a;		/* tracepoint group, or uprobe binary path */
	char *b;		/* tracepoint name, or function symbol */
	uint64_t offset;	/* uprobe offset when b is NULL */
};

struct capture_config {
	unsigned freq;
	uint64_t duration_ns;		/* 0: until SIGINT/SIGTERM */
	unsigned stack_size;		/* user stack snapshot bytes */
	bool snapshot_always;		/* --snapshot=always: no FP-only path */
	bool kernel_only;
	bool no_oncpu;
	bool include_idle;
	enum backend_kind backend;
	bool require_pmu;
	bool force_user_stacks;
	const char *btf_path;		/* --btf: the kernel's BTF from a file */
	uint64_t ringbuf_size;		/* BPF ring buffer bytes, 0: automatic */
	uint64_t max_queue;		/* --max-queue: samples it holds, 0 */

	uint64_t *pids;
	size_t n_pids;
	uint64_t *tids;
	size_t n_tids;
	char **comms;
	size_t n_comms;
	char **cgroups;
	size_t n_cgroups;
	char **containers;
	size_t n_containers;
	uint64_t *cgroup_ids;		/* --cgroup and --container, resolved */
	size_t n_cgroup_ids;		/* ... to cgroup v2 ids */
	uint64_t *cgroup_v1_ids;	/* ... to ids of one v1 hierarchy */
	size_t n_cgroup_v1_ids;
	int cgroup_v1_ssid;		/* its controller's subsystem id; -1 */
	bool have_cpus;
	struct cpa_cpuset cpus;		/* --cpu, else the online CPUs */

	bool offcpu;
	unsigned offcpu_want;		/* OFFCPU_WANT_* bits */
	uint64_t offcpu_min_ns;
	unsigned offcpu_stack_size;	/* 0: frame pointers only */

	struct probe_spec *probes;
	size_t n_probes;
	unsigned probe_rate;

	unsigned mem_modes;		/* MEM_WANT_* bits (bpf/mem.h) */
	unsigned mem_probability;	/* percent of page events, 1..100 */
	unsigned mem_stack_size;	/* user stack bytes per memory sample */
	uint32_t mem_max_pages;		/* --mem usage pages tracked at once */
	uint64_t mem_sample_bytes;	/* --mem malloc: mean bytes per sample */

	uint64_t *java_alloc;		/* --java-alloc pids */
	size_t n_java_alloc;
	uint64_t *java_live;		/* --java-live pids */
	size_t n_java_live;
	uint64_t java_sample_bytes;	/* the agent's sampling interval */

	bool irqoff;
	bool stats;
	bool features;	/* --features: print them and exit */
	struct cpa_selfstats_opts selfstats;	/* --stats-file/-interval */
};

/* options.c */
void capture_parse_options(int argc, char **argv, struct capture_config *cfg);
void capture_config_free(struct capture_config *cfg);
bool capture_needs_bpf(const struct capture_config *cfg, const char **why);
/* True unless --pid was given without this process: side-band records
 * (tasks, mappings) are filtered by process only. */
bool capture_process_selected(const struct capture_config *cfg, uint32_t pid);

/* features.c */
struct capture_features {
	bool btf;		/* the kernel's BTF, or --btf's */
	const char *btf_path;	/* --btf FILE, checked; NULL: the kernel's */
	bool pmu;		/* hardware cycles can be opened */
	bool kprobes;
	bool fentry;
	bool uprobes;
	bool cgroup_sample;	/* PERF_SAMPLE_CGROUP */
	bool nofault_hazard;	/* kernel 5.19..6.3: see docs/capture.md */
	char release[65];
};
void capture_probe_features(struct capture_features *f);
/* --btf FILE in place of /sys/kernel/btf/vmlinux (a BTF pahole made,
 * for a kernel that does not show its own): exits 2 with one line when
 * it cannot be read or is not a kernel's BTF, as CPA's preflight does */
void capture_use_btf(struct capture_features *f, const char *path);
/* kernel.c: true for releases 5.19..6.3 (see docs/capture.md) */
bool kernel_nofault_hazard(const char *release);
/* --features: key=value lines on stdout, for programs */
void capture_print_features(const struct capture_features *f);
void capture_report_features(const struct capture_features *f,
			     const char *backend, const char *event);

/* filters.c: resolves --cgroup and --container to cgroup v2 ids in
 * cfg->cgroup_ids, or to ids of a v1 controller's hierarchy in
 * cfg->cgroup_v1_ids. Exits with a clear error when one does not exist. */
void capture_resolve_cgroups(struct capture_config *cfg);

/* The filter switches of a BPF object's rodata (bpf/filter.bpf.h), the
 * same for every object of the capture. */
#define CAPTURE_SET_FILTERS(rodata, cfg)                                      \
	do {                                                                  \
		(rodata)->filter_pid = (cfg)->n_pids > 0;                     \
		(rodata)->filter_tid = (cfg)->n_tids > 0;                     \
		(rodata)->filter_comm = (cfg)->n_comms > 0;                   \
		(rodata)->filter_cgroup =                                     \
			(cfg)->n_cgroups + (cfg)->n_containers > 0;           \
		(rodata)->cgroup_v1_ssid = (cfg)->cgroup_v1_ssid;             \
		(rodata)->filter_cpu = (cfg)->have_cpus;                      \
	} while (0)

/* kstack.c: leading frames of a raw tracepoint program's kernel stack
 * that belong to BPF itself (0 when unsure) */
void kstack_trim_init(void);
unsigned kstack_bpf_frames(const uint64_t *ips, unsigned n);
void kstack_trim_free(void);

/* output.c */
struct output_stats {
	uint64_t samples[CPA_KIND_COUNT];
	uint64_t lost[CPA_LOST_REASON_COUNT];
	uint64_t tasks, mmaps;
};
int output_init(int fd);
/* Monotonic now, and its CLOCK_REALTIME equivalent offset. */
uint64_t mono_now_ns(void);
/* Queue records stamped with CLOCK_MONOTONIC ns; the output converts to
 * CLOCK_REALTIME and writes them in time order. */
void output_queue_sample(const struct cpa_raw_sample *s);
void output_queue_task(const struct cpa_task *t);
void output_queue_mmap(const struct cpa_mmap *m);
void output_queue_lost(uint64_t mono_ns, uint32_t reason, uint32_t cpu,
		       uint64_t count);
int output_meta(const char *key, const char *value);
/* A last look at each sample when it is written, with everything drained
 * before it known (time still CLOCK_MONOTONIC); false drops it. */
void output_set_filter(bool (*keep)(const struct cpa_raw_sample *s));
/* Writes every queued record stamped before cutoff (all for UINT64_MAX)
 * and flushes. 0, or -errno when stdout failed (EPIPE: reader gone). */
int output_emit(uint64_t cutoff_mono_ns);
int output_end(void);
/* Frees the output; flush=false drops what was not written yet. */
void output_close(bool flush);
const struct output_stats *output_stats(void);
int output_error(void);

/* procscan.c: TASK_SEEN and MMAP records for what is already running */
void procscan_emit(const struct capture_config *cfg, uint64_t mono_ns);
/* Group leader comm of a process, from /proc (perf backend). */
int procscan_comm(uint32_t pid, uint32_t tid, char comm[CPA_COMM_LEN]);

/* tracking.c: perf side-band events (mmap2, comm-exec, fork, exit) */
int tracking_open(const struct capture_config *cfg);
void tracking_drain(void);
void tracking_close(void);

/* backends: start, then drain each poll cycle, then stop */
struct backend {
	const char *name;
	const char *event;	/* "cpu-clock", "cycles" ... */
	/* Waits up to timeout_ms for data; returns -EINTR on a signal. */
	int (*wait)(int timeout_ms);
	void (*drain)(void);
	/* Detaches, drains what is left, flushes open intervals. */
	void (*stop)(void);
	void (*print_stats)(double seconds);
	/* Sum of the BPF programs' run time so far in ns (0 without BPF or
	 * without BPF_STATS_RUN_TIME). */
	uint64_t (*bpf_run_ns)(void);
	void (*close)(void);
};

/* Returns 0, or -1 having printed why; *fallback is set when the failure
 * should let plain on-CPU sampling fall back to the perf backend. */
int bpf_backend_open(const struct capture_config *cfg,
		     const struct capture_features *f, struct backend *b,
		     bool *fallback, char *why, size_t whylen);
int perf_backend_open(const struct capture_config *cfg,
		      const struct capture_features *f, struct backend *b);

/* probes.c */
void probe_parse(const char *arg, struct probe_spec *p);
void probe_free(struct probe_spec *p);
struct bpf_program;
struct bpf_link;
/* Checks that a probe can be attached here (the tracepoint exists, the
 * binary is readable, the kernel has kprobes); exits 1 saying why not. */
void probe_check(const struct probe_spec *p, const struct capture_features *f);
/* Attaches one probe; returns the link or NULL having printed why. */
struct bpf_link *probe_attach(const struct probe_spec *p,
			      struct bpf_program *tp_prog,
			      struct bpf_program *regs_prog);

/* bpf_shared.c: the BPF plumbing beneath the backend and the add-ons:
 * the main object's ring buffer and filter maps, which the backend hands
 * to each add-on's open, and the run time and --stats line of programs */
struct bpf_map;
struct bpf_object;
struct capture_shared {
	const struct bpf_map *events, *drops;
	const struct bpf_map *pids, *tids, *comms, *cgroups, *cgroups_v1;
	const struct bpf_map *cpus;
	int py_procs_fd;		/* the Python walker's processes */
	int fp_procs_fd;		/* processes keeping frame pointers */
	uint64_t ringbuf_bytes;
	int ncpus;
	bool user_stacks;
};
/* An object loaded beside the main one takes over its ring buffer, drop
 * counters and filter maps, found by their names: 0 or -errno. */
int capture_share_maps(struct bpf_object *obj, const struct capture_shared *sh);
/* Open options of every BPF object: the kernel BTF CO-RE relocates
 * against, --btf's when given. */
struct bpf_object_open_opts;
const struct bpf_object_open_opts *capture_open_opts(void);
void capture_set_btf(const char *path);
uint64_t capture_prog_ns(struct bpf_program *p);
void capture_prog_stats(struct bpf_program *p, double seconds);
/* the same for every program of an object (NULL: none) */
uint64_t capture_object_ns(struct bpf_object *obj);
void capture_object_stats(struct bpf_object *obj, double seconds);

/*
 * addons.c: what is captured beside the backend's samples (memory, the
 * heap, Java, Python), each add-on one table; any entry may be NULL.
 *
 *   open        with the BPF backend, after the main object's load: its
 *               own objects on the shared maps; 0 (also when it is not
 *               asked for), or -1 with why (empty when printed)
 *   start       once the stream's start records are out, any backend
 *   on_mapping  a new executable mapping of a selected process, or one
 *               it had at the start (at_start, from /proc)
 *   on_exec, on_exit   a selected process's exec and exit
 *   kinds, sample      the event kinds of the shared ring's samples it
 *               takes (a bit per kind), and takes one (to queue it)
 *   drain       each poll cycle
 *   detach      the backend stops: nothing more into the shared ring
 *               (before the backend's last drain of it)
 *   stop        the capture ends: what it still holds is queued (after
 *               the backend stopped)
 *   object      its BPF object (NULL when not loaded), whose programs'
 *               run time and --stats lines the backend reports with its
 *               own
 *   meta_mode   its part of the stream's "mode" meta value
 *   close       frees what open made
 */
struct capture_addon {
	const char *name;
	int (*open)(const struct capture_config *cfg,
		    const struct capture_shared *sh, char *why, size_t whylen);
	void (*start)(const struct capture_config *cfg);
	void (*on_mapping)(const struct cpa_mmap *m, bool at_start);
	void (*on_exec)(uint32_t pid, uint64_t time_ns);
	void (*on_exit)(uint32_t pid, uint64_t time_ns);
	uint32_t kinds;
	void (*sample)(struct cpa_raw_sample *s);
	void (*drain)(void);
	void (*detach)(void);
	void (*stop)(void);
	struct bpf_object *(*object)(void);
	void (*meta_mode)(const struct capture_config *cfg, char *buf,
			  size_t len);
	void (*close)(void);
};

/* memory.c, heap.c, java.c, python.c */
extern const struct capture_addon memory_addon, heap_addon, java_addon,
	python_addon, fpframes_addon;

/* Each of these calls every add-on that has the entry, in table order. */
int capture_addons_open(const struct capture_config *cfg,
			const struct capture_shared *sh, char *why,
			size_t whylen);
void capture_addons_start(const struct capture_config *cfg);
void capture_addons_mapping(const struct cpa_mmap *m, bool at_start);
void capture_addons_exec(uint32_t pid, uint64_t time_ns);
void capture_addons_exit(uint32_t pid, uint64_t time_ns);
/* true when an add-on took the sample */
bool capture_addons_sample(struct cpa_raw_sample *s);
void capture_addons_drain(void);
void capture_addons_detach(void);
void capture_addons_stop(void);
uint64_t capture_addons_run_ns(void);
void capture_addons_print_stats(double seconds);
void capture_addons_meta_mode(const struct capture_config *cfg, char *buf,
			      size_t len);
void capture_addons_close(void);
/* The file of an add-on's mapping, opened as the process sees it and by
 * lib/base/safeopen.h's rules (a regular file of at most max_size bytes,
 * the mapping's inode): an fd, or -1. */
struct stat;
int capture_open_mapping(const struct cpa_mmap *m, uint64_t max_size,
			 struct stat *st);

/* heap.c: the unbiased weight of an object of size bytes sampled once per
 * mean bytes on average (exponential intervals), as heap and Java samples
 * are. */
uint64_t capture_unbiased_weight(uint64_t size, double mean);

/* java.c: the agent attached to each --java-alloc/--java-live JVM (a
 * JVM that cannot be is named in one line and left out) at the start;
 * its samples drained each poll cycle; at the stop, what the agents
 * still queued */
#define JAVA_DEFAULT_SAMPLE_BYTES (512 * 1024)
/* The agent's records in buf taken as a drain takes them, as those of a
 * JVM of pid 1 (the fuzz target's way in): *taken = the bytes of whole
 * records; 1 at an END record, -1 with err on bad input. */
int java_records(const uint8_t *buf, size_t len, bool live, size_t *taken,
		 char *err, size_t errlen);

extern volatile int capture_stop;

/* Where main returns to in libc: the root of every FP chain of a process
 * run by the same libc (fpframes.c). */
extern void *capture_main_return;

#endif
