/* SPDX-License-Identifier: MIT */
/*
 * What this kernel offers, probed once at start and reported in one line,
 * so that a missing feature is named up front instead of surfacing later
 * as a verifier dump or an attach error.
 */
#include <config.h>

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "cpa-capture.h"
#include "log.h"

#define TRACEFS "/sys/kernel/tracing"

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* tracepoint and kprobe attach go through tracefs; mount it if the
 * system has not. */
static void ensure_tracefs(void)
{
	if (exists(TRACEFS "/events"))
		return;
	if (mount("nodev", TRACEFS, "tracefs", 0, NULL) && errno != EBUSY)
		cpa_debug("cannot mount tracefs on %s: %s", TRACEFS,
			  strerror(errno));
}

static bool can_open_cycles(void)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_HARDWARE,
		.config = PERF_COUNT_HW_CPU_CYCLES,
		.freq = 1,
		.sample_freq = 49,
		.disabled = 1,
	};
	int fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1,
			      PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

void capture_probe_features(struct capture_features *f)
{
	struct utsname u;

	memset(f, 0, sizeof(*f));
	ensure_tracefs();
	if (uname(&u) == 0)
		snprintf(f->release, sizeof(f->release), "%s", u.release);
	f->btf = exists("/sys/kernel/btf/vmlinux");
	f->pmu = can_open_cycles();
	f->kprobes = exists("/sys/bus/event_source/devices/kprobe/type") ||
		     exists(TRACEFS "/kprobe_events");
	f->uprobes = exists("/sys/bus/event_source/devices/uprobe/type") ||
		     exists(TRACEFS "/uprobe_events");
	f->fentry = f->btf &&
		    libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACING, NULL) > 0;
	f->nofault_hazard = kernel_nofault_hazard(f->release);
}

void capture_use_btf(struct capture_features *f, const char *path)
{
	if (access(path, R_OK) < 0)
		cpa_die_usage("--btf '%s': %s", path, strerror(errno));
	/* libbpf's own complaint would be a second line */
	libbpf_print_fn_t print = libbpf_set_print(NULL);
	struct btf *btf = btf__parse(path, NULL);
	int err = libbpf_get_error(btf);
	libbpf_set_print(print);
	if (err) {
		char why[128];
		libbpf_strerror(err, why, sizeof(why));
		cpa_die_usage("--btf '%s': not a valid BTF object (%s); make "
			      "one with pahole --btf_encode_detached", path,
			      why);
	}
	/* the program's CO-RE needs the kernel's types, not a module's */
	bool kernel = btf__find_by_name_kind(btf, "task_struct",
					     BTF_KIND_STRUCT) > 0;
	btf__free(btf);
	if (!kernel)
		cpa_die_usage("--btf '%s': a BTF object without struct "
			      "task_struct, not a kernel's", path);
	f->btf = true;
	f->btf_path = path;
	capture_set_btf(path);
}

void capture_report_features(const struct capture_features *f,
			     const char *backend, const char *event)
{
	cpa_err("kernel %s: BTF %s, PMU %s, kprobes %s, fentry %s, "
		"uprobes %s; backend %s, event %s",
		f->release, f->btf_path ? f->btf_path : f->btf ? "yes" : "no",
		f->pmu ? "yes" : "no",
		f->kprobes ? "yes" : "no", f->fentry ? "yes" : "no",
		f->uprobes ? "yes" : "no", backend, event);
}

void capture_print_features(const struct capture_features *f)
{
	/* whether BPF programs load at all: without it only the perf
	 * backend's on-CPU sampling works */
	bool bpf = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACEPOINT,
					      NULL) > 0;

	printf("kernel=%s\nbpf=%s\nbtf=%s\npmu=%s\nkprobes=%s\n"
	       "fentry=%s\nuprobes=%s\nuser_stacks=%s\n", f->release,
	       bpf ? "yes" : "no", f->btf ? "yes" : "no",
	       f->pmu ? "yes" : "no", f->kprobes ? "yes" : "no",
	       f->fentry ? "yes" : "no", f->uprobes ? "yes" : "no",
	       f->nofault_hazard ? "no" : "yes");
}
