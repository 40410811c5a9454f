// SPDX-License-Identifier: MIT
/*
 * A process that makes cpa-capture look at a FIFO: it maps a file named
 * DIR/python3.8 executable (cpa-capture reads the file of every new
 * executable mapping whose name says Python), unmaps it, and puts a
 * named pipe at its path before the capture gets to the mapping record,
 * so /proc/PID/map_files no longer has it and only the path is left.
 * It prints "ready PID", waits for SIGUSR1 (so that the mappings come
 * while the capture records), does that --times N times (1 to 100),
 * prints "mapped", then spins for --seconds S (main -> fifo_spin) so
 * that it is sampled itself.
 *
 * usage: fifo_python [--times N] [--seconds S] DIR
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../workloads/start.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Arithmetic, the clock read once in a while: the samples land here,
 * not in clock_gettime. */
__attribute__((noinline)) static unsigned long fifo_spin(double deadline)
{
	unsigned long x = 1;
	while (now() < deadline)
		for (int i = 0; i < 1000000; i++) {
			x = x * 6364136223846793005ul + 1442695040888963407ul;
			__asm__ volatile("" : "+r"(x));
		}
	return x;
}

static int map_then_fifo(const char *path)
{
	static const char page[4096] = "\177ELF";
	unlink(path);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0 || write(fd, page, sizeof(page)) != (ssize_t)sizeof(page)) {
		perror(path);
		return -1;
	}
	void *m = mmap(NULL, sizeof(page), PROT_READ | PROT_EXEC, MAP_PRIVATE,
		       fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		perror("mmap");
		return -1;
	}
	munmap(m, sizeof(page));
	if (unlink(path) < 0 || mkfifo(path, 0644) < 0) {
		perror(path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = 10;
	long times = 1;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--times") && i + 1 < argc)
			times = atol(argv[++i]);
		else
			dir = argv[i];
	}
	if (!dir || times < 1 || times > 100) {
		fprintf(stderr, "usage: fifo_python [--times 1..100] "
				"[--seconds S] DIR\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/python3.8", dir);
	wait_for_start();
	for (long i = 0; i < times; i++)
		if (map_then_fifo(path) < 0)
			return 1;
	printf("mapped\n");
	fflush(stdout);
	return fifo_spin(now() + seconds) == 0;
}
