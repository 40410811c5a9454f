/* SPDX-License-Identifier: MIT */
/*
 * A process that looks like a CPython interpreter of a version cpa has no
 * table for: it is named python*, and exports _PyRuntime and a Py_Version
 * of 3.8. cpa-capture must sample it natively and say why once.
 *
 *   python_unsupported SECONDS    main -> fake_eval -> fake_spin, from
 *   SIGUSR1 on (start.h)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "start.h"

const unsigned long Py_Version = 0x030800f0;
char _PyRuntime[4096];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static unsigned long fake_spin(double until)
{
	volatile unsigned long x = 0;
	while (now() < until)
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i * 7;
	return x;
}

__attribute__((noinline)) static unsigned long fake_eval(double until)
{
	return fake_spin(until) + _PyRuntime[0];
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1;

	wait_for_start();
	return (int)(fake_eval(now() + seconds) & 1);
}
