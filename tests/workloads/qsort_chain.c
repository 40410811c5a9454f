/*
 * A chain that passes through Debian's libc: the comparator qsort calls
 * back is where the time goes. Built without frame pointers, and with
 * them (qsort_chain_fp: frame-pointer code called back from a libc
 * without them):
 *   main -> run -> level_a -> level_b -> qsort (libc) -> ... -> compare
 *        -> cmp_leaf
 * Prints "ready PID" once running.  usage: qsort_chain [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define N 4096

static int data[N];
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* cmp_leaf calls this once, so that it is no leaf function: gcc sets up
 * no frame for a leaf at -O2 even with -mno-omit-leaf-frame-pointer, and
 * the frame-pointer build's samples would then be caught by the word at
 * sp, not by their chain through libc. */
NOINLINE int cmp_seed(int a)
{
	KEEP_FRAME();
	return a;
}

NOINLINE int cmp_leaf(int a, int b)
{
	a = cmp_seed(a);
	/* make each comparison cost enough to dominate the profile */
	for (int i = 0; i < 200; i++)
		sink += (unsigned long)i * 7;
	KEEP_FRAME();
	return (a > b) - (a < b);
}

static int compare(const void *a, const void *b)
{
	int r = cmp_leaf(*(const int *)a, *(const int *)b);
	KEEP_FRAME();
	return r;
}

NOINLINE void level_b(void)
{
	for (int i = 0; i < N; i++)
		data[i] = (int)((i * 2654435761u) % 100003u);
	qsort(data, N, sizeof(data[0]), compare);
	KEEP_FRAME();
}

NOINLINE void level_a(double deadline)
{
	while (now() < deadline)
		level_b();
	KEEP_FRAME();
}

NOINLINE void run(double deadline)
{
	level_a(deadline);
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	run(now() + seconds);
	KEEP_FRAME();
	return 0;
}
