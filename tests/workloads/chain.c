/*
 * A CPU spinner with a known call chain, for asserting exact frames:
 *   main -> run -> level_a -> level_b -> hot_leaf
 * and, with --threads N, N extra threads:
 *   worker_main -> run -> level_a -> level_b -> hot_leaf
 * Built with and without frame pointers. Prints "ready PID" on stdout once
 * running, so a test can wait for it instead of sleeping.
 *
 * usage: chain [--seconds S] [--threads N] [--pin CPU]
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
/* An empty asm after each call keeps the compiler from turning it into a
 * tail call, which would drop the caller's frame from the chain. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static double deadline;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE void hot_leaf(void)
{
	while (now() < deadline) {
		for (int i = 0; i < 100000; i++)
			sink += i * 7;
	}
	KEEP_FRAME();
}

NOINLINE void level_b(void)
{
	hot_leaf();
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

NOINLINE void *worker_main(void *arg)
{
	(void)arg;
	run();
	KEEP_FRAME();
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 10;
	int threads = 0, pin = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--pin") && i + 1 < argc)
			pin = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--seconds S] [--threads N] [--pin CPU]\n", argv[0]);
			return 2;
		}
	}
	if (pin >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(pin, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	deadline = now() + seconds;
	pthread_t *tids = calloc(threads > 0 ? threads : 1, sizeof(*tids));
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker_main, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	run();
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	KEEP_FRAME();
	return 0;
}
