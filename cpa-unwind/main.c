// SPDX-License-Identifier: MIT
/*
 * cpa-unwind: raw samples in, named stacks out.
 *
 *   cpa-capture | cpa-unwind | cpa-render > flame.svg
 *   cpa-capture --duration 5 | cpa-unwind --folded
 *
 * Reads the cpa stream (stdin or FILE), turns each RAW_SAMPLE into a
 * symbolized SAMPLE (or a folded line with --folded), keeps per-process
 * state from TASK and MMAP records, and passes LOST, META and unknown
 * records through. See docs/unwinding.md for how the stacks are made.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dbgfetch.h"
#include "labels.h"
#include "log.h"
#include "options.h"
#include "selfstats.h"
#include "unwind.h"

enum {
	OPT_NO_DEMANGLE = 0x100,
	OPT_GO_SHORT,
	OPT_ENV, OPT_ENV_VALUES, OPT_NO_SYMBOLS, OPT_FULL_PATHS, OPT_BENCH,
	OPT_MAX_CACHE,
	OPT_MAX_OBJECT,
	OPT_LOAD_WAIT,
	OPT_MAX_PROCS,
	OPT_MAX_ALLOCS,
	OPT_MAX_DICT,
	OPT_STATS,
	OPT_UNWIND,
	OPT_KALLSYMS,
	OPT_INLINE,
	OPT_NO_INLINE,
	OPT_DEBUG_DIR,
	OPT_NO_DEBUGINFOD,
	OPT_DEBUGINFOD_CACHE,
	OPT_JAVA_ATTACH,
	OPT_NO_JAVA_ATTACH,
};

struct args {
	struct unwind_opts u;
	bool folded, stats;
	struct cpa_selfstats_opts selfstats;
	struct cpa_labels labels;
	const char *input;
	bool load_wait_set;	/* --load-wait given */
	bool no_debuginfod;
	const char *debuginfod_cache;
	int java_attach;	/* -1 unset, else --[no-]java-attach */
	bool bench;		/* --bench */
};

static const char doc[] =
	"Turn raw samples from cpa-capture into named stacks.\n\n"
	"Reads the cpa stream from FILE or stdin; writes the symbolized stream "
	"(or folded text with --folded) to stdout.\v"
	"Kernel frames end in _[k], JIT frames (from /tmp/perf-PID.map) in "
	"_[j]; a user address without a symbol is shown as module+0xADDR, "
	"in anonymous memory as [anon:NAME] (the kernel's name) or [anon]. "
	"Stripped objects are named from separate debug files: "
	"--debug-dir, .gnu_debuglink, and the debuginfod servers in "
	"DEBUGINFOD_URLS (fetched in the background). "
	"User stacks are unwound with DWARF CFI from the stack snapshot and "
	"compared with the frame-pointer chain (--unwind best); "
	"docs/unwinding.md describes the rule.\n\n"
	"Exit status: 0 on success, 1 on bad or truncated input or an output "
	"error, 2 on bad options.";

static const struct argp_option options[] = {
	{ "folded", 'f', NULL, 0, "Write folded text instead of the stream", 0 },
	{ "labels", 'l', "LIST", 0,
	  "Root labels of folded lines: comm,pid,tid,thread,container,env,cpu "
	  "or none (default comm)", 0 },
	{ "unwind", OPT_UNWIND, "MODE", 0,
	  "best (default): DWARF or FP per sample; dwarf; fp", 0 },
	{ "no-demangle", OPT_NO_DEMANGLE, NULL, 0,
	  "Keep C++ and Rust names mangled", 0 },
	{ "inline", OPT_INLINE, NULL, 0,
	  "Add the functions inlined at each PC, from DWARF debug info, as "
	  "name_[i] frames (default; docs/unwinding.md says what it costs)",
	  0 },
	{ "no-inline", OPT_NO_INLINE, NULL, 0,
	  "Read no DWARF for inlined functions", 0 },
	{ "java-attach", OPT_JAVA_ATTACH, NULL, 0,
	  "Read each JVM sampled from its memory (vmStructs: code cache, "
	  "frames, inlined methods); one without them is asked for its perf "
	  "map over HotSpot's attach protocol (default when the input is a "
	  "pipe, not a file)", 0 },
	{ "no-java-attach", OPT_NO_JAVA_ATTACH, NULL, 0,
	  "Read no JVM, attach to none: only maps it writes itself are read",
	  0 },
	{ "go-short-names", OPT_GO_SHORT, NULL, 0,
	  "Shorten Go import paths (github.com/x/pkg.F -> pkg.F)", 0 },
	{ "env", OPT_ENV, "KEY[,KEY...]", 0,
	  "Label each sample with the first of these environment variables "
	  "its process has", 0 },
	{ "env-values", OPT_ENV_VALUES, "VALUE[,VALUE...]", 0,
	  "With --env, unwind user stacks only of processes whose env label "
	  "is one of these; the others keep their kernel frames (CPA's "
	  "--parse_env_values)", 0 },
	{ "no-symbols", OPT_NO_SYMBOLS, NULL, 0,
	  "Name no user frame by symbol or perf map: module+0xOFFSET, raw "
	  "(CPA's --disable_sym); kernel frames keep their names", 0 },
	{ "full-paths", OPT_FULL_PATHS, NULL, 0,
	  "Name frames with their object's path as the process maps it: "
	  "'name [PATH]', PATH+0xOFFSET (CPA's --include_full_path)", 0 },
	{ "bench", OPT_BENCH, NULL, 0,
	  "Every --stats-interval (default 1s), a line of the DWARF-unwound "
	  "samples' count, rate, mean, least and most time, and CPA's "
	  "latency buckets (CPA's --bench)", 0 },
	{ "max-cache", OPT_MAX_CACHE, "SIZE", 0,
	  "Memory for ELF symbols and unwind tables, and the processes' perf "
	  "maps and code objects (a quarter each, half in all; default 24M)",
	  0 },
	{ "max-object", OPT_MAX_OBJECT, "SIZE", 0,
	  "Memory one ELF object may cost; a bigger one is refused, its "
	  "frames left unnamed (default: the --max-cache size)", 0 },
	{ "load-wait", OPT_LOAD_WAIT, "DURATION", 0,
	  "Longest a sample waits for the ELF objects it needs to load; "
	  "past it their frames are written module+offset until loaded "
	  "(default 150ms; no limit when the input is a file)", 0 },
	{ "max-procs", OPT_MAX_PROCS, "N", 0,
	  "Processes kept without an exit record (default 32768)", 0 },
	{ "max-allocs", OPT_MAX_ALLOCS, "N", 0,
	  "Allocations of mem-usage, heap-inuse and java-live held until "
	  "their free, which comes without a stack (default 1M); past it older ones are "
	  "evicted, counted as lost (alloc-table)", 0 },
	{ "max-dict", OPT_MAX_DICT, "SIZE", 0,
	  "Memory for the output's string and stack dictionaries; past it "
	  "they start over with a reset record (default 4M)", 0 },
	{ "debug-dir", OPT_DEBUG_DIR, "DIR", 0,
	  "Separate debug files by build id under DIR/.build-id/ "
	  "(default /usr/lib/debug)", 0 },
	{ "no-debuginfod", OPT_NO_DEBUGINFOD, NULL, 0,
	  "Fetch no debug files from the servers in DEBUGINFOD_URLS", 0 },
	{ "debuginfod-cache", OPT_DEBUGINFOD_CACHE, "DIR", 0,
	  "Where fetched debug files are kept (default "
	  "$CACHE_DIRECTORY/debuginfod, else ~/.cache/cpa/debuginfod)", 0 },
	{ "kallsyms", OPT_KALLSYMS, "FILE", 0,
	  "Kernel symbols from FILE instead of /proc/kallsyms", 0 },
	{ "stats", OPT_STATS, NULL, 0,
	  "Print unwinding statistics to stderr at the end", 0 },
	{ "verbose", 'v', NULL, 0, "Say more on stderr", 0 },
	{ 0 }
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct args *a = state->input;
	char err[256];

	switch (key) {
	case 'f':
		a->folded = true;
		break;
	case 'l':
		if (cpa_labels_parse(arg, &a->labels, err, sizeof(err)) < 0)
			cpa_die_usage("invalid --labels '%s': %s", arg, err);
		break;
	case OPT_UNWIND:
		if (!strcmp(arg, "best"))
			a->u.mode = UNWIND_BEST;
		else if (!strcmp(arg, "dwarf"))
			a->u.mode = UNWIND_DWARF;
		else if (!strcmp(arg, "fp"))
			a->u.mode = UNWIND_FP;
		else
			cpa_die_usage("invalid --unwind '%s': expected best, "
				      "dwarf or fp", arg);
		break;
	case OPT_NO_DEMANGLE:
		a->u.names.demangle = false;
		break;
	case OPT_INLINE:
	case OPT_NO_INLINE:
		a->u.inline_frames = key == OPT_INLINE;
		break;
	case OPT_JAVA_ATTACH:
	case OPT_NO_JAVA_ATTACH:
		a->java_attach = key == OPT_JAVA_ATTACH;
		break;
	case OPT_GO_SHORT:
		a->u.names.go_short = true;
		break;
	case OPT_ENV:
		if (!*arg || arg[0] == ',' || strstr(arg, ",,") || strchr(arg, '='))
			cpa_die_usage("invalid --env '%s': expected KEY[,KEY...]",
				      arg);
		a->u.env_keys = arg;
		break;
	case OPT_ENV_VALUES:
		if (!*arg || arg[0] == ',' || strstr(arg, ",,"))
			cpa_die_usage("invalid --env-values '%s': expected "
				      "VALUE[,VALUE...]", arg);
		a->u.env_values = arg;
		break;
	case OPT_NO_SYMBOLS:
		a->u.no_symbols = true;
		break;
	case OPT_FULL_PATHS:
		a->u.full_paths = true;
		break;
	case OPT_BENCH:
		a->bench = true;
		break;
	case OPT_MAX_CACHE:
		a->u.max_cache = cpa_opt_size("--max-cache", arg);
		break;
	case OPT_MAX_OBJECT:
		a->u.max_object = cpa_opt_size("--max-object", arg);
		break;
	case OPT_LOAD_WAIT:
		a->u.load_wait_ns = cpa_opt_duration_ns("--load-wait", arg);
		a->load_wait_set = true;
		break;
	case OPT_MAX_PROCS:
		a->u.max_procs = (uint32_t)cpa_opt_uint("--max-procs", arg, 1,
							1u << 22);
		break;
	case OPT_MAX_ALLOCS:
		a->u.max_allocs = (uint32_t)cpa_opt_uint("--max-allocs", arg,
							 1, 1u << 28);
		break;
	case OPT_MAX_DICT:
		a->u.max_dict = cpa_opt_size("--max-dict", arg);
		break;
	case OPT_KALLSYMS:
		a->u.kallsyms = arg;
		break;
	case OPT_DEBUG_DIR:
		if (!*arg)
			cpa_die_usage("invalid --debug-dir '': expected a "
				      "directory");
		a->u.debug_dir = arg;
		break;
	case OPT_NO_DEBUGINFOD:
		a->no_debuginfod = true;
		break;
	case OPT_DEBUGINFOD_CACHE:
		if (!*arg)
			cpa_die_usage("invalid --debuginfod-cache '': expected "
				      "a directory");
		a->debuginfod_cache = arg;
		break;
	case OPT_STATS:
		a->stats = true;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->selfstats;
		break;
	case 'v':
		cpa_set_verbose(true);
		break;
	case ARGP_KEY_ARG:
		if (a->input)
			argp_error(state, "only one input FILE");
		a->input = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * Upstream ends its stream cleanly on the same SIGINT/SIGTERM a terminal
 * or systemd sends the whole pipeline, so the first signal only lets the
 * stream run out; a second one stops at once.
 */
static volatile sig_atomic_t signalled;

static void on_signal(int sig)
{
	if (signalled++) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

int main(int argc, char **argv)
{
	static const struct argp_child children[] = {
		{ &cpa_selfstats_argp, 0, NULL, 0 },
		{ &cpa_check_argp, 0, NULL, 0 },
		{ 0 }
	};
	static const struct argp argp = { options, parse_opt, "[FILE]", doc,
					  children, NULL, NULL };
	struct args a = {
		.u = {
			.mode = UNWIND_BEST,
			.names = { .demangle = true },
			.inline_frames = true,
			.max_cache = 24ull << 20,
			.load_wait_ns = LOAD_WAIT_LIVE,
			.max_procs = 32768,
			.max_allocs = 1u << 20,
			.max_dict = 4ull << 20,
		},
		.java_attach = -1,
	};
	cpa_options_init(argv[0]);
	/* Big blocks (symbol tables, CFI rows, a load's section copies) are
	 * mapped on their own and unmapped when freed: glibc's default would
	 * raise the threshold after the first such free and serve the next
	 * from the heap, where a freed table stays resident. */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
	/* One arena for the sample and loader threads: what a load frees
	 * in a loader's own arena stayed there, fragmented, apart from what
	 * the main arena could reuse. */
	mallopt(M_ARENA_MAX, 1);
	cpa_labels_default(&a.labels);
	argp_parse(&argp, argc, argv, 0, NULL, &a);
	if (a.u.env_values && !a.u.env_keys)
		cpa_die_usage("--env-values needs --env KEY[,KEY...]: the env "
			      "label it is matched against");
	if (a.bench)
		a.u.bench_ns = a.selfstats.interval_ns ? a.selfstats.interval_ns
						       : 1000000000ull;
	cpa_options_checked();

	const char *name = a.input ? a.input : "<stdin>";
	int fd = 0;
	if (a.input && (fd = open(a.input, O_RDONLY | O_CLOEXEC)) < 0)
		cpa_die("%s: %s", a.input, strerror(errno));
	/* A recording is unwound as fully as it can be, and the same way
	 * every time: only a live stream (a pipe) has samples to keep
	 * flowing while objects load. */
	struct stat in_st;
	bool recording = fstat(fd, &in_st) == 0 && S_ISREG(in_st.st_mode);
	if (!a.load_wait_set && recording)
		a.u.load_wait_ns = LOAD_WAIT_FOREVER;
	/* One object bigger than the whole cache would hold the cache past
	 * its bound however much else it dropped. */
	if (!a.u.max_object)
		a.u.max_object = a.u.max_cache;
	/* A recording's pids may be other processes by now. */
	a.u.java_attach = a.java_attach < 0 ? !recording : a.java_attach;

	/* Debug files from DEBUGINFOD_URLS: fetched in the background, or,
	 * for a recording, waited for like its objects. */
	char cache_buf[4096], err[512];
	if (!a.no_debuginfod) {
		const char *cache = a.debuginfod_cache
			? a.debuginfod_cache
			: dbgfetch_default_cache(cache_buf, sizeof(cache_buf));
		a.u.fetch = dbgfetch_new(cache, a.u.load_wait_ns ==
						       LOAD_WAIT_FOREVER,
					 err, sizeof(err));
		if (!a.u.fetch && err[0])
			cpa_warn("debuginfod cache %s; fetching nothing", err);
	}

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	elf_version(EV_CURRENT);

	struct cpa_reader r;
	if (cpa_reader_init(&r, fd, name, NULL, 0) < 0)
		cpa_die("%s", r.err);

	struct output out;
	int rc = output_init(&out, 1, a.folded, &a.labels);
	if (rc < 0)
		cpa_die("<stdout>: %s", strerror(-rc));
	struct unwinder *u = cpa_calloc(1, sizeof(*u));
	unwinder_init(u, &a.u, &out);
	cpa_selfstats_init(a.selfstats.file, a.selfstats.interval_ns);
	stats_publish_init();

	int status = unwind_stream(u, &out, &r, name);
	if (a.stats)
		stats_print(stderr, u, cpa_mono_ns());
	stats_publish(u);
	if (a.selfstats.file)
		cpa_selfstats_report();
	cpa_selfstats_fini();
	unwinder_free(u);
	free(u);
	dbgfetch_free(a.u.fetch);
	output_free(&out);
	cpa_reader_free(&r);
	if (fd > 0)
		close(fd);
	return status;
}
