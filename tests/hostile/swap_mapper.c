/*
 * A process that maps a library and spins in it, for the hostile-file
 * tests (tests/bats/unwind-hostile-files.bats):
 *   main -> run_lib -> spin_outer -> spin_leaf
 * It prints "ready PID", waits for SIGUSR1 (so the mapping happens while
 * cpa-capture is recording, and reaches cpa-unwind as a side-band record
 * without an inode), loads LIB, then with --swap-fifo or --swap-link
 * TARGET replaces the file at LIB's path by a named pipe or by a symlink
 * to TARGET, prints "mapped", and spins for --seconds.
 *
 * usage: swap_mapper [--seconds S] [--swap-fifo | --swap-link TARGET] LIB
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE void run_lib(void (*outer)(void), double deadline)
{
	while (now() < deadline)
		outer();
	KEEP_FRAME();
}

int main(int argc, char **argv)
{
	double seconds = 10;
	const char *lib = NULL, *link_to = NULL;
	int fifo = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--swap-fifo"))
			fifo = 1;
		else if (!strcmp(argv[i], "--swap-link") && i + 1 < argc)
			link_to = argv[++i];
		else
			lib = argv[i];
	}
	if (!lib) {
		fprintf(stderr, "usage: swap_mapper [--seconds S] "
				"[--swap-fifo | --swap-link TARGET] LIB\n");
		return 2;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	int sig;
	sigwait(&set, &sig);

	void *h = dlopen(lib, RTLD_NOW);
	void (*outer)(void) = h ? (void (*)(void))dlsym(h, "spin_outer") : NULL;
	if (!outer) {
		fprintf(stderr, "swap_mapper: %s: %s\n", lib, dlerror());
		return 1;
	}
	if ((fifo || link_to) && unlink(lib) < 0) {
		perror(lib);
		return 1;
	}
	if (fifo && mkfifo(lib, 0644) < 0) {
		perror(lib);
		return 1;
	}
	if (link_to && symlink(link_to, lib) < 0) {
		perror(lib);
		return 1;
	}
	printf("mapped\n");
	fflush(stdout);
	run_lib(outer, now() + seconds);
	return 0;
}
