/* SPDX-License-Identifier: MIT */
/*
 * The unwinder's state for one run: options, caches, output and the
 * counters --stats reports. sample.c drives it per raw sample; frames.c
 * names addresses; bestof.c picks between the DWARF and FP chains.
 */
#ifndef CPA_UNWIND_UNWIND_H
#define CPA_UNWIND_UNWIND_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "allocs.h"
#include "cgroups.h"
#include "demangle.h"
#include "elfcache.h"
#include "kallsyms.h"
#include "output.h"
#include "proc.h"
#include "walk.h"

enum unwind_mode {
	UNWIND_BEST = 0,	/* DWARF and FP, best-of rule (default) */
	UNWIND_DWARF,		/* DWARF only */
	UNWIND_FP,		/* the capture's frame-pointer chain only */
};

enum chain_choice { CHOSE_NONE = 0, CHOSE_DWARF, CHOSE_FP, CHOICE_COUNT };

#define LAT_BUCKETS 32	/* log2 nanosecond buckets */
#define BENCH_BUCKETS 9	/* CPA's: <1us, 1-4us, 4-16us, ..., 2048-4096us */

/* --bench (CPA's): the samples whose chain DWARF gave, one stats interval
 * at a time: count, time, extremes and CPA's latency buckets. */
struct unwind_bench {
	uint64_t count, total_ns, min_ns, max_ns;
	uint64_t hist[BENCH_BUCKETS];
	uint64_t since_ns;		/* monotonic, the last line */
};

struct unwind_stats {
	uint64_t raw_samples;
	uint64_t chose[CHOICE_COUNT];
	uint64_t walk_end[WALK_END_COUNT];
	uint64_t dwarf_frames, fp_steps, frames_out;
	uint64_t truncated;		/* samples given a [truncated] root */
	uint64_t unresolved_user, unresolved_kernel, jit_frames;
	uint64_t jit_late;		/* found by a read after a miss */
	uint64_t v8_no_native_stack;	/* V8 processes without the flag */
	uint64_t inline_frames;
	uint64_t py_frames, py_unknown;	/* Python frames, unreadable */
	uint64_t tasks, mmaps, lost_in, passthrough;
	uint64_t dropped;		/* malformed pass-through records */
	uint64_t frees;			/* frees given their allocation */
	uint64_t allocs_evicted;	/* --max-allocs full */
	uint64_t frees_unknown;		/* free of an allocation not held */
	uint64_t lat[LAT_BUCKETS];	/* per-sample unwind+symbolize time */
	uint64_t lat_total_ns;
	uint64_t start_ns;		/* monotonic, first record */
	struct unwind_bench bench;	/* --bench, since its last line */
};

/* --load-wait on a live stream, and on a recording (no limit) */
#define LOAD_WAIT_LIVE 150000000ull
#define LOAD_WAIT_FOREVER (UINT64_MAX / 2)

struct unwind_opts {
	enum unwind_mode mode;
	struct name_opts names;
	const char *env_keys;	/* --env KEY[,KEY...] or NULL */
	uint64_t max_cache;
	uint64_t max_object;	/* per ELF object, within max_cache */
	uint64_t load_wait_ns;	/* --load-wait: per sample, for loads */
	uint32_t max_procs;
	uint64_t max_dict;	/* --max-dict: output dictionaries' bound */
	const char *kallsyms;	/* --kallsyms FILE (tests) or NULL */
	const char *debug_dir;	/* --debug-dir, NULL for /usr/lib/debug */
	struct dbgfetch *fetch;	/* debuginfod, NULL when off */
	bool inline_frames;	/* --inline */
	uint32_t max_allocs;	/* --max-allocs: allocations held */
	bool java_attach;	/* ask JVMs for perf maps (live streams) */
	/* CPA's options (README, "Coming from CPA") */
	bool no_symbols;	/* --no-symbols: module+0xOFFSET frames */
	bool full_paths;	/* --full-paths: "name [PATH]", PATH+0xOFFSET */
	const char *env_values;	/* --env-values V[,V...]: user stacks only
				 * of processes whose env label is one */
	uint64_t bench_ns;	/* --bench: a line per this much, 0 off */
};

struct unwinder {
	struct unwind_opts opts;
	struct output *out;
	struct elfcache *cache;
	struct proctab *procs;
	struct cgroups *cgroups;	/* cgroup id -> path */
	struct allocs *allocs;		/* usage-like allocations held */
	uint64_t alloc_lost;		/* not yet sent as a lost record */
	struct jvm_attacher *jvm;	/* NULL without --java-attach */
	struct kallsyms ksyms;
	bool have_ksyms;
	uint64_t now_ns;		/* monotonic, per sample */
	uint64_t sample_rt_ns;		/* the sample's own time (realtime) */
	uint32_t id_truncated, id_unknown, id_unknown_k, id_unknown_py;
	uint32_t id_v8_entry;		/* node.h's NODE_INTERPRETER_ENTRY */
	uint64_t dict_resets;
	struct walk_result dwarf;	/* scratch, kept off the stack */
	uint64_t fp[CPA_MAX_FRAMES];
	uint64_t jfp[CPA_MAX_STACK_DEPTH];	/* interpreted Java frames' fps */
	uint32_t frames[CPA_MAX_STACK_DEPTH];
	uint8_t snapshot[CPA_MAX_STACK_BYTES];	/* decoded from zero runs */
	struct unwind_stats st;
};

void unwinder_init(struct unwinder *u, const struct unwind_opts *opts,
		   struct output *out);
void unwinder_free(struct unwinder *u);

/*
 * Reads r to its end, unwinding into out (run.c). Returns 0, or
 * CPA_EXIT_FAILURE for malformed or truncated input or an output error,
 * the message printed.
 */
int unwind_stream(struct unwinder *u, struct output *out,
		  struct cpa_reader *r, const char *name);

/* Record handlers (sample.c). Malformed payloads return -1 with err. */
int unwind_raw_sample(struct unwinder *u, const struct cpa_record *rec,
		      char *err, size_t errlen);
int unwind_task(struct unwinder *u, const struct cpa_record *rec, char *err,
		size_t errlen);
int unwind_mmap(struct unwinder *u, const struct cpa_record *rec, char *err,
		size_t errlen);
/* Sends the allocations evicted and the frees not known since the last
 * call as one lost record (reason alloc-table). */
void unwind_flush_alloc_lost(struct unwinder *u);

/* Where frame_user found a frame's symbol: the object and the ELF
 * address looked up; obj is NULL when no symbol of a file named it. */
struct frame_at {
	struct elf_obj *obj;
	uint64_t vaddr;
	struct proc *p;
	struct mapping *m;	/* of obj in p */
};

/* Output string id of a user frame at ip (frames.c). exact: ip is the
 * sampled PC rather than a return address. *raw receives the symbol's
 * raw name when there is one (for the best-of rule), else NULL; *at (may
 * be NULL) where the symbol was. */
uint32_t frame_user(struct unwinder *u, struct proc *p, uint64_t ip,
		    bool exact, const char **raw, struct frame_at *at);
uint32_t frame_kernel(struct unwinder *u, uint64_t ip);
/* --inline: ids of the functions inlined at the frame frame_user found
 * at *at, outermost first. */
unsigned frame_inlined(struct unwinder *u, const struct frame_at *at,
		       uint32_t *ids, unsigned max);
/* Raw symbol name at ip, without producing output. */
const char *frame_raw_name(struct unwinder *u, struct proc *p, uint64_t ip,
			   bool exact);

/* bestof.c */
bool is_root_symbol(const char *raw);
/* roottail.c: the frames beyond a root, learnt from a whole DWARF chain
 * ips[0..n), and an FP chain taken without a snapshot completed with
 * them (up to max frames); returns its new length. */
void root_tails_learn(struct unwinder *u, struct proc *p, const uint64_t *ips,
		      unsigned n);
unsigned root_tails_complete(const struct proc *p, uint64_t *ips, unsigned n,
			     unsigned max);
enum chain_choice choose_chain(struct unwinder *u, struct proc *p,
			       const struct walk_result *dwarf,
			       const uint64_t *fp, unsigned nfp);
/* Whether the chosen chain reaches its thread's first frame: a walk that
 * ended where CFI or a zero return address ends a chain, or at a known
 * root function. A chain that does not is rooted at [truncated]. */
bool chain_whole(struct unwinder *u, struct proc *p, enum chain_choice choice,
		 const struct walk_result *dwarf, const uint64_t *fp,
		 unsigned nfp);

/* stats.c */
void stats_record_latency(struct unwind_stats *st, uint64_t ns);
/* --bench: a sample whose chain DWARF gave took ns; and its line, due
 * every opts.bench_ns (printed on stderr as CPA prints its bench) */
void stats_record_bench(struct unwind_stats *st, uint64_t ns);
void stats_bench_poll(struct unwinder *u, uint64_t now_ns);
void stats_print(FILE *f, struct unwinder *u, uint64_t now_ns);
/* --stats-file / --stats-interval / SIGUSR1 counters (lib/base/selfstats.h) */
void stats_publish_init(void);
void stats_publish(struct unwinder *u);

#endif
