/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "options.h"
#include "selfstats.h"
#include "timeparse.h"

#define MAX_STATS 64

static struct {
	char name[48];
	uint64_t value, last;
	bool gauge, peak;
} stats[MAX_STATS];
static unsigned nstats;
#define MAX_HISTS 4
static struct {
	char name[48];
	uint64_t v[CPA_HIST_MAX];
	unsigned n;
} hists[MAX_HISTS];
static unsigned nhists;
static uint64_t spare_hist[CPA_HIST_MAX];
static uint64_t spare;		/* sink when the table is full */
static volatile sig_atomic_t report_due;
static char *stats_file;
static uint64_t start_ns, last_ns, last_cpu_us;

enum { OPT_STATS_FILE = 0x5f00, OPT_STATS_INTERVAL };

static const struct argp_option selfstats_options[] = {
	{ "stats-file", OPT_STATS_FILE, "FILE", 0,
	  "Keep self statistics in FILE (key=value lines, replaced "
	  "atomically at every report; read by cpa status)", 0 },
	{ "stats-interval", OPT_STATS_INTERVAL, "DURATION", 0,
	  "Report self statistics every DURATION: one line on stderr, and "
	  "FILE (SIGUSR1 reports at once)", 0 },
	{ 0 }
};

static error_t parse_selfstats(int key, char *arg, struct argp_state *state)
{
	struct cpa_selfstats_opts *o = state->input;
	switch (key) {
	case OPT_STATS_FILE:
		if (!*arg)
			cpa_die_usage("invalid --stats-file '': expected a file "
				      "name");
		o->file = arg;
		return 0;
	case OPT_STATS_INTERVAL:
		o->interval_ns = cpa_opt_duration_ns("--stats-interval", arg);
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

const struct argp cpa_selfstats_argp = {
	.options = selfstats_options, .parser = parse_selfstats,
};

static void on_signal(int sig)
{
	(void)sig;
	report_due = 1;
}

static uint64_t cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static uint64_t rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size, resident = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

void cpa_self_usage(double *cpu_s, uint64_t *rss_bytes)
{
	*cpu_s = (double)cpu_us() / 1e6;
	*rss_bytes = rss_kb() * 1024;
}

void cpa_selfstats_init(const char *file, uint64_t interval_ns)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	start_ns = last_ns = cpa_mono_ns();
	last_cpu_us = cpu_us();
	if (file)
		stats_file = cpa_strdup(file);
	if (interval_ns) {
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it;
		it.it_interval.tv_sec = (time_t)(interval_ns / CPA_NSEC_PER_SEC);
		it.it_interval.tv_usec =
			(suseconds_t)(interval_ns % CPA_NSEC_PER_SEC / 1000);
		if (!it.it_interval.tv_sec && !it.it_interval.tv_usec)
			it.it_interval.tv_usec = 1000;
		it.it_value = it.it_interval;
		setitimer(ITIMER_REAL, &it, NULL);
	}
}

static uint64_t *slot(const char *name, bool gauge)
{
	for (unsigned i = 0; i < nstats; i++)
		if (!strcmp(stats[i].name, name))
			return &stats[i].value;
	if (nstats == MAX_STATS)
		return &spare;
	snprintf(stats[nstats].name, sizeof(stats[nstats].name), "%s", name);
	stats[nstats].gauge = gauge;
	return &stats[nstats++].value;
}

uint64_t *cpa_stat(const char *name)
{
	return slot(name, false);
}

uint64_t *cpa_gauge(const char *name)
{
	return slot(name, true);
}

uint64_t *cpa_peak(const char *name)
{
	uint64_t *v = slot(name, true);

	for (unsigned i = 0; i < nstats; i++)
		if (&stats[i].value == v)
			stats[i].peak = true;
	return v;
}

uint64_t *cpa_histogram(const char *name, unsigned n)
{
	for (unsigned i = 0; i < nhists; i++)
		if (!strcmp(hists[i].name, name))
			return hists[i].v;
	if (nhists == MAX_HISTS)
		return spare_hist;
	snprintf(hists[nhists].name, sizeof(hists[nhists].name), "%s", name);
	hists[nhists].n = n < CPA_HIST_MAX ? n : CPA_HIST_MAX;
	return hists[nhists++].v;
}

/* Per-second rate of a counter since the last report. */
static double rate(unsigned i, double dt)
{
	if (stats[i].value < stats[i].last)
		return 0;
	return (double)(stats[i].value - stats[i].last) / dt;
}

void cpa_selfstats_poll(void)
{
	if (report_due)
		cpa_selfstats_report();
}

void cpa_selfstats_report(void)
{
	report_due = 0;
	uint64_t now = cpa_mono_ns(), cpu = cpu_us();
	double dt = (double)(now - last_ns) / 1e9;
	if (dt <= 0)
		dt = 1e-9;
	double pct = (double)(cpu - last_cpu_us) / 1e4 / dt;
	uint64_t rss = rss_kb();

	char line[2048];
	int n = snprintf(line, sizeof(line),
			 "stats: cpu %.2fs (%.2f%% of a core) rss %" PRIu64 "KB",
			 (double)cpu / 1e6, pct, rss);
	for (unsigned i = 0; i < nstats && n > 0 && (size_t)n < sizeof(line); i++) {
		if (stats[i].gauge)
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " %s %" PRIu64, stats[i].name,
				      stats[i].value);
		else
			n += snprintf(line + n, sizeof(line) - (size_t)n,
				      " %s %" PRIu64 " (%.1f/s)", stats[i].name,
				      stats[i].value, rate(i, dt));
	}
	fprintf(stderr, "%s: %s\n", cpa_progname(), line);

	if (stats_file) {
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.tmp", stats_file);
		FILE *f = fopen(tmp, "w");
		if (f) {
			fprintf(f, "tool=%s\npid=%d\ntime_ns=%" PRIu64
				"\nuptime_s=%.1f\ncpu_s=%.3f\ncpu_pct=%.3f\n"
				"rss_kb=%" PRIu64 "\n",
				cpa_progname(), (int)getpid(), cpa_now_ns(),
				(double)(now - start_ns) / 1e9,
				(double)cpu / 1e6, pct, rss);
			for (unsigned i = 0; i < nstats; i++) {
				fprintf(f, "%s=%" PRIu64 "\n", stats[i].name,
					stats[i].value);
				if (!stats[i].gauge)
					fprintf(f, "%s_per_s=%.2f\n",
						stats[i].name, rate(i, dt));
			}
			for (unsigned i = 0; i < nhists; i++) {
				fprintf(f, "%s=", hists[i].name);
				for (unsigned b = 0; b < hists[i].n; b++)
					fprintf(f, "%s%" PRIu64, b ? "," : "",
						hists[i].v[b]);
				fputc('\n', f);
			}
			if (fclose(f) == 0)
				rename(tmp, stats_file);
			else
				unlink(tmp);
		}
	}
	for (unsigned i = 0; i < nstats; i++) {
		stats[i].last = stats[i].value;
		if (stats[i].peak)
			stats[i].value = 0;
	}
	last_ns = now;
	last_cpu_us = cpu;
}

void cpa_selfstats_fini(void)
{
	struct itimerval off;
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_REAL, &off, NULL);
	free(stats_file);
	stats_file = NULL;
	nstats = 0;
	nhists = 0;
}
