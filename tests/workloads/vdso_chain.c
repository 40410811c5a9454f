/*
 * A spinner that spends its time in the vdso (clock_gettime), to test
 * symbols and unwinding of the kernel-provided vdso image. Built without
 * frame pointers:
 *   main -> run -> level_a -> level_b -> clock_gettime (libc) -> vdso
 * Prints "ready PID" once running.  usage: vdso_chain [SECONDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile long sink;

NOINLINE void level_b(double deadline)
{
	struct timespec ts;
	do {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += ts.tv_nsec;
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < deadline);
	KEEP_FRAME();
}

NOINLINE void level_a(double deadline)
{
	level_b(deadline);
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
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	run(ts.tv_sec + ts.tv_nsec / 1e9 + seconds);
	KEEP_FRAME();
	return 0;
}
