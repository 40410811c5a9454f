/* SPDX-License-Identifier: MIT */
/*
 * cpa-capture: samples stacks and writes them to stdout as a cpa stream.
 * This file is the run: options, feature probe, backend choice, the poll
 * loop and a clean end (END record) on --duration, SIGINT or SIGTERM.
 */
#include <config.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpa-capture.h"
#include "log.h"
#include "options.h"
#include "safeopen.h"
#include "selfstats.h"
#include "timeparse.h"

volatile int capture_stop;
void *capture_main_return;

static void on_signal(int sig)
{
	(void)sig;
	capture_stop = 1;
}

static void setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll returns */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* a closed stdout shows up as EPIPE from write() */
	signal(SIGPIPE, SIG_IGN);
}

static void write_meta(const struct capture_config *cfg,
		       const struct capture_features *f,
		       const struct backend *b)
{
	char host[256] = "", buf[160];

	gethostname(host, sizeof(host) - 1);
	output_meta(CPA_META_HOST, host);
	output_meta(CPA_META_KERNEL, f->release);
	snprintf(buf, sizeof(buf), "%u", cfg->freq);
	output_meta(CPA_META_FREQUENCY, buf);
	/* the guide line of the terminal UI's CPU trend */
	snprintf(buf, sizeof(buf), "%ld", sysconf(_SC_NPROCESSORS_CONF));
	output_meta(CPA_META_CPUS, buf);
	snprintf(buf, sizeof(buf), "%s%s%s%s%s",
		 cfg->no_oncpu ? "" : "oncpu",
		 cfg->offcpu ? (cfg->no_oncpu ? "offcpu" : ",offcpu") : "",
		 cfg->n_probes ? (cfg->no_oncpu && !cfg->offcpu ? "probe" :
								  ",probe") :
				 "",
		 cfg->irqoff ? ",irqoff" : "",
		 cfg->kernel_only ? ",kernel-only" : "");
	capture_addons_meta_mode(cfg, buf, sizeof(buf));
	output_meta(CPA_META_MODE, buf);
	output_meta("backend", b->name);
	output_meta("event", b->event);
	snprintf(buf, sizeof(buf), "%u", cfg->kernel_only ? 0 : cfg->stack_size);
	output_meta("stack_size", buf);
	output_meta("clock", "realtime");
	output_meta("capture_version", PACKAGE_VERSION);
}

/* Files of monitored processes refused by lib/base/safeopen.h, by reason. */
static void print_refusals(void)
{
	uint64_t refused[SAFEOPEN_REFUSAL_COUNT];

	safeopen_refusals(refused);
	fprintf(stderr, "%s:   files refused:", cpa_progname());
	for (unsigned i = 0; i < SAFEOPEN_REFUSAL_COUNT; i++)
		fprintf(stderr, " %s=%llu", safeopen_refusal_name(i),
			(unsigned long long)refused[i]);
	fputc('\n', stderr);
}

static void print_stats(const struct backend *b, double seconds)
{
	const struct output_stats *st = output_stats();
	uint64_t total = 0, lost = 0;

	for (int k = 0; k < CPA_KIND_COUNT; k++)
		total += st->samples[k];
	fprintf(stderr, "%s: %.1f s, %llu samples (%.1f/s), %llu task and "
		"%llu mmap records\n", cpa_progname(), seconds,
		(unsigned long long)total,
		seconds > 0 ? total / seconds : 0.0,
		(unsigned long long)st->tasks, (unsigned long long)st->mmaps);
	for (int k = 0; k < CPA_KIND_COUNT; k++)
		if (st->samples[k])
			fprintf(stderr, "%s:   %s: %llu\n", cpa_progname(),
				cpa_kind_name((unsigned)k),
				(unsigned long long)st->samples[k]);
	for (int r = 1; r < CPA_LOST_REASON_COUNT; r++) {
		lost += st->lost[r];
		if (st->lost[r])
			fprintf(stderr, "%s:   lost (%s): %llu\n",
				cpa_progname(), cpa_lost_reason_name((unsigned)r),
				(unsigned long long)st->lost[r]);
	}
	if (!lost)
		fprintf(stderr, "%s:   lost: 0\n", cpa_progname());
	print_refusals();
	b->print_stats(seconds);
}

/* Fails the run unless the error is a reader that went away. */
static int check_write(int rc)
{
	if (rc == -EPIPE)
		return 1;	/* downstream closed: a clean end */
	if (rc < 0) {
		cpa_err("cannot write the stream to stdout: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/* A --pid or --tid that does not exist is a typo, not an empty profile
 * (a pid reused later would be the wrong process anyway). */
static void check_tasks_exist(const struct capture_config *cfg)
{
	char path[64];

	for (size_t i = 0; i < cfg->n_pids; i++) {
		snprintf(path, sizeof(path), "/proc/%llu/task/%llu",
			 (unsigned long long)cfg->pids[i],
			 (unsigned long long)cfg->pids[i]);
		if (access(path, F_OK))
			cpa_die("--pid %llu: no such process",
				(unsigned long long)cfg->pids[i]);
	}
	for (size_t i = 0; i < cfg->n_java_alloc + cfg->n_java_live; i++) {
		bool live = i >= cfg->n_java_alloc;
		uint64_t pid = live ? cfg->java_live[i - cfg->n_java_alloc]
				    : cfg->java_alloc[i];

		snprintf(path, sizeof(path), "/proc/%llu",
			 (unsigned long long)pid);
		if (access(path, F_OK))
			cpa_die("--java-%s %llu: no such process",
				live ? "live" : "alloc",
				(unsigned long long)pid);
	}
	for (size_t i = 0; i < cfg->n_tids; i++) {
		/* /proc/TID resolves for any thread, listed or not */
		snprintf(path, sizeof(path), "/proc/%llu/stat",
			 (unsigned long long)cfg->tids[i]);
		if (access(path, F_OK))
			cpa_die("--tid %llu: no such thread",
				(unsigned long long)cfg->tids[i]);
	}
}

static int open_backend(const struct capture_config *cfg,
			const struct capture_features *f, struct backend *b)
{
	const char *needs = NULL;
	bool needs_bpf = capture_needs_bpf(cfg, &needs);
	bool fallback;
	char why[256];

	if (cfg->backend == BACKEND_PERF) {
		if (needs_bpf)
			cpa_die_usage("%s needs the BPF backend; it cannot be "
				      "used with --backend perf", needs);
		return perf_backend_open(cfg, f, b);
	}
	/* The verifier gives up on a pending signal (EAGAIN, and libbpf's
	 * retries with it): a program that takes longer to verify than
	 * --stats-interval, on a loaded machine, would never load. The
	 * interval's SIGALRM waits until the load is done. */
	sigset_t alarm, old;
	sigemptyset(&alarm);
	sigaddset(&alarm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alarm, &old);
	int rc = bpf_backend_open(cfg, f, b, &fallback, why, sizeof(why));
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		return 0;
	if (!why[0])
		return -1;	/* already reported */
	if (fallback && cfg->backend == BACKEND_AUTO && !needs_bpf) {
		cpa_warn("BPF backend unavailable (%s): using the perf backend",
			 why);
		return perf_backend_open(cfg, f, b);
	}
	if (fallback && needs_bpf)
		cpa_err("%s; %s needs the BPF backend", why, needs);
	else
		cpa_err("%s", why);
	return -1;
}

int main(int argc, char **argv)
{
	struct capture_config cfg;
	struct capture_features f;
	struct backend b;
	uint64_t start, deadline, *bpf_ns = NULL;
	int status = 0, rc = 0;

	capture_main_return = __builtin_return_address(0);
	cpa_options_init(argv[0]);
	capture_parse_options(argc, argv, &cfg);
	setup_signals();
	cpa_selfstats_init(cfg.selfstats.file, cfg.selfstats.interval_ns);
	capture_probe_features(&f);
	if (cfg.btf_path)
		capture_use_btf(&f, cfg.btf_path);
	if (cfg.features) {
		capture_print_features(&f);
		capture_config_free(&cfg);
		return 0;
	}
	/* inputs first: a bad filter or probe fails before anything runs */
	check_tasks_exist(&cfg);
	capture_resolve_cgroups(&cfg);
	for (size_t i = 0; i < cfg.n_probes; i++)
		probe_check(&cfg.probes[i], &f);
	cpa_options_checked();

	if (!cfg.no_oncpu && !f.pmu) {
		if (cfg.require_pmu)
			cpa_die("--require-pmu: this machine has no hardware "
				"cycles event (no PMU, or it is not exposed "
				"to this VM)");
		if (!cfg.irqoff)
			cpa_warn("no hardware PMU: sampling the cpu-clock "
				 "timer instead of cycles");
	}
	if (f.nofault_hazard && !cfg.kernel_only && !cfg.force_user_stacks)
		cpa_warn("kernel %s is in 5.19..6.3, where BPF user memory "
			 "copies can deadlock: user stacks are off "
			 "(--force-user-stacks to override, or --backend "
			 "perf)", f.release);

	if (output_init(STDOUT_FILENO) < 0)
		cpa_die("out of memory");
	start = mono_now_ns();
	/* side-band tracking first, /proc second: a mapping made in between
	 * appears twice rather than not at all */
	if (tracking_open(&cfg) < 0)
		cpa_warn("exec and mmap tracking unavailable: cpa-unwind will "
			 "only know the processes running at start");
	memset(&b, 0, sizeof(b));
	if (open_backend(&cfg, &f, &b) < 0) {
		tracking_close();
		output_close(false);
		capture_config_free(&cfg);
		return CPA_EXIT_FAILURE;
	}
	capture_report_features(&f, b.name, b.event);
	write_meta(&cfg, &f, &b);
	procscan_emit(&cfg, start);
	capture_addons_start(&cfg);

	/* the BPF programs' CPU time is spent on the sampled CPUs, outside
	 * this process: report it next to the process's own */
	if (cfg.selfstats.file || cfg.selfstats.interval_ns)
		bpf_ns = cpa_stat("bpf_run_ns");
	deadline = cfg.duration_ns ? mono_now_ns() + cfg.duration_ns : 0;
	while (!capture_stop) {
		int timeout = CAPTURE_POLL_MS;
		uint64_t now = mono_now_ns();

		if (deadline) {
			if (now >= deadline)
				break;
			if (deadline - now < (uint64_t)timeout * 1000000)
				timeout = (int)((deadline - now) / 1000000) + 1;
		}
		rc = b.wait(timeout);
		if (rc < 0 && rc != -EINTR) {
			cpa_err("polling the ring buffer failed: %s",
				strerror(-rc));
			status = CPA_EXIT_FAILURE;
			break;
		}
		now = mono_now_ns();
		b.drain();
		capture_addons_drain();
		tracking_drain();
		rc = check_write(output_emit(now - CAPTURE_HOLD_NS));
		if (rc)
			break;
		if (bpf_ns)
			*bpf_ns = b.bpf_run_ns();
		cpa_selfstats_poll();
	}

	b.stop();
	capture_addons_stop();
	tracking_drain();
	if (!rc) {
		rc = check_write(output_end());
		if (rc < 0)
			status = CPA_EXIT_FAILURE;
	} else if (rc < 0) {
		status = CPA_EXIT_FAILURE;
	}
	if (cfg.stats)
		print_stats(&b, (mono_now_ns() - start) / 1e9);
	if (bpf_ns)
		*bpf_ns = b.bpf_run_ns();
	if (cfg.selfstats.file)
		cpa_selfstats_report();
	cpa_selfstats_fini();
	b.close();
	tracking_close();
	output_close(true);
	capture_config_free(&cfg);
	return status;
}
