// SPDX-License-Identifier: MIT
/* --stats: what the unwinder did and what it cost, printed at the end. */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "dbgfetch.h"
#include "log.h"
#include "safeopen.h"
#include "selfstats.h"
#include "unwind.h"

void stats_record_latency(struct unwind_stats *st, uint64_t ns)
{
	unsigned b = 0;
	while (b + 1 < LAT_BUCKETS && (ns >> (b + 1)))
		b++;
	st->lat[b]++;
	st->lat_total_ns += ns;
}

void stats_record_bench(struct unwind_stats *st, uint64_t ns)
{
	struct unwind_bench *b = &st->bench;
	/* CPA's buckets: under 1 us, then four times wider each, the last
	 * 2048 us and up */
	static const uint64_t upto_us[BENCH_BUCKETS - 1] = {
		1, 4, 16, 64, 256, 512, 1024, 2048 };
	unsigned k = 0;
	while (k < BENCH_BUCKETS - 1 && ns >= upto_us[k] * 1000)
		k++;
	b->hist[k]++;
	if (!b->count || ns < b->min_ns)
		b->min_ns = ns;
	if (ns > b->max_ns)
		b->max_ns = ns;
	b->count++;
	b->total_ns += ns;
}

void stats_bench_poll(struct unwinder *u, uint64_t now_ns)
{
	struct unwind_bench *b = &u->st.bench;
	if (!u->opts.bench_ns)
		return;
	if (!b->since_ns) {
		b->since_ns = now_ns;
		return;
	}
	if (now_ns - b->since_ns < u->opts.bench_ns)
		return;
	static const char *const label[BENCH_BUCKETS] = {
		"<1us", "1-4us", "4-16us", "16-64us", "64-256us",
		"256-512us", "512-1024us", "1024-2048us", "2048-4096us" };
	double secs = (double)(now_ns - b->since_ns) / 1e9;
	char hist[512];
	size_t at = 0;
	for (unsigned k = 0; k < BENCH_BUCKETS; k++)
		if (b->hist[k] && at < sizeof(hist))
			at += (size_t)snprintf(hist + at, sizeof(hist) - at,
					       "%s%s=%" PRIu64, at ? " " : "",
					       label[k], b->hist[k]);
	fprintf(stderr, "%s: bench: DWARF unwind count=%" PRIu64 " rate=%.2f/s "
		"avg=%.2f us min=%.2f us max=%.2f us; %s\n", cpa_progname(),
		b->count, secs > 0 ? (double)b->count / secs : 0.0,
		b->count ? (double)b->total_ns / (double)b->count / 1e3 : 0.0,
		(double)b->min_ns / 1e3, (double)b->max_ns / 1e3,
		at ? hist : "no samples");
	memset(b, 0, sizeof(*b));
	b->since_ns = now_ns;
}

static const char *choice_name(unsigned c)
{
	return c == CHOSE_DWARF ? "dwarf" : c == CHOSE_FP ? "fp" : "none";
}

void stats_print(FILE *f, struct unwinder *u, uint64_t now_ns)
{
	const struct unwind_stats *st = &u->st;
	struct elfcache_stats cs;
	elfcache_stats(u->cache, &cs);
	double secs = (double)(now_ns - st->start_ns) / 1e9;
	uint64_t n = st->raw_samples;

	fprintf(f, "cpa-unwind stats:\n");
	fprintf(f, "  samples        %" PRIu64 " in %.3f s (%.0f/s wall)\n", n,
		secs, secs > 0 ? (double)n / secs : 0.0);
	fprintf(f, "  unwind time    %.3f s (%.0f samples/s, %.0f frames/s)\n",
		(double)st->lat_total_ns / 1e9,
		st->lat_total_ns ? (double)n * 1e9 / (double)st->lat_total_ns : 0.0,
		st->lat_total_ns ? (double)st->frames_out * 1e9 /
					   (double)st->lat_total_ns : 0.0);
	fprintf(f, "  chain chosen   ");
	for (unsigned c = 0; c < CHOICE_COUNT; c++)
		fprintf(f, "%s%s=%" PRIu64, c ? " " : "", choice_name(c),
			st->chose[c]);
	fprintf(f, "\n  dwarf walks    ");
	for (unsigned e = 0; e < WALK_END_COUNT; e++)
		if (st->walk_end[e])
			fprintf(f, "%s=%" PRIu64 " ", walk_end_name(e),
				st->walk_end[e]);
	fprintf(f, "\n  frames         out=%" PRIu64 " dwarf=%" PRIu64
		   " fp-fallback-steps=%" PRIu64 " jit=%" PRIu64
		   " inlined=%" PRIu64 " truncated-roots=%" PRIu64 "\n",
		st->frames_out, st->dwarf_frames, st->fp_steps, st->jit_frames,
		st->inline_frames, st->truncated);
	if (u->jvm) {
		struct jvm_stats js;
		jvm_attacher_stats(u->jvm, &js);
		fprintf(f, "  java attach    requests=%" PRIu64 " maps=%" PRIu64
			   " refused=%" PRIu64 " gone=%" PRIu64 "\n",
			js.requests, js.maps, js.refused, js.gone);
		fprintf(f, "  java layout    read=%" PRIu64 " failed=%" PRIu64
			   "\n", js.layouts, js.layout_failures);
		fprintf(f, "  java code      blobs-read=%" PRIu64 " misses=%"
			   PRIu64 " rechecks=%" PRIu64 " stale=%" PRIu64
			   " resets=%" PRIu64 " debug-reads=%" PRIu64
			   " debug-failures=%" PRIu64 " lookups-refused=%"
			   PRIu64 "\n",
			js.code.blobs_read, js.code.blob_misses,
			js.code.rechecks, js.code.stale, js.code.resets,
			js.code.debug_reads, js.code.debug_failures,
			js.code.lookups_refused);
	}
	fprintf(f, "  unresolved     user=%" PRIu64 " kernel=%" PRIu64 "\n",
		st->unresolved_user, st->unresolved_kernel);
	fprintf(f, "  elf cache      objects=%" PRIu64 " bytes=%" PRIu64
		   " loads=%" PRIu64 " hits=%" PRIu64 " evictions=%" PRIu64
		   " unloads=%" PRIu64 " reloads=%" PRIu64 " load-time=%.3fs"
		   " still-loading=%" PRIu64 "\n",
		cs.objects, cs.bytes, cs.loads, cs.hits, cs.evictions,
		cs.unloads, cs.reloads, (double)cs.load_ns / 1e9,
		cs.load_waits);
	fprintf(f, "  cfi refused    fdes=%" PRIu64 "\n", cs.cfi_refused_fdes);
	struct perfmap_stats ps;
	perfmap_stats(&ps);
	fprintf(f, "  perf maps      loads=%" PRIu64 " incremental=%" PRIu64
		   " bytes-read=%" PRIu64 " waits=%" PRIu64 " timeouts=%" PRIu64
		   " cut=%" PRIu64 " found-late=%" PRIu64 "\n", ps.loads,
		ps.incremental, ps.bytes_read, ps.waits, ps.timeouts, ps.cut,
		st->jit_late);
	fprintf(f, "  v8             without-interpreted-frames-native-stack=%"
		   PRIu64 "\n", st->v8_no_native_stack);
	if (u->opts.inline_frames)
		fprintf(f, "  inline tables  objects=%" PRIu64
			   " over-budget=%" PRIu64 " read-time=%.3fs\n",
			cs.inline_tables, cs.inline_refused,
			(double)cs.inline_ns / 1e9);
	const struct budget *bu = proctab_budget(u->procs);
	fprintf(f, "  process caches perfmap-bytes=%" PRIu64 " pycode-bytes=%"
		   PRIu64 " jvmcode-bytes=%" PRIu64 " per-process=%" PRIu64
		   " total=%" PRIu64 " perfmap-full=%" PRIu64 " pycode-full=%"
		   PRIu64 " jvmcode-full=%" PRIu64 " dropped=%" PRIu64 "\n",
		bu->used_kind[BUDGET_PERFMAP], bu->used_kind[BUDGET_PYCODE],
		bu->used_kind[BUDGET_JVMCODE], bu->per_proc, bu->total,
		bu->full[BUDGET_PERFMAP], bu->full[BUDGET_PYCODE],
		bu->full[BUDGET_JVMCODE], bu->dropped);
	if (u->opts.fetch) {
		struct dbgfetch_stats ds;
		dbgfetch_stats(u->opts.fetch, &ds);
		fprintf(f, "  debuginfod     wanted=%" PRIu64 " fetched=%" PRIu64
			   " attempts=%" PRIu64 " failures=%" PRIu64
			   " refused=%" PRIu64 " renamed=%" PRIu64 "\n",
			ds.wanted, ds.fetched, ds.attempts, ds.failures,
			ds.refused, cs.refetched);
	}
	fprintf(f, "  elf failures   ");
	for (unsigned i = 1; i < ELFOBJ_FAIL_COUNT; i++)
		fprintf(f, "%s=%" PRIu64 " ", elfobj_fail_name(i), cs.fails[i]);
	uint64_t refused[SAFEOPEN_REFUSAL_COUNT];
	safeopen_refusals(refused);
	fprintf(f, "\n  files refused  ");
	for (unsigned i = 0; i < SAFEOPEN_REFUSAL_COUNT; i++)
		fprintf(f, "%s=%" PRIu64 " ", safeopen_refusal_name(i),
			refused[i]);
	fprintf(f, "\n  processes      %u live, kernel symbols %u (reloads %" PRIu64
		   ")\n", proctab_count(u->procs), u->ksyms.syms.n,
		u->ksyms.reloads);
	uint64_t ns, nsb, nk, nkb;
	output_dict_size(u->out, &ns, &nsb, &nk, &nkb);
	fprintf(f, "  dictionaries   strings=%" PRIu64 " (%" PRIu64 " bytes) stacks=%"
		   PRIu64 " (%" PRIu64 " bytes) names-cleaned=%" PRIu64 "\n",
		ns, nsb, nk, nkb, u->out->names_cleaned);
	struct mallinfo2 mi = mallinfo2();
	fprintf(f, "  heap           in-use=%zu free=%zu mapped=%zu\n",
		mi.uordblks, mi.fordblks, mi.hblkhd);
	fprintf(f, "  records        tasks=%" PRIu64 " mmaps=%" PRIu64
		   " lost=%" PRIu64 " passed-through=%" PRIu64
		   " dropped-malformed=%" PRIu64 "\n",
		st->tasks, st->mmaps, st->lost_in, st->passthrough,
		st->dropped);
	fprintf(f, "  allocations    held=%u frees=%" PRIu64 " evicted=%" PRIu64
		   " unknown-frees=%" PRIu64 "\n", allocs_count(u->allocs),
		st->frees, st->allocs_evicted, st->frees_unknown);
	fprintf(f, "  latency per sample (ns):\n");
	for (unsigned b = 0; b < LAT_BUCKETS; b++) {
		if (!st->lat[b])
			continue;
		fprintf(f, "    %10" PRIu64 " - %-10" PRIu64 " %10" PRIu64
			   "  %5.1f%%\n", b ? (uint64_t)1 << b : 0,
			((uint64_t)2 << b) - 1, st->lat[b],
			n ? 100.0 * (double)st->lat[b] / (double)n : 0.0);
	}
}

/* ---- self statistics (lib/base/selfstats.h: --stats-file, SIGUSR1) --------- */

static struct {
	uint64_t *samples, *chose[CHOICE_COUNT], *walk_end[WALK_END_COUNT];
	uint64_t *frames, *truncated, *unresolved_user, *unresolved_kernel;
	uint64_t *jit, *inlined, *lost, *procs, *objects, *bytes, *loads;
	uint64_t *evictions, *unloads, *fails, *lat_p50, *lat_p99, *unwind_ns,
		*lat_hist;
	uint64_t *dict_bytes, *dict_resets, *dropped, *files_refused;
	uint64_t *load_waits, *reloads;
	uint64_t *over_budget, *cfi_refused, *cg_walks, *cg_known;
	uint64_t *inline_tables, *inline_refused;
	uint64_t *dbg_fetched, *dbg_failures, *names_cleaned;
	uint64_t *heap_used, *heap_free;
	uint64_t *perfmap_bytes, *pycode_bytes, *caches_full, *caches_dropped;
	uint64_t *jit_late, *v8_flagless;
	uint64_t *samples_in, *samples_out;
} ctr;

void stats_publish_init(void)
{
	static const char *const chose[CHOICE_COUNT] = {
		"chain_none", "chain_dwarf", "chain_fp"
	};
	char name[48];
	ctr.samples = cpa_stat("samples");
	/* the samples that moved through, as every stage names them: a
	 * stage whose report goes on while they stand still is stuck
	 * (cpa-supervise's watchdog) */
	ctr.samples_in = cpa_stat("samples_in");
	ctr.samples_out = cpa_stat("samples_out");
	for (unsigned c = 0; c < CHOICE_COUNT; c++)
		ctr.chose[c] = cpa_stat(chose[c]);
	for (unsigned e = 0; e < WALK_END_COUNT; e++) {
		snprintf(name, sizeof(name), "walk_%s", walk_end_name(e));
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
		ctr.walk_end[e] = cpa_stat(name);
	}
	ctr.frames = cpa_stat("frames");
	ctr.truncated = cpa_stat("truncated_stacks");
	ctr.unresolved_user = cpa_stat("unresolved_user_frames");
	ctr.unresolved_kernel = cpa_stat("unresolved_kernel_frames");
	ctr.jit = cpa_stat("jit_frames");
	ctr.inlined = cpa_stat("inlined_frames");
	ctr.lost = cpa_stat("lost_upstream");
	ctr.procs = cpa_gauge("processes");
	ctr.objects = cpa_gauge("elf_objects");
	ctr.bytes = cpa_gauge("elf_cache_bytes");
	ctr.loads = cpa_stat("elf_loads");
	ctr.evictions = cpa_stat("elf_evictions");
	ctr.unloads = cpa_stat("elf_unloads");
	ctr.load_waits = cpa_stat("elf_still_loading");
	ctr.reloads = cpa_stat("elf_reloads");
	ctr.fails = cpa_stat("elf_failures");
	ctr.over_budget = cpa_stat("elf_over_budget");
	ctr.cfi_refused = cpa_stat("cfi_fdes_refused");
	ctr.inline_tables = cpa_stat("inline_tables");
	ctr.inline_refused = cpa_stat("inline_over_budget");
	ctr.lat_p50 = cpa_gauge("unwind_latency_p50_ns");
	ctr.lat_p99 = cpa_gauge("unwind_latency_p99_ns");
	/* the whole distribution, for cpa monitor's Prometheus histogram */
	ctr.lat_hist = cpa_histogram("unwind_latency_ns_log2", LAT_BUCKETS);
	ctr.unwind_ns = cpa_stat("unwind_ns");
	ctr.dict_bytes = cpa_gauge("dictionary_bytes");
	ctr.dict_resets = cpa_stat("dictionary_resets");
	ctr.dropped = cpa_stat("dropped_malformed_records");
	ctr.cg_walks = cpa_stat("cgroup_walks");
	ctr.cg_known = cpa_gauge("cgroups_known");
	ctr.files_refused = cpa_stat("files_refused");
	ctr.dbg_fetched = cpa_stat("debuginfod_fetched");
	ctr.dbg_failures = cpa_stat("debuginfod_failures");
	ctr.names_cleaned = cpa_stat("names_cleaned");
	ctr.heap_used = cpa_gauge("heap_used_bytes");
	ctr.heap_free = cpa_gauge("heap_free_bytes");
	ctr.perfmap_bytes = cpa_gauge("perfmap_bytes");
	ctr.pycode_bytes = cpa_gauge("pycode_bytes");
	ctr.caches_full = cpa_stat("process_caches_full");
	ctr.caches_dropped = cpa_stat("process_caches_dropped");
	ctr.jit_late = cpa_stat("jit_found_late");
	ctr.v8_flagless = cpa_gauge("v8_without_native_stack");
}

/* Upper bound of the histogram bucket holding quantile q. */
static uint64_t quantile(const struct unwind_stats *st, double q)
{
	uint64_t want = (uint64_t)((double)st->raw_samples * q), seen = 0;
	for (unsigned b = 0; b < LAT_BUCKETS; b++) {
		seen += st->lat[b];
		if (st->lat[b] && seen >= want)
			return ((uint64_t)2 << b) - 1;
	}
	return 0;
}

void stats_publish(struct unwinder *u)
{
	const struct unwind_stats *st = &u->st;
	struct elfcache_stats cs;
	if (!ctr.samples)
		return;
	elfcache_stats(u->cache, &cs);
	*ctr.samples = st->raw_samples;
	*ctr.samples_in = st->raw_samples + st->frees + st->frees_unknown;
	*ctr.samples_out = output_samples(u->out);
	for (unsigned c = 0; c < CHOICE_COUNT; c++)
		*ctr.chose[c] = st->chose[c];
	for (unsigned e = 0; e < WALK_END_COUNT; e++)
		*ctr.walk_end[e] = st->walk_end[e];
	*ctr.frames = st->frames_out;
	*ctr.truncated = st->truncated;
	*ctr.unresolved_user = st->unresolved_user;
	*ctr.unresolved_kernel = st->unresolved_kernel;
	*ctr.jit = st->jit_frames;
	*ctr.inlined = st->inline_frames;
	*ctr.lost = st->lost_in;
	*ctr.dropped = st->dropped;
	cgroups_stats(u->cgroups, ctr.cg_walks, ctr.cg_known);
	*ctr.procs = proctab_count(u->procs);
	*ctr.objects = cs.objects;
	*ctr.bytes = cs.bytes;
	*ctr.loads = cs.loads;
	*ctr.evictions = cs.evictions;
	*ctr.unloads = cs.unloads;
	*ctr.load_waits = cs.load_waits;
	*ctr.reloads = cs.reloads;
	uint64_t fails = 0;
	for (unsigned i = 1; i < ELFOBJ_FAIL_COUNT; i++)
		fails += cs.fails[i];
	*ctr.fails = fails;
	*ctr.over_budget = cs.fails[ELFOBJ_FAIL_SYMS_BUDGET] +
			   cs.fails[ELFOBJ_FAIL_CFI_BUDGET];
	*ctr.cfi_refused = cs.cfi_refused_fdes;
	*ctr.inline_tables = cs.inline_tables;
	*ctr.inline_refused = cs.inline_refused;
	struct dbgfetch_stats ds;
	dbgfetch_stats(u->opts.fetch, &ds);
	*ctr.dbg_fetched = ds.fetched;
	*ctr.dbg_failures = ds.failures;
	*ctr.lat_p50 = quantile(st, 0.5);
	*ctr.lat_p99 = quantile(st, 0.99);
	memcpy(ctr.lat_hist, st->lat, sizeof(st->lat));
	*ctr.unwind_ns = st->lat_total_ns;
	uint64_t ns, nsb, nk, nkb;
	output_dict_size(u->out, &ns, &nsb, &nk, &nkb);
	*ctr.dict_bytes = nsb + nkb;
	*ctr.dict_resets = u->dict_resets;
	*ctr.names_cleaned = u->out->names_cleaned;
	/* what the tables above leave out (mappings, allocations, libdw's
	 * and a load's scratch), and what malloc holds free, fragmented */
	struct mallinfo2 mi = mallinfo2();
	*ctr.heap_used = mi.uordblks + mi.hblkhd;
	*ctr.heap_free = mi.fordblks;
	const struct budget *b = proctab_budget(u->procs);
	*ctr.perfmap_bytes = b->used_kind[BUDGET_PERFMAP];
	*ctr.pycode_bytes = b->used_kind[BUDGET_PYCODE];
	*ctr.caches_full = b->full[BUDGET_PERFMAP] + b->full[BUDGET_PYCODE] +
			   b->full[BUDGET_JVMCODE];
	*ctr.caches_dropped = b->dropped;
	*ctr.jit_late = st->jit_late;
	*ctr.v8_flagless = st->v8_no_native_stack;
	uint64_t refused[SAFEOPEN_REFUSAL_COUNT];
	safeopen_refusals(refused);
	*ctr.files_refused = 0;
	for (unsigned i = 0; i < SAFEOPEN_REFUSAL_COUNT; i++)
		*ctr.files_refused += refused[i];
}
