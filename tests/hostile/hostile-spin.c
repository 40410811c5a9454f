// SPDX-License-Identifier: MIT
/*
 * hostile-spin FILE: maps an object written by hostile-elf and spins in
 * its function hostile_spin, called from enter_hostile, called from main,
 * until killed. Prints "ready PID" once mapped.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostile.h"

__attribute__((noinline)) static void enter_hostile(void (*spin)(void))
{
	spin();
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: hostile-spin FILE\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC,
		       MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED) {
		perror(argv[1]);
		return 1;
	}
	close(fd);
	void (*spin)(void) =
		(void (*)(void))((char *)m + HOSTILE_SPIN_OFFSET);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	enter_hostile(spin);
	return 0;
}
