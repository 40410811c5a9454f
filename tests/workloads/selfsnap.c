/*
 * selfsnap: writes a cpa stream of raw samples taken of its own stack, the
 * way cpa-capture's snapshot would see it (registers ip/sp/bp plus the
 * stack bytes from sp), so cpa-unwind's DWARF walker can be tested without
 * BPF. Built without frame pointers. The known chain is
 *   main -> run -> level_a -> level_b -> snap_leaf
 * or, with --qsort, level_b -> qsort (libc) -> compare -> snap_leaf.
 *
 * usage: selfsnap [--samples N] [--stack-size BYTES] [--garbage]
 *                 [--no-mmap] [--hold] [--qsort] > stream
 *   --stack-size  copy at most BYTES (marks the sample truncated if cut)
 *   --garbage     replace the stack bytes with pseudo-random ones
 *   --no-mmap     write no MMAP records (cpa-unwind must use /proc)
 *   --hold        after writing, print "ready PID" on stderr and stay
 *                 alive until killed, so /proc/PID can be read
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stream.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static struct cpa_writer w;
static size_t stack_size = 16384;
static int garbage, use_qsort;
static uint64_t stack_top;
static uint8_t snap_buf[CPA_MAX_STACK_BYTES];

NOINLINE void snap_leaf(void)
{
	uint64_t ip, sp, bp;
	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	struct cpa_raw_sample s;
	memset(&s, 0, sizeof(s));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s.time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	s.weight = 1;
	s.pid = s.tid = (uint32_t)getpid();
	s.kind = CPA_KIND_ONCPU;
	strcpy(s.comm, "selfsnap");
	strcpy(s.pcomm, "selfsnap");
	s.n_regs = 3;
	s.regs[CPA_REG_IP] = ip;
	s.regs[CPA_REG_SP] = sp;
	s.regs[CPA_REG_BP] = bp;
	/* what a frame-pointer walk of this binary would give: the PC */
	s.n_user = 1;
	s.user_ips[0] = ip;
	size_t len = stack_top - sp;
	if (len > stack_size) {
		len = stack_size;
		s.flags |= CPA_RAW_USER_TRUNCATED;
	}
	memcpy(snap_buf, (const void *)(uintptr_t)sp, len);
	if (garbage) {
		uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)s.time_ns;
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			snap_buf[i] = (uint8_t)x;
		}
	}
	s.stack_len = (uint32_t)len;
	s.stack = snap_buf;
	cpa_write_raw_sample(&w, &s);
	KEEP_FRAME();
}

static int snap_pending;

static int compare(const void *a, const void *b)
{
	if (snap_pending) {
		snap_pending = 0;
		snap_leaf();
	}
	return *(const int *)a - *(const int *)b;
}

NOINLINE void level_b(void)
{
	if (use_qsort) {
		int v[2] = { 2, 1 };
		snap_pending = 1;
		qsort(v, 2, sizeof(v[0]), compare);
	} else {
		snap_leaf();
	}
	KEEP_FRAME();
}

NOINLINE void level_a(void)
{
	level_b();
	KEEP_FRAME();
}

NOINLINE void run(void)
{
	level_a();
	KEEP_FRAME();
}

/* MMAP records for our executable mappings, as cpa-capture sends them. */
static void write_mmaps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long start, end, off, ino;
		char perms[8];
		int at = 0;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*x:%*x %lu %n", &start, &end,
			   perms, &off, &ino, &at) < 5 || !strchr(perms, 'x'))
			continue;
		struct cpa_mmap m = {
			.start = start, .len = end - start, .pgoff = off,
			.inode = ino, .pid = (uint32_t)getpid(), .prot = 5,
			.path = line + at,
			.path_len = (uint16_t)strlen(line + at),
		};
		cpa_write_mmap(&w, &m);
	}
	if (f)
		fclose(f);
}

static uint64_t find_stack_top(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	uint64_t top = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long s, e;
		if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &s, &e) == 2)
			top = e;
	}
	if (f)
		fclose(f);
	return top;
}

int main(int argc, char **argv)
{
	int samples = 1, mmaps = 1, hold = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			samples = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--stack-size") && i + 1 < argc)
			stack_size = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--garbage"))
			garbage = 1;
		else if (!strcmp(argv[i], "--no-mmap"))
			mmaps = 0;
		else if (!strcmp(argv[i], "--hold"))
			hold = 1;
		else if (!strcmp(argv[i], "--qsort"))
			use_qsort = 1;
		else {
			fprintf(stderr, "usage: %s [--samples N] [--stack-size B] "
				"[--garbage] [--no-mmap] [--hold] [--qsort]\n",
				argv[0]);
			return 2;
		}
	}
	if (stack_size > CPA_MAX_STACK_BYTES)
		stack_size = CPA_MAX_STACK_BYTES;
	stack_top = find_stack_top();
	if (!stack_top || cpa_writer_init(&w, 1) < 0)
		return 1;
	if (mmaps)
		write_mmaps();
	for (int i = 0; i < samples; i++)
		run();
	if (cpa_write_end(&w) < 0 || cpa_writer_close(&w) < 0)
		return 1;
	if (hold) {
		close(1);
		fprintf(stderr, "ready %d\n", (int)getpid());
		for (;;)
			pause();
	}
	KEEP_FRAME();
	return 0;
}
