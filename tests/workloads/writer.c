/*
 * Probe workload with exact counts. After SIGUSR1 (so a test can attach
 * first) it makes exactly --writes N write() calls to /dev/null and calls
 * counted_call() exactly --calls M times, then exits without writing
 * anything else. Prints "ready PID" once waiting for SIGUSR1.
 *
 * usage: writer [--writes N] [--calls M]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "start.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static volatile unsigned long calls_made;

NOINLINE void counted_call(void)
{
	calls_made++;
	KEEP_FRAME();
}

NOINLINE int write_once(int fd)
{
	char c = 'x';
	int rc = (int)write(fd, &c, 1);
	KEEP_FRAME();
	return rc;
}

int main(int argc, char **argv)
{
	long writes = 0, calls = 0;
	int fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--writes") && i + 1 < argc)
			writes = atol(argv[++i]);
		else if (!strcmp(argv[i], "--calls") && i + 1 < argc)
			calls = atol(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--writes N] [--calls M]\n", argv[0]);
			return 2;
		}
	}
	fd = open("/dev/null", O_WRONLY);
	if (fd < 0) {
		perror("/dev/null");
		return 1;
	}
	wait_for_start();

	for (long i = 0; i < writes; i++)
		if (write_once(fd) != 1)
			return 1;
	for (long i = 0; i < calls; i++)
		counted_call();
	close(fd);
	return 0;
}
