/* SPDX-License-Identifier: MIT */
/* cpa-capture's command line. Every bad value exits 2 with one line
 * naming the option and the value. */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "heap.h"
#include "mem.h"
#include "cpa-capture.h"
#include "log.h"
#include "options.h"
#include "selfstats.h"

enum {
	OPT_STACK_SIZE = 0x100,
	OPT_SNAPSHOT,
	OPT_BACKEND,
	OPT_REQUIRE_PMU,
	OPT_CGROUP,
	OPT_CONTAINER,
	OPT_OFFCPU,
	OPT_OFFCPU_PHASE,
	OPT_OFFCPU_MIN,
	OPT_OFFCPU_STACK_SIZE,
	OPT_NO_ONCPU,
	OPT_PROBE,
	OPT_PROBE_RATE,
	OPT_IRQOFF,
	OPT_STATS,
	OPT_FEATURES,
	OPT_FORCE_USER_STACKS,
	OPT_BTF,
	OPT_INCLUDE_IDLE,
	OPT_RINGBUF_SIZE,
	OPT_MAX_QUEUE,
	OPT_MEM,
	OPT_MEM_PROBABILITY,
	OPT_MEM_STACK_SIZE,
	OPT_MEM_MAX_PAGES,
	OPT_MEM_SAMPLE_BYTES,
	OPT_JAVA_ALLOC,
	OPT_JAVA_LIVE,
	OPT_JAVA_SAMPLE_BYTES,
};

static const char doc[] =
	"Samples stacks of the whole machine (or of selected tasks) with eBPF "
	"and writes them to stdout as a cpa stream, for cpa-unwind.\n"
	"\n"
	"  cpa-capture --duration 10 | cpa-unwind | cpa-render > host.svg\n"
	"  cpa-capture --pid 1234 --offcpu --duration 30s > app.cpa\n"
	"  cpa-capture --probe tracepoint:syscalls:sys_enter_write --no-oncpu\n"
	"  cpa-capture --mem usage --no-oncpu --pid 1234 | cpa-unwind --folded\n"
	"\n"
	"Sampling runs until --duration ends or SIGINT/SIGTERM; the stream "
	"then ends with its END record.";

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Sampling:", 1 },
	{ "freq", 'F', "HZ", 0,
	  "on-CPU samples per second per CPU, 1..1000 (default 49)", 1 },
	{ "duration", 'd', "DURATION", 0,
	  "stop after DURATION (10, 10s, 500ms, 5m); default: until SIGINT", 1 },
	{ "stack-size", OPT_STACK_SIZE, "BYTES", 0,
	  "user stack bytes copied per sample for DWARF unwinding: 4K..64K in "
	  "4K steps (default 16K)", 1 },
	{ "snapshot", OPT_SNAPSHOT, "auto|always", 0,
	  "always (default): the stack copy for every sample; auto: "
	  "code that keeps frame pointers (Go, or CFI on the frame "
	  "pointer) takes the frame-pointer chain alone where it stays "
	  "in such code up to libc's roots, the rest the stack copy", 1 },
	{ "kernel-only", 'K', NULL, 0,
	  "kernel stacks only: no user chain, registers or stack copy", 1 },
	{ "backend", OPT_BACKEND, "bpf|perf", 0,
	  "sample with the BPF program (default) or with perf_event ring "
	  "buffers (on-CPU only; chosen automatically when BPF cannot load)", 1 },
	{ "require-pmu", OPT_REQUIRE_PMU, NULL, 0,
	  "fail instead of falling back to cpu-clock when there is no "
	  "hardware cycles event", 1 },
	{ "no-oncpu", OPT_NO_ONCPU, NULL, 0,
	  "no on-CPU samples (with --offcpu or --probe)", 1 },
	{ "include-idle", OPT_INCLUDE_IDLE, NULL, 0,
	  "also sample the idle task (pid 0)", 1 },
	{ "ringbuf-size", OPT_RINGBUF_SIZE, "BYTES", 0,
	  "BPF ring buffer size, a power of two from 64K to 1G (default: "
	  "from --freq, the CPUs and --stack-size; 32M with --probe)", 1 },
	{ "btf", OPT_BTF, "FILE", 0,
	  "the kernel's BTF from FILE (pahole --btf_encode_detached), where "
	  "/sys/kernel/btf/vmlinux is missing", 1 },
	{ "max-queue", OPT_MAX_QUEUE, "N", 0,
	  "size the ring buffer for N samples at --stack-size (a power of "
	  "two, 64K to 1G); past them samples are dropped and counted as "
	  "lost (CPA's --max_queue_size)", 1 },
	{ "force-user-stacks", OPT_FORCE_USER_STACKS, NULL, 0,
	  "copy user stacks in BPF even on kernels 5.19..6.3 (see "
	  "docs/capture.md)", 1 },

	{ NULL, 0, NULL, 0, "Filters (applied in the kernel):", 2 },
	{ "pid", 'p', "PID[,PID...]", 0,
	  "only these processes (all their threads); repeatable", 2 },
	{ "tid", 't', "TID[,TID...]", 0, "only these threads; repeatable", 2 },
	{ "comm", 'c', "NAME", 0,
	  "only tasks whose thread name or process name is NAME; "
	  "repeatable", 2 },
	{ "cgroup", OPT_CGROUP, "PATH", 0,
	  "only tasks in this cgroup directory (v2, or of a v1 controller) or "
	  "below it; repeatable", 2 },
	{ "container", OPT_CONTAINER, "ID", 0,
	  "only tasks of this container (Docker/containerd id or unique "
	  "prefix); repeatable", 2 },
	{ "cpu", 'C', "CPUSET", 0, "only these CPUs, e.g. 0,2-3", 2 },

	{ NULL, 0, NULL, 0, "Off-CPU:", 3 },
	{ "offcpu", OPT_OFFCPU, NULL, 0,
	  "also record off-CPU intervals (weight in ns)", 3 },
	{ "offcpu-phase", OPT_OFFCPU_PHASE, "all|blocked|runqueue", 0,
	  "which intervals: blocked (sleep to wakeup), runqueue (preempted, "
	  "yielded, delay after wakeup) or all (default)", 3 },
	{ "offcpu-min", OPT_OFFCPU_MIN, "DURATION", 0,
	  "shortest interval recorded, per phase, with its unit: 500us, "
	  "1ms (default 1ms)", 3 },
	{ "offcpu-stack-size", OPT_OFFCPU_STACK_SIZE, "BYTES", 0,
	  "user registers and BYTES of user stack copied at switch-out, "
	  "for unwinding through libraries without frame pointers: 0 (frame "
	  "pointers only) or 64..16K in steps of 64 (default 512)", 3 },

	{ NULL, 0, NULL, 0, "Probes and detectors:", 4 },
	{ "probe", OPT_PROBE, "SPEC", 0,
	  "a stack per hit of tracepoint:GROUP:NAME, uprobe:PATH:SYMBOL, "
	  "uprobe:PATH:0xOFFSET, uretprobe:PATH:SYMBOL, kprobe:SYMBOL or "
	  "kretprobe:SYMBOL; repeatable", 4 },
	{ "probe-rate", OPT_PROBE_RATE, "N", 0,
	  "at most N probe samples per second per CPU; more are counted as "
	  "lost (default: no limit)", 4 },
	{ "irqoff", OPT_IRQOFF, NULL, 0,
	  "report gaps between timer samples over 1.1 periods as IRQ-off "
	  "time (best effort; uses cpu-clock)", 4 },

	{ NULL, 0, NULL, 0, "Memory:", 5 },
	{ "mem", OPT_MEM, "MODE[,MODE]", 0,
	  "also record memory by allocating stack: virt (bytes of address "
	  "space mmap, brk and mremap add), phys (bytes of pages user page "
	  "faults allocate), usage (those pages until they are freed again), "
	  "malloc (sampled heap allocations); repeatable", 5 },
	{ "mem-probability", OPT_MEM_PROBABILITY, "PCT", 0,
	  "record PCT percent of the page events of phys and usage, 1..100 "
	  "(default 100); weights are scaled up and marked as estimates", 5 },
	{ "mem-stack-size", OPT_MEM_STACK_SIZE, "BYTES", 0,
	  "user stack bytes copied per memory sample, for unwinding through "
	  "libraries without frame pointers: 0 or 64..16K in steps of 64 "
	  "(default 1K)", 5 },
	{ "mem-max-pages", OPT_MEM_MAX_PAGES, "N", 0,
	  "pages --mem usage tracks at once, 1024..64M (default 256K); "
	  "allocations over it are counted as lost", 5 },
	{ "mem-sample-bytes", OPT_MEM_SAMPLE_BYTES, "BYTES", 0,
	  "--mem malloc: one sample per BYTES allocated, on average "
	  "(default 512K); weights are scaled up and marked as estimates", 5 },
	{ "java-alloc", OPT_JAVA_ALLOC, "PID[,PID...]", 0,
	  "also record the Java objects these JVMs allocate, sampled by a "
	  "JVMTI agent loaded into each; repeatable", 5 },
	{ "java-live", OPT_JAVA_LIVE, "PID[,PID...]", 0,
	  "the same, and the sampled objects still live (freed ones are "
	  "subtracted); repeatable", 5 },
	{ "java-sample-bytes", OPT_JAVA_SAMPLE_BYTES, "BYTES", 0,
	  "Java allocations: one sample per BYTES a thread allocates, on "
	  "average (default 512K); weights are scaled up and marked as "
	  "estimates", 5 },

	{ NULL, 0, NULL, 0, "Other:", 6 },
	{ "stats", OPT_STATS, NULL, 0,
	  "print samples/s, drops and the BPF programs' run time to stderr "
	  "at the end", 6 },
	{ "features", OPT_FEATURES, NULL, 0,
	  "print what this kernel offers as key=value lines and exit "
	  "(read by cpa-serve's capabilities)", 6 },
	{ "verbose", 'v', NULL, 0, "print debug messages", 6 },
	{},
};

static void add_string(char ***list, size_t *n, const char *s)
{
	*list = cpa_realloc(*list, (*n + 1) * sizeof(**list));
	(*list)[(*n)++] = cpa_strdup(s);
}

/* --mem virt,phys: each name once or more, nothing else. */
static unsigned parse_mem_modes(const char *arg)
{
	static const struct {
		const char *name;
		unsigned bit;
	} modes[] = {
		{ "virt", MEM_WANT_VIRT },
		{ "phys", MEM_WANT_PHYS },
		{ "usage", MEM_WANT_USAGE },
		{ "malloc", MEM_WANT_MALLOC },
	};
	unsigned bits = 0;
	const char *p = arg;

	for (;;) {
		size_t len = strcspn(p, ","), i;

		for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			if (len == strlen(modes[i].name) &&
			    !strncmp(p, modes[i].name, len))
				break;
		if (i == sizeof(modes) / sizeof(modes[0]))
			cpa_die_usage("invalid --mem '%s': unknown mode '%.*s' "
				      "(expected virt, phys, usage or malloc, "
				      "comma-separated)", arg, (int)len, p);
		bits |= modes[i].bit;
		if (!p[len])
			return bits;
		p += len + 1;
	}
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct capture_config *cfg = state->input;
	char err[128];
	uint64_t v;

	switch (key) {
	case 'F':
		cfg->freq = cpa_opt_uint("--freq", arg, 1, 1000);
		break;
	case 'd':
		cfg->duration_ns = cpa_opt_duration_ns("--duration", arg);
		if (!cfg->duration_ns)
			cpa_die_usage("invalid --duration '%s': must be more "
				      "than zero", arg);
		break;
	case OPT_STACK_SIZE:
		v = cpa_opt_size("--stack-size", arg);
		if (v < 4096 || v > CAPTURE_MAX_STACK || v % 4096)
			cpa_die_usage("invalid --stack-size '%s': expected 4K "
				      "to 64K in steps of 4K", arg);
		cfg->stack_size = (unsigned)v;
		break;
	case OPT_SNAPSHOT:
		if (!strcmp(arg, "always"))
			cfg->snapshot_always = true;
		else if (!strcmp(arg, "auto"))
			cfg->snapshot_always = false;
		else
			cpa_die_usage("invalid --snapshot '%s': expected auto "
				      "or always", arg);
		break;
	case 'K':
		cfg->kernel_only = true;
		break;
	case OPT_BACKEND:
		if (!strcmp(arg, "bpf"))
			cfg->backend = BACKEND_BPF;
		else if (!strcmp(arg, "perf"))
			cfg->backend = BACKEND_PERF;
		else
			cpa_die_usage("invalid --backend '%s': expected bpf or "
				      "perf", arg);
		break;
	case OPT_REQUIRE_PMU:
		cfg->require_pmu = true;
		break;
	case OPT_NO_ONCPU:
		cfg->no_oncpu = true;
		break;
	case OPT_INCLUDE_IDLE:
		cfg->include_idle = true;
		break;
	case OPT_RINGBUF_SIZE:
		v = cpa_opt_size("--ringbuf-size", arg);
		if (v < 65536 || v > (1u << 30) || (v & (v - 1)))
			cpa_die_usage("invalid --ringbuf-size '%s': expected a "
				      "power of two from 64K to 1G", arg);
		cfg->ringbuf_size = v;
		break;
	case OPT_FORCE_USER_STACKS:
		cfg->force_user_stacks = true;
		break;
	case OPT_MAX_QUEUE:
		cfg->max_queue = cpa_opt_uint("--max-queue", arg, 1, 1u << 24);
		break;
	case OPT_BTF:
		if (!*arg)
			cpa_die_usage("invalid --btf '': expected a file");
		cfg->btf_path = arg;
		break;
	case 'p':
		cfg->n_pids = cpa_opt_uint_list("--pid", arg, 1, 0x3fffffff,
						&cfg->pids, cfg->n_pids);
		break;
	case 't':
		cfg->n_tids = cpa_opt_uint_list("--tid", arg, 1, 0x3fffffff,
						&cfg->tids, cfg->n_tids);
		break;
	case 'c':
		if (!*arg || strlen(arg) >= CPA_COMM_LEN)
			cpa_die_usage("invalid --comm '%s': expected a name of "
				      "1 to %d characters", arg,
				      CPA_COMM_LEN - 1);
		add_string(&cfg->comms, &cfg->n_comms, arg);
		break;
	case OPT_CGROUP:
		if (!*arg)
			cpa_die_usage("invalid --cgroup '': expected a cgroup "
				      "v2 directory");
		add_string(&cfg->cgroups, &cfg->n_cgroups, arg);
		break;
	case OPT_CONTAINER:
		if (strlen(arg) < 4 || strspn(arg, "0123456789abcdef") !=
					       strlen(arg) || strlen(arg) > 64)
			cpa_die_usage("invalid --container '%s': expected a "
				      "hexadecimal container id or a prefix of "
				      "at least 4 digits", arg);
		add_string(&cfg->containers, &cfg->n_containers, arg);
		break;
	case 'C':
		if (cpa_cpuset_parse(arg, &cfg->cpus, err, sizeof(err)) < 0)
			cpa_die_usage("invalid --cpu '%s': %s", arg, err);
		cfg->have_cpus = true;
		break;
	case OPT_OFFCPU:
		cfg->offcpu = true;
		break;
	case OPT_OFFCPU_PHASE:
		if (!strcmp(arg, "all"))
			cfg->offcpu_want = OFFCPU_WANT_BLOCKED |
					   OFFCPU_WANT_PREEMPTED |
					   OFFCPU_WANT_YIELDED |
					   OFFCPU_WANT_DELAY;
		else if (!strcmp(arg, "blocked"))
			cfg->offcpu_want = OFFCPU_WANT_BLOCKED;
		else if (!strcmp(arg, "runqueue"))
			cfg->offcpu_want = OFFCPU_WANT_PREEMPTED |
					   OFFCPU_WANT_YIELDED |
					   OFFCPU_WANT_DELAY;
		else
			cpa_die_usage("invalid --offcpu-phase '%s': expected "
				      "all, blocked or runqueue", arg);
		cfg->offcpu = true;
		break;
	case OPT_OFFCPU_MIN:
		/* a bare number is no unit a reader can be sure of: 1000
		 * was 1000 s here, HUATUO's 1000 us (README, "Coming from
		 * HUATUO"); 0 needs none */
		if (arg[strspn(arg, "0123456789")] == '\0' && strspn(arg, "0") != strlen(arg))
			cpa_die_usage("invalid --offcpu-min '%s': give its unit "
				      "(%sus, %sms, %ss)", arg, arg, arg, arg);
		cfg->offcpu_min_ns = cpa_opt_duration_ns("--offcpu-min", arg);
		cfg->offcpu = true;
		break;
	case OPT_OFFCPU_STACK_SIZE:
		v = cpa_opt_size("--offcpu-stack-size", arg);
		if (v != 0 && (v < 64 || v > OFFCPU_MAX_STACK || v % 64))
			cpa_die_usage("invalid --offcpu-stack-size '%s': "
				      "expected 0 or 64 to 16K in steps of 64",
				      arg);
		cfg->offcpu_stack_size = (unsigned)v;
		cfg->offcpu = true;
		break;
	case OPT_PROBE:
		cfg->probes = cpa_realloc(cfg->probes, (cfg->n_probes + 1) *
						       sizeof(*cfg->probes));
		probe_parse(arg, &cfg->probes[cfg->n_probes++]);
		break;
	case OPT_PROBE_RATE:
		cfg->probe_rate = cpa_opt_uint("--probe-rate", arg, 1, 1000000);
		break;
	case OPT_MEM:
		cfg->mem_modes |= parse_mem_modes(arg);
		break;
	case OPT_MEM_PROBABILITY:
		cfg->mem_probability = cpa_opt_uint("--mem-probability", arg, 1,
						    100);
		break;
	case OPT_MEM_STACK_SIZE:
		v = cpa_opt_size("--mem-stack-size", arg);
		if (v != 0 && (v < 64 || v > MEM_MAX_STACK || v % 64))
			cpa_die_usage("invalid --mem-stack-size '%s': expected "
				      "0 or 64 to 16K in steps of 64", arg);
		cfg->mem_stack_size = (unsigned)v;
		break;
	case OPT_MEM_MAX_PAGES:
		cfg->mem_max_pages = cpa_opt_uint("--mem-max-pages", arg, 1024,
						  64u << 20);
		break;
	case OPT_MEM_SAMPLE_BYTES:
		v = cpa_opt_size("--mem-sample-bytes", arg);
		if (v < 1 || v > (1ull << 40))
			cpa_die_usage("invalid --mem-sample-bytes '%s': expected "
				      "1 to 1T bytes", arg);
		cfg->mem_sample_bytes = v;
		break;
	case OPT_JAVA_ALLOC:
		cfg->n_java_alloc = cpa_opt_uint_list("--java-alloc", arg, 1,
						      0x3fffffff,
						      &cfg->java_alloc,
						      cfg->n_java_alloc);
		break;
	case OPT_JAVA_LIVE:
		cfg->n_java_live = cpa_opt_uint_list("--java-live", arg, 1,
						     0x3fffffff,
						     &cfg->java_live,
						     cfg->n_java_live);
		break;
	case OPT_JAVA_SAMPLE_BYTES:
		v = cpa_opt_size("--java-sample-bytes", arg);
		if (v < 1 || v > 0x7fffffff)
			cpa_die_usage("invalid --java-sample-bytes '%s': "
				      "expected 1 to 2G-1 bytes", arg);
		cfg->java_sample_bytes = v;
		break;
	case OPT_IRQOFF:
		cfg->irqoff = true;
		break;
	case OPT_STATS:
		cfg->stats = true;
		break;
	case OPT_FEATURES:
		cfg->features = true;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &cfg->selfstats;
		break;
	case 'v':
		cpa_set_verbose(true);
		break;
	case ARGP_KEY_ARG:
		cpa_die_usage("unexpected argument '%s' (cpa-capture reads no "
			      "files; see --help)", arg);
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

void capture_parse_options(int argc, char **argv, struct capture_config *cfg)
{
	static const struct argp_child children[] = {
		{ &cpa_selfstats_argp, 0, NULL, 6 },
		{ &cpa_check_argp, 0, NULL, 7 },
		{ 0 }
	};
	static const struct argp argp = {
		.options = opts, .parser = parse_opt, .doc = doc,
		.children = children,
	};

	memset(cfg, 0, sizeof(*cfg));
	cfg->freq = CAPTURE_DEFAULT_FREQ;
	cfg->cgroup_v1_ssid = -1;
	cfg->stack_size = CAPTURE_DEFAULT_STACK;
	/* auto catches a chain that leaves frame-pointer code, but in the
	 * sanitized suite whole-host captures lost the samples of
	 * frame-pointer processes in containers (owners.bats); until that
	 * is understood, auto is asked for */
	cfg->snapshot_always = true;
	cfg->offcpu_min_ns = 1000000;
	cfg->offcpu_stack_size = OFFCPU_DEFAULT_STACK;
	cfg->offcpu_want = OFFCPU_WANT_BLOCKED | OFFCPU_WANT_PREEMPTED |
			   OFFCPU_WANT_YIELDED | OFFCPU_WANT_DELAY;
	cfg->mem_probability = 100;
	cfg->mem_stack_size = MEM_DEFAULT_STACK;
	cfg->mem_max_pages = MEM_DEFAULT_MAX_PAGES;
	cfg->mem_sample_bytes = HEAP_DEFAULT_SAMPLE_BYTES;
	cfg->java_sample_bytes = JAVA_DEFAULT_SAMPLE_BYTES;
	argp_parse(&argp, argc, argv, 0, NULL, cfg);

	bool java = cfg->n_java_alloc || cfg->n_java_live;

	if (cfg->max_queue && cfg->ringbuf_size)
		cpa_die_usage("--max-queue and --ringbuf-size both size the ring "
			      "buffer: give one");

	if (cfg->no_oncpu && !cfg->offcpu && !cfg->n_probes &&
	    !cfg->mem_modes && !java)
		cpa_die_usage("--no-oncpu leaves nothing to record: add "
			      "--offcpu, --probe, --mem or --java-alloc");
	if (cfg->java_sample_bytes != JAVA_DEFAULT_SAMPLE_BYTES && !java)
		cpa_die_usage("--java-sample-bytes samples Java allocations: "
			      "it needs --java-alloc or --java-live");
	if (cfg->mem_sample_bytes != HEAP_DEFAULT_SAMPLE_BYTES &&
	    !(cfg->mem_modes & MEM_WANT_MALLOC))
		cpa_die_usage("--mem-sample-bytes samples heap allocations: it "
			      "needs --mem malloc");
	if (cfg->mem_probability != 100 &&
	    !(cfg->mem_modes & (MEM_WANT_PHYS | MEM_WANT_USAGE)))
		cpa_die_usage("--mem-probability samples page events: it needs "
			      "--mem phys or --mem usage");
	if (cfg->probe_rate && !cfg->n_probes)
		cpa_die_usage("--probe-rate needs at least one --probe");
	if (cfg->irqoff && cfg->no_oncpu)
		cpa_die_usage("--irqoff needs on-CPU timer samples; drop "
			      "--no-oncpu");
	if (cfg->irqoff && cfg->require_pmu)
		cpa_die_usage("--irqoff uses the cpu-clock timer; it cannot "
			      "be combined with --require-pmu");
	const char *needs;

	if (cfg->backend == BACKEND_PERF && capture_needs_bpf(cfg, &needs))
		cpa_die_usage("%s needs the BPF backend; it cannot be used "
			      "with --backend perf", needs);
	if (cfg->have_cpus) {
		struct cpa_cpuset online;

		if (cpa_cpuset_online(&online) == 0) {
			for (unsigned c = 0; c < CPA_CPUSET_MAX; c++)
				if (cpa_cpuset_has(&cfg->cpus, c) &&
				    !cpa_cpuset_has(&online, c))
					cpa_die_usage("invalid --cpu: CPU %u is "
						      "not online", c);
		}
	} else if (cpa_cpuset_online(&cfg->cpus) < 0) {
		cpa_die("cannot read the online CPUs from "
			"/sys/devices/system/cpu/online");
	}
}

void capture_config_free(struct capture_config *cfg)
{
	for (size_t i = 0; i < cfg->n_comms; i++)
		free(cfg->comms[i]);
	for (size_t i = 0; i < cfg->n_cgroups; i++)
		free(cfg->cgroups[i]);
	for (size_t i = 0; i < cfg->n_containers; i++)
		free(cfg->containers[i]);
	for (size_t i = 0; i < cfg->n_probes; i++)
		probe_free(&cfg->probes[i]);
	free(cfg->comms);
	free(cfg->cgroups);
	free(cfg->containers);
	free(cfg->probes);
	free(cfg->pids);
	free(cfg->tids);
	free(cfg->java_alloc);
	free(cfg->java_live);
	free(cfg->cgroup_ids);
	free(cfg->cgroup_v1_ids);
}

/* Modes only the BPF program provides. */
bool capture_needs_bpf(const struct capture_config *cfg, const char **why)
{
	if (cfg->offcpu)
		*why = "--offcpu";
	else if (cfg->n_probes)
		*why = "--probe";
	else if (cfg->irqoff)
		*why = "--irqoff";
	else if (cfg->mem_modes)
		*why = "--mem";
	else if (cfg->n_comms)
		*why = "--comm";
	else if (cfg->n_cgroups)
		*why = "--cgroup";
	else if (cfg->n_containers)
		*why = "--container";
	else
		return false;
	return true;
}

bool capture_process_selected(const struct capture_config *cfg, uint32_t pid)
{
	if (!cfg->n_pids)
		return true;
	for (size_t i = 0; i < cfg->n_pids; i++)
		if (cfg->pids[i] == pid)
			return true;
	return false;
}
