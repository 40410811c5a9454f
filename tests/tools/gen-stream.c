/* SPDX-License-Identifier: MIT */
/*
 * gen-stream: a deterministic symbolized cpa stream with known times,
 * labels and stacks, for testing and benchmarking the store.
 *
 *   gen-stream [--start SEC] [--duration SEC] [--rate N] [--seed N]
 *              [--stacks N] [--procs N] [--offcpu PCT] [--truth FILE]
 *              [--truth-from SEC] [--folded] [--no-end] [--pace MS]
 *              [--lost-from SEC --lost-for SEC] [--proc-stacks]
 *
 * Samples are spread evenly over [start, start + duration) at --rate per
 * second. Each comes from one of --procs processes (pid 1000+p, comm
 * "procP", two threads, some with a container and an env value) with a
 * stack drawn, skewed towards the first, from a pool of --stacks stacks
 * (with --proc-stacks, from the process's own share of the pool: stacks
 * whose number is the process's modulo --procs).
 * --truth writes one tab-separated line per sample:
 *   SEC NSEC KIND PID TID CPU CGROUP COMM THREAD CONTAINER ENV STACK WEIGHT
 * which the tests aggregate independently of cpa-query (--truth-from:
 * only for samples from epoch second SEC on). --folded writes
 * "comm;stack weight" lines instead of a stream. --pace sleeps MS after
 * each second of samples, so a reader can watch a live writer.
 * --lost-from/--lost-for: the samples of those seconds (counted from
 * --start) are lost: a LOST record (count 1, ring buffer) each instead,
 * and no truth line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symstream.h"

struct gen {
	uint64_t start_s, duration_s, rate, seed, nstacks, nprocs;
	uint64_t truth_from_s, lost_from_s, lost_for_s;
	unsigned offcpu_pct, pace_ms;
	const char *truth;
	int folded, no_end, proc_stacks;
	uint64_t rng;
};

static uint64_t rnd(struct gen *g)
{
	/* xorshift64*: fixed, so every run of a seed is the same stream */
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return g->rng * 0x2545f4914f6cdd1dull;
}

/* Stack k: frames "main;fn_A;fn_B;...", some ending in kernel frames. */
static int make_stack(uint64_t k, char frames[][48], int max)
{
	uint64_t h = k * 0x9e3779b97f4a7c15ull + 7;
	int depth = 3 + (int)(h % 10);
	if (depth > max)
		depth = max;
	snprintf(frames[0], 48, "main");
	for (int i = 1; i < depth; i++) {
		h = h * 6364136223846793005ull + 1442695040888963407ull;
		if (i >= depth - 2 && k % 5 == 0)
			snprintf(frames[i], 48, "ksys_fn_%u_[k]",
				 (unsigned)(h >> 40) % 200);
		else
			snprintf(frames[i], 48, "fn_%u",
				 (unsigned)((h >> 33) % (500 + k % 5000)));
	}
	return depth;
}

static void usage(void)
{
	fprintf(stderr, "usage: gen-stream [--start SEC] [--duration SEC] "
			"[--rate N] [--seed N] [--stacks N] [--procs N] "
			"[--offcpu PCT] [--truth FILE] [--truth-from SEC] "
			"[--folded] [--no-end] [--pace MS] "
			"[--lost-from SEC --lost-for SEC] [--proc-stacks]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct gen g = {.start_s = 1764496800, .duration_s = 60, .rate = 100,
			.seed = 1, .nstacks = 200, .nprocs = 5,
			.offcpu_pct = 10};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NUM(name, field)                                                    \
	if (!strcmp(a, name)) {                                             \
		if (!v)                                                     \
			usage();                                            \
		g.field = strtoull(v, NULL, 10);                            \
		i++;                                                        \
		continue;                                                   \
	}
		NUM("--start", start_s)
		NUM("--duration", duration_s)
		NUM("--rate", rate)
		NUM("--seed", seed)
		NUM("--stacks", nstacks)
		NUM("--procs", nprocs)
		NUM("--offcpu", offcpu_pct)
		NUM("--pace", pace_ms)
		NUM("--truth-from", truth_from_s)
		NUM("--lost-from", lost_from_s)
		NUM("--lost-for", lost_for_s)
#undef NUM
		if (!strcmp(a, "--truth") && v) {
			g.truth = v;
			i++;
		} else if (!strcmp(a, "--folded")) {
			g.folded = 1;
		} else if (!strcmp(a, "--no-end")) {
			g.no_end = 1;
		} else if (!strcmp(a, "--proc-stacks")) {
			g.proc_stacks = 1;
		} else {
			usage();
		}
	}
	if (!g.rate || !g.nstacks || !g.nprocs)
		usage();
	g.rng = g.seed * 0x9e3779b97f4a7c15ull + 1;

	FILE *truth = NULL;
	if (g.truth && !(truth = fopen(g.truth, "w"))) {
		perror(g.truth);
		return 1;
	}
	struct cpa_symwriter sw;
	if (!g.folded && cpa_symw_init(&sw, STDOUT_FILENO) < 0) {
		perror("stdout");
		return 1;
	}
	if (!g.folded) {
		cpa_write_meta(&sw.w, CPA_META_SOURCE, "gen-stream");
		cpa_write_meta(&sw.w, CPA_META_FREQUENCY, "100");
	}

	uint64_t total = g.duration_s * g.rate;
	uint64_t step = 1000000000ull / g.rate;
	char frames[16][48];
	for (uint64_t i = 0; i < total; i++) {
		uint64_t r = rnd(&g);
		uint64_t t = g.start_s * 1000000000ull + i * step + r % step;
		unsigned p = (unsigned)(rnd(&g) % g.nprocs);
		unsigned th = (unsigned)(rnd(&g) % 2);
		double u = (double)(rnd(&g) >> 11) / 9007199254740992.0;
		uint64_t k = (uint64_t)(u * u * (double)g.nstacks);
		/* --proc-stacks: each process its own share of the pool, as
		 * programs have stacks of their own */
		if (g.proc_stacks)
			k = k - k % g.nprocs + p;
		int kind = (unsigned)(rnd(&g) % 100) < g.offcpu_pct
				   ? CPA_KIND_OFFCPU_BLOCKED : CPA_KIND_ONCPU;
		uint64_t weight = kind == CPA_KIND_ONCPU
					  ? 1 : 1000 + rnd(&g) % 5000000;
		unsigned cpu = (unsigned)(rnd(&g) % 4);
		char comm[32], thread[32], container[32] = "", env[32] = "";
		snprintf(comm, sizeof(comm), "proc%u", p);
		snprintf(thread, sizeof(thread), "worker%u", th);
		if (p % 2)
			snprintf(container, sizeof(container), "ctr%u", p);
		if (p % 3 == 0)
			snprintf(env, sizeof(env), "env%u", p % 2);
		uint32_t pid = 1000 + p, tid = pid + th;
		int depth = make_stack(k, frames, 16);

		uint64_t rel_s = t / 1000000000ull - g.start_s;
		if (!g.folded && rel_s >= g.lost_from_s &&
		    rel_s < g.lost_from_s + g.lost_for_s) {
			struct cpa_lost l = {.time_ns = t, .count = 1,
					     .reason = CPA_LOST_RINGBUF,
					     .cpu = cpu};
			cpa_write_lost(&sw.w, &l);
			continue;
		}
		if (truth && t / 1000000000ull >= g.truth_from_s) {
			uint64_t sec = t / 1000000000ull;
			uint64_t nsec = t % 1000000000ull;
			fprintf(truth, "%" PRIu64 "\t%" PRIu64 "\t%d\t%u\t%u\t%u"
				"\t%u\t%s\t%s\t%s\t%s\t", sec, nsec, kind, pid,
				tid, cpu,
				100 + p, comm, thread, container, env);
			for (int f = 0; f < depth; f++)
				fprintf(truth, "%s%s", f ? ";" : "", frames[f]);
			fprintf(truth, "\t%" PRIu64 "\n", weight);
		}
		if (g.folded) {
			if (kind != CPA_KIND_ONCPU)
				printf("%s;", cpa_kind_marker((unsigned)kind));
			printf("%s", comm);
			for (int f = 0; f < depth; f++)
				printf(";%s", frames[f]);
			printf(" %" PRIu64 "\n", weight);
			continue;
		}
		uint32_t ids[16];
		for (int f = 0; f < depth; f++)
			ids[f] = cpa_symw_cstr(&sw, frames[f]);
		struct cpa_sample s = {
			.time_ns = t, .weight = weight, .cgroup_id = 100 + p,
			.pid = pid, .tid = tid, .cpu = cpu,
			.kind = (uint16_t)kind,
			.stack_id = cpa_symw_stack(&sw, ids, (uint32_t)depth),
			.comm_id = cpa_symw_cstr(&sw, comm),
			.thread_id = cpa_symw_cstr(&sw, thread),
			.container_id = cpa_symw_cstr(&sw, container),
			.env_id = cpa_symw_cstr(&sw, env),
		};
		if (cpa_write_sample(&sw.w, &s) < 0) {
			fprintf(stderr, "gen-stream: write: %s\n",
				strerror(sw.w.err));
			return 1;
		}
		if (g.pace_ms && (i + 1) % g.rate == 0) {
			cpa_writer_flush(&sw.w);
			if (truth)
				fflush(truth);
			struct timespec ts = {g.pace_ms / 1000,
					      (long)(g.pace_ms % 1000) * 1000000};
			nanosleep(&ts, NULL);
		}
	}
	if (truth && fclose(truth)) {
		perror(g.truth);
		return 1;
	}
	if (g.folded)
		return fflush(stdout) ? 1 : 0;
	int r = g.no_end ? cpa_writer_flush(&sw.w) : cpa_write_end(&sw.w);
	cpa_symw_free(&sw);
	if (r < 0) {
		fprintf(stderr, "gen-stream: write: %s\n", strerror(-r));
		return 1;
	}
	return 0;
}
