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
 */
#include <stdlib.h>
#include <string.h>

#include "start.h"

#define LEAK_BLOCK 4096
#define CHURN_BLOCK 8192

static void **leak_path(size_t bytes)
{
	size_t n = bytes / LEAK_BLOCK;
	void **kept = calloc(n, sizeof(*kept));

	for (size_t i = 0; kept && i < n; i++) {
		kept[i] = i % 2 ? calloc(1, LEAK_BLOCK) : malloc(LEAK_BLOCK);
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
			if (posix_memalign(&p, 64, CHURN_BLOCK))
				p = NULL;
		} else {
			p = malloc(CHURN_BLOCK);
		}
		if (!p)
			continue;
		memset(p, 2, 8);
		q = realloc(p, 2 * CHURN_BLOCK);
		free(q ? q : p);
	}
}

int main(int argc, char **argv)
{
	size_t leak = (argc > 1 ? strtoul(argv[1], NULL, 10) : 32) << 20;
	size_t churn = (argc > 2 ? strtoul(argv[2], NULL, 10) : 32) << 20;
	void **kept;

	wait_for_start();
	kept = leak_path(leak);
	churn_path(churn);
	printf("done %p\n", (void *)kept);
	fflush(stdout);
	wait_for_start();
	return 0;
}
