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
 *   --kernel-ip A the sample also has one kernel frame at address A (hex)
 *   --exit-record end with a TASK exit record for this process
 *   --fp-chain    give the sample a whole "frame-pointer" chain, taken
 *                 with backtrace(3), as a binary with frame pointers would
 */

#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"
#include "stream.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static struct cpa_writer w;
static size_t stack_size = 16384;
static uint64_t kernel_ip;
static int fp_chain;
static int garbage, use_qsort;
static uint64_t stack_top;
static uint8_t snap_buf[CPA_MAX_STACK_BYTES];

/* A raw copy of live stack, as the kernel makes it: under AddressSanitizer
 * the stack holds poisoned redzones, which this copy must not trip on. */
__attribute__((no_sanitize("address"))) NOINLINE static void
copy_stack(uint8_t *dst, uintptr_t src, size_t len)
{
	const volatile uint8_t *p = (const volatile uint8_t *)src;
	for (size_t i = 0; i < len; i++)
		dst[i] = p[i];
}

/* Always inlined, so the sampled PC is in inlined code: --inline shows
 * it as snap_leaf;grab_registers_[i]. */
static inline __attribute__((always_inline)) void
grab_registers(uint64_t *ip, uint64_t *sp, uint64_t *bp)
{
	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2"
			 : "=r"(*ip), "=r"(*sp), "=r"(*bp));
}

NOINLINE void snap_leaf(void)
{
	uint64_t ip, sp, bp;
	grab_registers(&ip, &sp, &bp);
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
	if (kernel_ip) {
		s.n_kernel = 1;
		s.kernel_ips[0] = kernel_ip;
	}
	/* what a frame-pointer walk of this binary would give: the PC */
	s.n_user = 1;
	s.user_ips[0] = ip;
	if (fp_chain) {
		void *bt[CPA_MAX_FRAMES];
		int n = backtrace(bt, CPA_MAX_FRAMES);
		for (int i = 0; i < n; i++)
			s.user_ips[i] = (uint64_t)(uintptr_t)bt[i];
		s.n_user = (uint16_t)n;
	}
	size_t len = stack_top - sp;
	if (len > stack_size) {
		len = stack_size;
		s.flags |= CPA_RAW_USER_TRUNCATED;
	}
	copy_stack(snap_buf, (uintptr_t)sp, len);
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

static uint8_t build_id[CPA_BUILD_ID_MAX];
static uint8_t build_id_len;

/* Our own build id, from the GNU note of the main program in memory. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*nh);
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) &&
			    nh->n_descsz <= CPA_BUILD_ID_MAX) {
				memcpy(build_id, desc, nh->n_descsz);
				build_id_len = (uint8_t)nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 1;	/* the first entry is the main program */
}

/* MMAP records for our executable mappings, as cpa-capture sends them;
 * the program's own carry its build id. */
static void write_mmaps(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	dl_iterate_phdr(find_build_id, NULL);
	struct cpa_maps it;
	struct cpa_map map;
	if (cpa_maps_open(&it, 0) < 0)
		return;
	while (cpa_maps_next(&it, &map)) {
		if (!cpa_map_exec(&map))
			continue;
		struct cpa_mmap m = {
			.start = map.start, .len = map.end - map.start,
			.pgoff = map.pgoff, .inode = map.inode,
			.pid = (uint32_t)getpid(), .prot = 5,
			.path = map.path, .path_len = (uint16_t)map.path_len,
		};
		if (!strcmp(map.path, self)) {
			m.build_id_len = build_id_len;
			memcpy(m.build_id, build_id, build_id_len);
		}
		cpa_write_mmap(&w, &m);
	}
	cpa_maps_close(&it);
}

static uint64_t find_stack_top(void)
{
	struct cpa_maps it;
	struct cpa_map m;
	uint64_t top = 0;
	if (cpa_maps_open(&it, 0) < 0)
		return 0;
	while (cpa_maps_next(&it, &m))
		if (!strcmp(m.path, "[stack]"))
			top = m.end;
	cpa_maps_close(&it);
	return top;
}

int main(int argc, char **argv)
{
	int samples = 1, mmaps = 1, hold = 0, exit_record = 0;
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
		else if (!strcmp(argv[i], "--fp-chain"))
			fp_chain = 1;
		else if (!strcmp(argv[i], "--exit-record"))
			exit_record = 1;
		else if (!strcmp(argv[i], "--kernel-ip") && i + 1 < argc)
			kernel_ip = strtoull(argv[++i], NULL, 16);
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
	if (exit_record) {
		struct cpa_task t = {
			.pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(),
			.ppid = (uint32_t)getppid(), .event = CPA_TASK_EXIT,
		};
		strcpy(t.comm, "selfsnap");
		cpa_write_task(&w, &t);
	}
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
