/* SPDX-License-Identifier: MIT */
/*
 * Kernel stacks taken by the scheduler programs (raw tracepoints) start
 * with the BPF program's own frames: the JIT code, the tracepoint's BPF
 * dispatcher (bpf_trace_runN, __bpf_trace_*) and, when several programs
 * share the tracepoint, its iterator (__traceiter_*). They say nothing about
 * why the task left the CPU, so they are cut off here, using the kernel
 * text bounds and the dispatchers' addresses from /proc/kallsyms.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpa-capture.h"
#include "buf.h"
#include "log.h"

struct range {
	uint64_t start, end;
};

static uint64_t text_start, text_end;
static struct range *dispatchers;
static size_t n_dispatchers;

static int by_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool is_dispatcher(const char *name)
{
	return !strncmp(name, "bpf_trace_run", 13) ||
	       !strncmp(name, "__bpf_trace_", 12) ||
	       !strncmp(name, "__traceiter_", 12);
}

void kstack_trim_init(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	uint64_t *addrs = NULL, *starts = NULL;
	size_t n = 0, cap = 0, n_starts = 0;
	char line[512], name[256], type;
	uint64_t addr;

	if (!f) {
		cpa_debug("cannot read /proc/kallsyms: off-CPU kernel stacks "
			  "keep the BPF frames");
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3)
			continue;
		if (type != 't' && type != 'T')
			continue;
		CPA_GROW(addrs, cap, n + 1);
		addrs[n++] = addr;
		if (!strcmp(name, "_stext"))
			text_start = addr;
		else if (!strcmp(name, "_etext"))
			text_end = addr;
		else if (is_dispatcher(name) && !strchr(line, '[')) {
			starts = cpa_realloc(starts, (n_starts + 1) *
							     sizeof(*starts));
			starts[n_starts++] = addr;
		}
	}
	fclose(f);
	if (!text_end) {
		/* _etext is type 'T' on most kernels, 'D' or absent on some:
		 * without it, treat the core text as unbounded above */
		text_end = UINT64_MAX;
	}
	qsort(addrs, n, sizeof(*addrs), by_addr);
	dispatchers = cpa_calloc(n_starts + 1, sizeof(*dispatchers));
	for (size_t i = 0; i < n_starts; i++) {
		/* a function ends where the next symbol starts */
		size_t lo = 0, hi = n;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (addrs[mid] <= starts[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		dispatchers[n_dispatchers].start = starts[i];
		dispatchers[n_dispatchers].end = lo < n ? addrs[lo] : starts[i] + 1;
		n_dispatchers++;
	}
	free(addrs);
	free(starts);
}

static bool in_dispatcher(uint64_t ip)
{
	for (size_t i = 0; i < n_dispatchers; i++)
		if (ip >= dispatchers[i].start && ip < dispatchers[i].end)
			return true;
	return false;
}

unsigned kstack_bpf_frames(const uint64_t *ips, unsigned n)
{
	unsigned skip = 0;

	if (!text_start)
		return 0;
	/* JIT code lies outside the core kernel text */
	while (skip < n && (ips[skip] < text_start || ips[skip] >= text_end ||
			    in_dispatcher(ips[skip])))
		skip++;
	/* a stack made only of such frames is left alone */
	return skip < n ? skip : 0;
}

void kstack_trim_free(void)
{
	free(dispatchers);
	dispatchers = NULL;
	n_dispatchers = 0;
	text_start = text_end = 0;
}
