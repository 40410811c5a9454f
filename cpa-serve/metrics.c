/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <dirent.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "gate.h"
#include "jobs.h"
#include "metrics.h"
#include "promtext.h"
#include "selfstats.h"

static unsigned long counts[6];	/* 1xx .. 5xx, and others */
static void (*writers[8])(FILE *out);
static unsigned n_writers;
static double start_s;

void metrics_add(void (*write)(FILE *out))
{
	if (n_writers < sizeof(writers) / sizeof(writers[0]))
		writers[n_writers++] = write;
}

void metrics_count(int status)
{
	int k = status / 100;

	__atomic_fetch_add(&counts[k >= 1 && k <= 5 ? k : 0], 1,
			   __ATOMIC_RELAXED);
}

static unsigned open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n ? n - 1 : 0;	/* less opendir's own */
}

static void serve_families(FILE *f)
{
	static const char *const classes[6] = { "other", "1xx", "2xx", "3xx",
						"4xx", "5xx" };
	static const char *const results[] = { "accepted", "handed_over",
					       "timed_out", "evicted",
					       "refused" };
	struct cpa_promlabels l;
	struct gate_stats g;
	unsigned long by_result[5];
	uint64_t rss;
	double cpu;

	cpa_prom_family(f, "cpa_serve_build_info", "gauge",
			"cpa-serve's version, as a label; always 1.");
	cpa_prom_labels_init(&l);
	cpa_prom_label(&l, "version", PACKAGE_VERSION);
	cpa_prom_u64(f, "cpa_serve_build_info", &l, 1);
	cpa_prom_family(f, "cpa_serve_jobs_active", "gauge",
			"Jobs pending, running or stopping.");
	cpa_prom_u64(f, "cpa_serve_jobs_active", NULL, jobs_active());
	cpa_prom_family(f, "cpa_serve_requests_total", "counter",
			"Requests answered, by status class.");
	for (int i = 0; i < 6; i++) {
		cpa_prom_labels_init(&l);
		cpa_prom_label(&l, "class", classes[i]);
		cpa_prom_u64(f, "cpa_serve_requests_total", &l,
			     __atomic_load_n(&counts[i], __ATOMIC_RELAXED));
	}
	gate_get_stats(&g);
	by_result[0] = g.accepted;
	by_result[1] = g.handed_over;
	by_result[2] = g.timed_out;
	by_result[3] = g.evicted;
	by_result[4] = g.refused;
	cpa_prom_family(f, "cpa_serve_connections_total", "counter",
			"Connections by what became of them at the gate.");
	for (size_t i = 0; i < 5; i++) {
		cpa_prom_labels_init(&l);
		cpa_prom_label(&l, "result", results[i]);
		cpa_prom_u64(f, "cpa_serve_connections_total", &l,
			     by_result[i]);
	}
	cpa_self_usage(&cpu, &rss);
	cpa_prom_family(f, "cpa_serve_cpu_seconds_total", "counter",
			"CPU time of cpa-serve, user and system (its job "
			"children not included).");
	cpa_prom_double(f, "cpa_serve_cpu_seconds_total", NULL, cpu);
	cpa_prom_family(f, "cpa_serve_resident_memory_bytes", "gauge",
			"Resident memory of cpa-serve.");
	cpa_prom_u64(f, "cpa_serve_resident_memory_bytes", NULL, rss);
	cpa_prom_family(f, "cpa_serve_open_fds", "gauge",
			"File descriptors cpa-serve holds open.");
	cpa_prom_u64(f, "cpa_serve_open_fds", NULL, open_fds());
	cpa_prom_family(f, "cpa_serve_start_time_seconds", "gauge",
			"When cpa-serve started, since the epoch.");
	cpa_prom_double(f, "cpa_serve_start_time_seconds", NULL, start_s);
}

void metrics_answer(struct api_request *r, struct answer *a)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)r;
	serve_families(f);
	for (unsigned i = 0; i < n_writers; i++)
		writers[i](f);
	fclose(f);
	a->kind = ANSWER_TEXT;
	a->status = 200;
	a->text = text;
	a->content_type = CPA_PROM_CONTENT_TYPE;
}

/* The process's start, before main(). */
__attribute__((constructor)) static void note_start(void)
{
	start_s = (double)cpa_now_ns() / 1e9;
}
