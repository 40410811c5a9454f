// SPDX-License-Identifier: MIT
/*
 * A process whose JIT perf map (/tmp/perf-PID.map) works against
 * cpa-unwind. It runs code it copied into anonymous executable memory,
 * as a JIT does, called from main -> run_jit, and its map:
 *
 *   --flood N        starts with N lines (1 to 20M) naming no code it runs
 *   --grow-ms MS     gets one more such line every MS ms (V8 keeps adding)
 *   --jit-every MS   gets a new function every MS ms: its line is written
 *                    (and flushed) first, then the code runs in it, as V8
 *                    logs a function when it compiles it; each is named
 *                    jit_fn_N, and its samples must be named so
 *   --link TARGET    is a symlink to TARGET, a file its user cannot read
 *
 * The code it runs first is named jit_spin in the map (last, after a
 * flood) unless --link. It prints "code ADDR" (hex) and "ready PID" when
 * the map is written, then runs for --seconds S and removes its map.
 *
 * usage: perfmap_flood [--seconds S] [--flood N] [--grow-ms MS]
 *                      [--jit-every MS] [--link TARGET]
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A function that spins about a millisecond and returns. */
#if defined(__x86_64__)
static const unsigned char spin_code[] = {
	0xb9, 0x00, 0x00, 0x02, 0x00,	/* mov $0x20000, %ecx */
	0xf3, 0x90,			/* 1: pause */
	0xff, 0xc9,			/* dec %ecx */
	0x75, 0xfa,			/* jnz 1b */
	0xc3,				/* ret */
};
#elif defined(__aarch64__)
static const unsigned char spin_code[] = {
	0x00, 0x00, 0xa4, 0x52,		/* mov w0, #0x20000 */
	0x3f, 0x20, 0x03, 0xd5,		/* 1: yield */
	0x00, 0x04, 0x00, 0x71,		/* subs w0, w0, #1 */
	0xc1, 0xff, 0xff, 0x54,		/* b.ne 1b */
	0xc0, 0x03, 0x5f, 0xd6,		/* ret */
};
#else
#error "perfmap_flood: no spin function for this architecture"
#endif

#define NOINLINE __attribute__((noinline))

static char map_path[64];
static FILE *map;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A new copy of the spin function in executable anonymous memory. */
static void (*new_code(void))(void)
{
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	memcpy(m, spin_code, sizeof(spin_code));
	if (mprotect(m, 4096, PROT_READ | PROT_EXEC) < 0)
		return NULL;
	__builtin___clear_cache((char *)m, (char *)m + sizeof(spin_code));
	return (void (*)(void))m;
}

static void map_line(void (*fn)(void), const char *name)
{
	fprintf(map, "%lx %zx %s\n", (unsigned long)(uintptr_t)fn,
		sizeof(spin_code), name);
	fflush(map);
}

/* A line naming no code: above anything mapped here. */
static void junk_line(unsigned long i)
{
	fprintf(map, "%lx 10 flood_%08lx_padding_to_look_like_a_js_name\n",
		0x7e0000000000ul + i * 16, i);
}

NOINLINE static void run_jit(void (*fn)(void))
{
	fn();
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

static void on_term(int sig)
{
	(void)sig;
	unlink(map_path);
	_exit(0);
}

int main(int argc, char **argv)
{
	double seconds = 10, grow_ms = 0, jit_ms = 0;
	unsigned long flood = 0;
	const char *link_to = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--flood"))
			flood = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--grow-ms"))
			grow_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--jit-every"))
			jit_ms = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--link"))
			link_to = argv[i + 1];
	}
	if (flood > 20000000ul || seconds <= 0 || seconds > 600) {
		fprintf(stderr, "usage: perfmap_flood [--seconds 1..600] "
				"[--flood 0..20M] [--grow-ms MS] "
				"[--jit-every MS] [--link TARGET]\n");
		return 2;
	}
	snprintf(map_path, sizeof(map_path), "/tmp/perf-%d.map", (int)getpid());
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	unlink(map_path);
	void (*fn)(void) = new_code();
	if (!fn) {
		perror("perfmap_flood: code");
		return 1;
	}
	if (link_to) {
		if (symlink(link_to, map_path) < 0) {
			perror(map_path);
			return 1;
		}
	} else {
		map = fopen(map_path, "w");
		if (!map) {
			perror(map_path);
			return 1;
		}
		for (unsigned long i = 0; i < flood; i++)
			junk_line(i);
		map_line(fn, "jit_spin");
	}
	printf("code %lx\nready %d\n", (unsigned long)(uintptr_t)fn,
	       (int)getpid());
	fflush(stdout);
	double start = now(), next_grow = start + grow_ms / 1000,
	       next_jit = start + jit_ms / 1000;
	unsigned long grown = flood, fns = 0;
	char name[64];
	while (now() < start + seconds) {
		run_jit(fn);
		if (map && grow_ms > 0 && now() >= next_grow) {
			junk_line(grown++);
			fflush(map);
			next_grow += grow_ms / 1000;
		}
		if (map && jit_ms > 0 && now() >= next_jit) {
			void (*f)(void) = new_code();
			if (f) {
				snprintf(name, sizeof(name), "jit_fn_%lu", fns++);
				map_line(f, name);
				fn = f;
			}
			next_jit += jit_ms / 1000;
		}
	}
	unlink(map_path);
	return 0;
}
