/*
 * Off-CPU workload with known intervals. After SIGUSR1 (so a test can
 * attach first) it runs one of:
 *   --sleep MS --count N   one thread sleeps MS ms N times:
 *                          main -> run_sleeps -> sleep_once -> nanosleep
 *   --contend S --pin CPU  for S seconds two threads share one CPU:
 *                          spin_main keeps running (preempted at each
 *                          tick) and yield_main calls sched_yield()
 * Prints "ready PID" once waiting for SIGUSR1.
 *
 * usage: sleeper [--sleep MS --count N | --contend S] [--pin CPU]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "start.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static double stop_at;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE void sleep_once(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	KEEP_FRAME();
}

NOINLINE void run_sleeps(long ms, long count)
{
	for (long i = 0; i < count; i++)
		sleep_once(ms);
	KEEP_FRAME();
}

NOINLINE void *spin_main(void *arg)
{
	(void)arg;
	while (now() < stop_at)
		for (int i = 0; i < 10000; i++)
			sink += i;
	KEEP_FRAME();
	return NULL;
}

NOINLINE void *yield_main(void *arg)
{
	(void)arg;
	while (now() < stop_at)
		sched_yield();
	KEEP_FRAME();
	return NULL;
}

int main(int argc, char **argv)
{
	long ms = 0, count = 0;
	double contend = 0;
	int pin = -1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sleep") && i + 1 < argc)
			ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = atol(argv[++i]);
		else if (!strcmp(argv[i], "--contend") && i + 1 < argc)
			contend = atof(argv[++i]);
		else if (!strcmp(argv[i], "--pin") && i + 1 < argc)
			pin = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--sleep MS --count N | --contend S] [--pin CPU]\n", argv[0]);
			return 2;
		}
	}
	if (pin >= 0) {
		cpu_set_t cpus;
		CPU_ZERO(&cpus);
		CPU_SET(pin, &cpus);
		if (sched_setaffinity(0, sizeof(cpus), &cpus)) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	wait_for_start();

	if (contend > 0) {
		pthread_t a, b;
		stop_at = now() + contend;
		pthread_create(&a, NULL, spin_main, NULL);
		pthread_create(&b, NULL, yield_main, NULL);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	} else {
		run_sleeps(ms, count);
	}
	KEEP_FRAME();
	return 0;
}
