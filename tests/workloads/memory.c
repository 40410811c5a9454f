/* SPDX-License-Identifier: MIT */
/*
 * Memory with known call paths, for the --mem tests:
 *
 *   memory --virt BYTES    map_region() maps BYTES of anonymous memory
 *                          in one mmap and unmaps it again
 *   memory --brk BYTES     grow_heap() moves the break up by BYTES
 *   memory --remap BYTES   grow_mapping() maps BYTES and doubles them
 *                          with mremap: 2 x BYTES of address space
 *   memory --touch BYTES   touch_pages() maps BYTES, turns transparent
 *                          huge pages off for them and writes one byte
 *                          per page: BYTES of 4 KiB pages allocated
 *   memory --leak A --churn B
 *                          leak_path() touches A bytes it keeps,
 *                          churn_path() touches B bytes and unmaps them
 *
 * --name NAME sets the process name first (for --comm). After the start
 * handshake (start.h) it does its work, prints "done",
 * and waits for SIGUSR1 again before it exits, so a test can look at the
 * memory while it is still held, and again after the exit.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "start.h"

static long page;

static char *map_anon(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void __attribute__((noinline)) map_region(size_t bytes)
{
	char *p = map_anon(bytes);

	munmap(p, bytes);
}

static void __attribute__((noinline)) grow_heap(size_t bytes)
{
	if (sbrk((intptr_t)bytes) == (void *)-1) {
		perror("sbrk");
		exit(1);
	}
}

static void __attribute__((noinline)) grow_mapping(size_t bytes)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	p = mremap(p, bytes, 2 * bytes, MREMAP_MAYMOVE);
	if (p == MAP_FAILED) {
		perror("mremap");
		exit(1);
	}
	munmap(p, 2 * bytes);
}

/*
 * The writes are this function's own, so its frame is the leaf. Under
 * ASan (the sanitized test run) nothing here may touch the shadow memory,
 * whose pages the tests would count as touched: the writes are not
 * instrumented, and the mapping is made and given back by system calls,
 * not by libc's wrappers, which ASan intercepts.
 */
static char *__attribute__((noinline, no_sanitize_address))
touch_pages(size_t bytes)
{
	char *p = (char *)syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	if (syscall(SYS_madvise, p, bytes, MADV_NOHUGEPAGE))
		perror("madvise");
	for (size_t off = 0; off < bytes; off += (size_t)page)
		((volatile char *)p)[off] = 1;
	return p;
}

static void __attribute__((noinline)) leak_path(size_t bytes)
{
	touch_pages(bytes);
}

static void __attribute__((noinline)) churn_path(size_t bytes)
{
	char *p = touch_pages(bytes);

	syscall(SYS_munmap, p, bytes);
}

static size_t size_arg(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end)
		v = 0;
	if (!v) {
		fprintf(stderr, "memory: bad size '%s'\n", s);
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	size_t virt = 0, brk = 0, remap = 0, touch = 0, leak = 0, churn = 0;
	long repeat = 1;
	struct timespec t0, t1;

	page = sysconf(_SC_PAGESIZE);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--virt"))
			virt = size_arg(argv[i + 1]);
		else if (!strcmp(argv[i], "--brk"))
			brk = size_arg(argv[i + 1]);
		else if (!strcmp(argv[i], "--remap"))
			remap = size_arg(argv[i + 1]);
		else if (!strcmp(argv[i], "--repeat"))
			repeat = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--name"))
			prctl(PR_SET_NAME, argv[i + 1]);
		else if (!strcmp(argv[i], "--touch"))
			touch = size_arg(argv[i + 1]);
		else if (!strcmp(argv[i], "--leak"))
			leak = size_arg(argv[i + 1]);
		else if (!strcmp(argv[i], "--churn"))
			churn = size_arg(argv[i + 1]);
		else {
			fprintf(stderr, "memory: unknown option '%s'\n",
				argv[i]);
			return 2;
		}
	}
	wait_for_start();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long r = 0; r < repeat; r++) {
		if (virt)
			map_region(virt);
		if (brk)
			grow_heap(brk);
		if (remap)
			grow_mapping(remap);
		if (touch)
			touch_pages(touch);
		if (leak)
			leak_path(leak);
		if (churn)
			churn_path(churn);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("done %lld\n", (long long)(t1.tv_sec - t0.tv_sec) * 1000000000 +
				(t1.tv_nsec - t0.tv_nsec));
	fflush(stdout);
	wait_for_start();
	return 0;
}
