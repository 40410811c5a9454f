/* SPDX-License-Identifier: MIT */
/*
 * The statistics files are written by the stages (some as the service
 * user) and read here bounded (statsfile.h); only their values reach the
 * exposition, under metric and label names this file fixes, and label
 * values are escaped by the writer (promtext.h). A key the file lacks is
 * a series left out, never a zero made up.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"
#include "promtext.h"
#include "selfstats.h"
#include "timeparse.h"
#include "watchdog.h"

/* A family whose HELP and TYPE lines are written before its first
 * sample, so that a family with no sample is left out. */
struct family {
	const char *name, *type, *help;
	bool open;
};

static void open_family(FILE *out, struct family *fam)
{
	if (!fam->open)
		cpa_prom_family(out, fam->name, fam->type, fam->help);
	fam->open = true;
}

static bool get_double(const struct stats_file *f, const char *key,
		       double *v)
{
	const char *s = f ? stats_get(f, key) : NULL;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	*v = strtod(s, &end);
	return !*end;
}

static bool get_u64(const struct stats_file *f, const char *key, uint64_t *v)
{
	return f && stats_get_u64(f, key, v);
}

static void stage_labels(struct cpa_promlabels *l, const char *stage)
{
	cpa_prom_labels_init(l);
	cpa_prom_label(l, "stage", stage);
}

/* One sample per stage holding key, scaled. */
static void per_stage(FILE *out, struct family *fam,
		      const struct metrics_stage *s, size_t n,
		      const char *key, double scale)
{
	struct cpa_promlabels l;

	for (size_t i = 0; i < n; i++) {
		uint64_t u;
		double d;

		stage_labels(&l, s[i].name);
		if (scale == 1 && get_u64(s[i].stats, key, &u)) {
			open_family(out, fam);
			cpa_prom_u64(out, fam->name, &l, u);
		} else if (get_double(s[i].stats, key, &d)) {
			open_family(out, fam);
			cpa_prom_double(out, fam->name, &l, d * scale);
		}
	}
}

static const struct metrics_stage *find(const struct metrics_stage *s,
					size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].name, name) && s[i].stats)
			return &s[i];
	return NULL;
}

/* A stage's own key as one unlabelled sample. */
static void one(FILE *out, struct family *fam, const struct metrics_stage *s,
		const char *key, double scale)
{
	uint64_t u;
	double d;

	if (!s)
		return;
	if (scale == 1 && get_u64(s->stats, key, &u)) {
		open_family(out, fam);
		cpa_prom_u64(out, fam->name, NULL, u);
	} else if (get_double(s->stats, key, &d)) {
		open_family(out, fam);
		cpa_prom_double(out, fam->name, NULL, d * scale);
	}
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* The keys prefix+X of a stage (X not in skip, no rates), each a sample
 * with label=X, X's underscores turned back into the dashes the tools'
 * own names have (samples_offcpu_blocked: kind="offcpu-blocked"). */
static void by_suffix(FILE *out, struct family *fam,
		      const struct metrics_stage *s, const char *prefix,
		      const char *label, const char *const *skip)
{
	size_t plen = strlen(prefix);

	if (!s)
		return;
	for (int i = 0; i < s->stats->n; i++) {
		const struct stats_kv *kv = &s->stats->kv[i];
		char value[64];
		struct cpa_promlabels l;
		uint64_t u;
		bool skipped = false;

		if (strncmp(kv->key, prefix, plen) || !kv->key[plen] ||
		    ends_with(kv->key, "_per_s"))
			continue;
		for (const char *const *k = skip; *k; k++)
			skipped |= !strcmp(kv->key + plen, *k);
		/* a name the tools give: lower case, digits, '_' */
		skipped |= strspn(kv->key + plen, "abcdefghijklmnopqrstuvwxyz"
				  "0123456789_") != strlen(kv->key + plen);
		if (skipped || !stats_get_u64(s->stats, kv->key, &u))
			continue;
		snprintf(value, sizeof(value), "%s", kv->key + plen);
		for (char *p = value; *p; p++)
			if (*p == '_')
				*p = '-';
		stage_labels(&l, s->name);
		cpa_prom_label(&l, label, value);
		open_family(out, fam);
		cpa_prom_u64(out, fam->name, &l, u);
	}
}

/* cpa-unwind's log2 histogram of nanoseconds ("c0,c1,..." where bucket
 * b holds [2^b, 2^(b+1)) ns) as seconds, in buckets of a factor of 4
 * from 1 us to 1 s: enough to tell cached from cold unwinding. */
static void latency(FILE *out, const struct metrics_stage *s)
{
	struct family fam = { "cpa_unwind_latency_seconds", "histogram",
			      "Time to unwind and name one sample.", false };
	enum { FIRST = 10, LAST = 30, N = (LAST - FIRST) / 2 + 1 };
	uint64_t log2[CPA_HIST_MAX] = { 0 }, counts[N] = { 0 };
	uint64_t total = 0, sum_ns = 0;
	double le[N];
	const char *v = s ? stats_get(s->stats, "unwind_latency_ns_log2")
			  : NULL;
	unsigned nb = 0;

	if (!v || !get_u64(s->stats, "unwind_ns", &sum_ns))
		return;
	while (*v && nb < CPA_HIST_MAX) {
		char *end;

		if (*v < '0' || *v > '9')
			return;
		errno = 0;
		log2[nb++] = strtoull(v, &end, 10);
		if (errno || (*end && *end != ','))
			return;
		v = *end ? end + 1 : end;
	}
	for (unsigned b = 0; b < nb; b++) {
		/* all of bucket b lies below 2^(b+1) ns */
		unsigned j = b + 1 <= FIRST ? 0 : (b + 1 - FIRST + 1) / 2;

		if (j < N)
			counts[j] += log2[b];
		total += log2[b];
	}
	for (unsigned j = 0; j < N; j++)
		le[j] = (double)(1ull << (FIRST + 2 * j)) / 1e9;
	open_family(out, &fam);
	cpa_prom_histogram(out, fam.name, NULL, le, counts, N,
			   (double)sum_ns / 1e9, total);
}

/* The series that are one stage's key, as is or scaled to base units. */
static const struct single {
	const char *name, *type, *help, *stage, *key;
	double scale;
} singles[] = {
	{ "cpa_ring_used_peak_bytes", "gauge", "Most bytes the capture's BPF "
	  "ring buffer held when its reader woke, over the last statistics "
	  "interval.", "capture", "ringbuf_peak_bytes", 1 },
	{ "cpa_ring_size_bytes", "gauge", "Size of the capture's BPF ring "
	  "buffer.", "capture", "ringbuf_size_bytes", 1 },
	{ "cpa_unwind_frames_total", "counter", "Frames cpa-unwind named.",
	  "unwind", "frames", 1 },
	{ "cpa_store_written_bytes_total", "counter", "Bytes cpa-store wrote "
	  "into its directory.", "store", "bytes_written", 1 },
	{ "cpa_store_size_bytes", "gauge", "Size of the store's segments, as "
	  "retention counts it.", "store", "store_bytes", 1 },
	{ "cpa_store_windows_total", "counter", "Windows cpa-store wrote.",
	  "store", "windows", 1 },
	{ "cpa_push_lag_seconds", "gauge", "Age of the newest window "
	  "ClickHouse acknowledged, when it did.", "push", "lag_s", 1 },
	{ "cpa_push_acked_timestamp_seconds", "gauge", "End of the newest "
	  "window ClickHouse acknowledged: time() less this is the lag as it "
	  "grows.", "push", "acked_end_ns", 1e-9 },
	{ "cpa_push_rows_total", "counter", "Rows cpa-push inserted into "
	  "ClickHouse.", "push", "rows", 1 },
	{ "cpa_push_sent_bytes_total", "counter", "Bytes cpa-push sent to "
	  "ClickHouse.", "push", "bytes_sent", 1 },
	{ "cpa_push_retries_total", "counter", "Inserts cpa-push tried again.",
	  "push", "retries", 1 },
};

void metrics_print(FILE *out, const struct metrics_stage *s, size_t n,
		   unsigned restarts, unsigned hung)
{
	static const char *const not_kinds[] = { "in", "out", NULL };
	static const char *const not_reasons[] = { NULL };
	const struct metrics_stage *capture = find(s, n, "capture");
	const struct metrics_stage *unwind = find(s, n, "unwind");
	const struct metrics_stage *store = find(s, n, "store");
	struct cpa_promlabels l;
	struct family f;

	f = (struct family){ "cpa_monitor_restarts_total", "counter",
		"Restarts of a pipeline of cpa monitor's stages.", false };
	open_family(out, &f);
	cpa_prom_u64(out, f.name, NULL, restarts);
	f = (struct family){ "cpa_monitor_hung_restarts_total", "counter",
		"Of those, restarts of a stage the watchdog found hung.", false };
	open_family(out, &f);
	cpa_prom_u64(out, f.name, NULL, hung);

	f = (struct family){ "cpa_stage_up", "gauge",
		"Whether the stage's process runs.", false };
	open_family(out, &f);
	for (size_t i = 0; i < n; i++) {
		stage_labels(&l, s[i].name);
		cpa_prom_u64(out, f.name, &l, s[i].running);
	}
	f = (struct family){ "cpa_stage_cpu_seconds_total", "counter",
		"CPU time of the stage's current process, user and system.", false };
	per_stage(out, &f, s, n, "cpu_s", 1);
	f = (struct family){ "cpa_stage_resident_memory_bytes", "gauge",
		"Resident memory of the stage's process.", false };
	per_stage(out, &f, s, n, "rss_kb", 1024);
	f = (struct family){ "cpa_stage_last_report_timestamp_seconds",
		"gauge", "When the stage last wrote its statistics.", false };
	per_stage(out, &f, s, n, "time_ns", 1e-9);
	f = (struct family){ "cpa_stage_samples_in_total", "counter",
		"Samples the stage read from the stage before it.", false };
	per_stage(out, &f, s, n, "samples_in", 1);
	f = (struct family){ "cpa_stage_samples_out_total", "counter",
		"Samples the stage wrote to the stage after it.", false };
	per_stage(out, &f, s, n, "samples_out", 1);

	f = (struct family){ "cpa_stage_input_pipe_bytes", "gauge",
		"Bytes waiting unread in the pipe into the stage.", false };
	for (size_t i = 0; i < n; i++)
		if (s[i].pipe_waiting >= 0) {
			stage_labels(&l, s[i].name);
			open_family(out, &f);
			cpa_prom_u64(out, f.name, &l, (uint64_t)s[i].pipe_waiting);
		}
	f = (struct family){ "cpa_stage_input_pipe_capacity_bytes", "gauge",
		"Size of the pipe into the stage.", false };
	for (size_t i = 0; i < n; i++)
		if (s[i].pipe_capacity >= 0) {
			stage_labels(&l, s[i].name);
			open_family(out, &f);
			cpa_prom_u64(out, f.name, &l,
				     (uint64_t)s[i].pipe_capacity);
		}

	f = (struct family){ "cpa_samples_total", "counter",
		"Samples captured, by kind (rate() is samples per second).", false };
	by_suffix(out, &f, capture, "samples_", "kind", not_kinds);
	f = (struct family){ "cpa_lost_samples_total", "counter",
		"Samples lost, by the stage that lost them and why.", false };
	by_suffix(out, &f, capture, "lost_", "reason", not_reasons);
	uint64_t dropped;

	if (store && get_u64(store->stats, "dropped_samples", &dropped)) {
		stage_labels(&l, store->name);
		cpa_prom_label(&l, "reason", "backlog");
		open_family(out, &f);
		cpa_prom_u64(out, f.name, &l, dropped);
	}

	for (size_t i = 0; i < sizeof(singles) / sizeof(singles[0]); i++) {
		const struct single *o = &singles[i];

		f = (struct family){ o->name, o->type, o->help, false };
		one(out, &f, find(s, n, o->stage), o->key, o->scale);
	}
	latency(out, unwind);
}

static long input_capacity(pid_t pid)
{
	char path[64];
	long n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/fd/0", (int)pid);
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = fcntl(fd, F_GETPIPE_SZ);
	close(fd);
	return n;
}

int metrics_write(const char *path, const struct chain *chains,
		  size_t n_chains, unsigned restarts, unsigned hung)
{
	enum { MAX = 16 };
	static struct stats_file files[MAX];
	struct metrics_stage s[MAX];
	char tmp[4200];
	size_t n = 0;
	FILE *f;
	int err;

	for (size_t c = 0; c < n_chains; c++)
		for (size_t i = 0; i < chains[c].n && n < MAX; i++) {
			const struct proc *p = &chains[c].procs[i];
			uint64_t pid;

			s[n] = (struct metrics_stage){ .name = p->st->name,
						       .running = p->pid > 0,
						       .pipe_waiting = -1,
						       .pipe_capacity = -1 };
			/* the current process's report, not its
			 * predecessor's */
			if (p->pid > 0 && p->stats_path[0] &&
			    stats_load(p->stats_path, &files[n]) == 0 &&
			    stats_get_u64(&files[n], "pid", &pid) &&
			    pid == (uint64_t)p->pid)
				s[n].stats = &files[n];
			if (p->pid > 0 && p->st->input == INPUT_PREVIOUS) {
				s[n].pipe_waiting = input_waiting(p->pid);
				s[n].pipe_capacity = input_capacity(p->pid);
			}
			n++;
		}
	/* and the supervisor's own cost, as a stage would report it */
	if (n < MAX) {
		static struct stats_file own;
		char text[200];
		uint64_t rss;
		double cpu;

		cpa_self_usage(&cpu, &rss);
		snprintf(text, sizeof(text), "cpu_s=%.3f\nrss_kb=%llu\n"
			 "time_ns=%llu\n", cpu,
			 (unsigned long long)(rss / 1024),
			 (unsigned long long)cpa_now_ns());
		stats_parse(text, strlen(text), &own);
		s[n++] = (struct metrics_stage){ .name = "supervise",
						 .running = true,
						 .stats = &own,
						 .pipe_waiting = -1,
						 .pipe_capacity = -1 };
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	metrics_print(f, s, n, restarts, hung);
	if (fclose(f) || rename(tmp, path)) {
		err = errno;
		unlink(tmp);
		errno = err;
		return -1;
	}
	return 0;
}
