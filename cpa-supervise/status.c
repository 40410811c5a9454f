/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "stages.h"
#include "statsfile.h"
#include "status.h"
#include "timeparse.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* One stage's row; its share of a core added to *total. */
static void stage_row(const char *name, const char *path, double *total)
{
	static struct stats_file f;
	double cpu = 0, rss = 0, age = 0;
	const char *v;

	if (!path || stats_load(path, &f) < 0) {
		printf("%-8s %s\n", name, "(no statistics yet)");
		return;
	}
	if ((v = stats_get(&f, "time_ns")))
		age = ((double)cpa_now_ns() - strtod(v, NULL)) / 1e9;
	if ((v = stats_get(&f, "cpu_pct")))
		cpu = strtod(v, NULL);
	if ((v = stats_get(&f, "rss_kb")))
		rss = strtod(v, NULL) / 1024;
	printf("%-8s %8.2f %9.1f %9.1f", name, cpu, rss, age);
	for (int i = 0; i < f.n; i++) {
		const struct stats_kv *kv = f.kv;
		static const char *const own[] = {
			"tool", "pid", "uptime_s", "cpu_s", "time_ns",
			"cpu_pct", "rss_kb",
		};
		char rate_key[80];
		/* rates follow their counter; histograms are for
		 * the metrics file */
		bool skip = ends_with(kv[i].key, "_per_s") ||
			    ends_with(kv[i].key, "_log2");

		for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
			skip |= !strcmp(kv[i].key, own[k]);
		if (skip)
			continue;
		printf(" %s=%s", kv[i].key, kv[i].val);
		snprintf(rate_key, sizeof(rate_key), "%.63s_per_s", kv[i].key);
		if ((v = stats_get(&f, rate_key)))
			printf("(%s/s)", v);
	}
	putchar('\n');
	*total += cpu;
}

int status_print(const char *run_dir)
{
	char path[4200];
	static struct stats_file st;
	const char *restarts, *hung;
	double total = 0;
	long pid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/monitor.pid", run_dir);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	if (pid <= 0 || (kill((pid_t)pid, 0) < 0 && errno == ESRCH)) {
		cpa_err("no running monitor (no live %s)", path);
		return CPA_EXIT_FAILURE;
	}
	snprintf(path, sizeof(path), "%s/stages", run_dir);
	stats_load(path, &st);
	restarts = stats_get(&st, "restarts");
	hung = stats_get(&st, "hung");
	printf("cpa monitor pid %ld, pipeline restarts %s (%s for a hung "
	       "stage)\n", pid, restarts ? restarts : "0", hung ? hung : "0");
	printf("%-8s %8s %9s %9s %s\n", "stage", "cpu%", "rss_MB", "age_s",
	       "counters");
	for (int i = 0; i < st.n; i++) {
		char key[80];

		if (!stage_find(st.kv[i].key))
			continue;
		snprintf(key, sizeof(key), "%.63s.stats", st.kv[i].key);
		stage_row(st.kv[i].key, stats_get(&st, key), &total);
	}
	printf("total cost: %.2f%% of one core\n", total);
	return 0;
}
