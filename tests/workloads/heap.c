/* SPDX-License-Identifier: MIT */
/*
 * heap: known malloc totals from two call paths, for --mem malloc.
 *
 *   heap [LEAK_MIB [CHURN_MIB]]
 *
 * After the start handshake (start.h), leak_path allocates LEAK_MIB MiB
 * in 4 KiB blocks, alternately by malloc and calloc, and keeps every
 * block; churn_path allocates CHURN_MIB MiB in 8 KiB blocks, by malloc
 * and every fourth by posix_memalign, grows each to 16 KiB by realloc and
 * frees it. So the allocated bytes are LEAK_MIB MiB under leak_path and
 * 3 x CHURN_MIB MiB under churn_path (realloc allocates the new size),
 * and what stays in use is LEAK_MIB MiB under leak_path alone. Prints
 * "done" and waits for SIGUSR1 again, so a capture can stop while the
 * blocks are still held, then exits without freeing them: the exit gives
 * them back.
 *
 * The allocator is the C library's own, looked up in it by name: under
 * AddressSanitizer (scripts/check --sanitize) malloc would be ASan's,
 * which no libc uprobe sees.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "start.h"

static void *(*c_malloc)(size_t);
static void *(*c_calloc)(size_t, size_t);
static void *(*c_realloc)(void *, size_t);
static int (*c_posix_memalign)(void **, size_t, size_t);
static void (*c_free)(void *);

static void libc_allocator(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

	if (!libc) {
		fprintf(stderr, "heap: no libc.so.6: %s\n", dlerror());
		exit(1);
	}
	*(void **)&c_malloc = dlsym(libc, "malloc");
	*(void **)&c_calloc = dlsym(libc, "calloc");
	*(void **)&c_realloc = dlsym(libc, "realloc");
	*(void **)&c_posix_memalign = dlsym(libc, "posix_memalign");
	*(void **)&c_free = dlsym(libc, "free");
	if (!c_malloc || !c_calloc || !c_realloc || !c_posix_memalign ||
	    !c_free) {
		fprintf(stderr, "heap: libc.so.6 lacks an allocator function\n");
		exit(1);
	}
}

#define LEAK_BLOCK 4096
#define CHURN_BLOCK 8192

static void **leak_path(size_t bytes)
{
	size_t n = bytes / LEAK_BLOCK;
	void **kept = c_calloc(n, sizeof(*kept));

	for (size_t i = 0; kept && i < n; i++) {
		kept[i] = i % 2 ? c_calloc(1, LEAK_BLOCK) : c_malloc(LEAK_BLOCK);
		if (kept[i])
			memset(kept[i], 1, 8);
	}
	return kept;
}

static void churn_path(size_t bytes)
{
	for (size_t i = 0; i < bytes / CHURN_BLOCK; i++) {
		void *p = NULL, *q;

		if (i % 4 == 3) {
			if (c_posix_memalign(&p, 64, CHURN_BLOCK))
				p = NULL;
		} else {
			p = c_malloc(CHURN_BLOCK);
		}
		if (!p)
			continue;
		memset(p, 2, 8);
		q = c_realloc(p, 2 * CHURN_BLOCK);
		c_free(q ? q : p);
	}
}

int main(int argc, char **argv)
{
	size_t leak = (argc > 1 ? strtoul(argv[1], NULL, 10) : 32) << 20;
	size_t churn = (argc > 2 ? strtoul(argv[2], NULL, 10) : 32) << 20;
	void **kept;

	libc_allocator();
	wait_for_start();
	kept = leak_path(leak);
	churn_path(churn);
	printf("done %p\n", (void *)kept);
	fflush(stdout);
	wait_for_start();
	return 0;
}
