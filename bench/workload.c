/*
 * The fixed CPU-bound load of bench/run: THREADS threads each run
 * ITERATIONS rounds of worker_main -> run -> level_a -> level_b -> hot_leaf,
 * then it prints its wall time. With a profiler attached, the wall time
 * grows by what the profiler costs the workload.
 *
 * usage: workload [THREADS [ITERATIONS]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static long iterations = 2000;

/* hot_leaf calls this once, so that it is no leaf function: gcc sets up
 * no frame for a leaf even with -mno-omit-leaf-frame-pointer, and the
 * frame-pointer build would then lose level_b in every sample. */
NOINLINE unsigned long seed(unsigned long x)
{
	KEEP_FRAME();
	return x ^ 0x9e3779b97f4a7c15ul;
}

NOINLINE unsigned long hot_leaf(unsigned long x)
{
	x = seed(x);
	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	KEEP_FRAME();
	return x;
}

NOINLINE unsigned long level_b(unsigned long x)
{
	x = hot_leaf(x);
	KEEP_FRAME();
	return x;
}

NOINLINE unsigned long level_a(unsigned long x)
{
	x = level_b(x);
	KEEP_FRAME();
	return x;
}

NOINLINE unsigned long run(unsigned long x)
{
	for (long i = 0; i < iterations; i++)
		x = level_a(x);
	KEEP_FRAME();
	return x;
}

NOINLINE void *worker_main(void *arg)
{
	unsigned long *x = arg;
	*x = run(*x);
	KEEP_FRAME();
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	if (argc > 2)
		iterations = atol(argv[2]);
	if (threads < 1 || threads > 256 || iterations < 1) {
		fprintf(stderr, "usage: %s [THREADS [ITERATIONS]]\n", argv[0]);
		return 2;
	}
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	pthread_t *t = calloc((size_t)threads, sizeof(*t));
	unsigned long *x = calloc((size_t)threads, sizeof(*x));
	for (int i = 0; i < threads; i++) {
		x[i] = (unsigned long)i + 1;
		pthread_create(&t[i], NULL, worker_main, &x[i]);
	}
	unsigned long sum = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum ^= x[i];
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("elapsed_s=%.4f checksum=%lx\n",
	       (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
	       sum);
	free(t);
	free(x);
	return 0;
}
