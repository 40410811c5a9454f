/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Child processes with bounds. What a child may cost is set in the child
 * before it runs its program (address space, data, CPU seconds, file
 * size, as rlimits), and how long it may take is a deadline the parent
 * enforces by killing the child's process group. Whoever starts a child
 * on someone else's behalf (a request, a job) starts it here, so that no
 * input can make one grow or run without end.
 *
 * Rules:
 * - Safe in a threaded program: between fork and exec the child makes
 *   system calls only (dup2, setrlimit, setpgid, prctl, execve), and so
 *   must the in_child hook.
 * - Each child leads its own process group unless pgid says which to
 *   join, so that a deadline kills what the child started too.
 * - A limit of 0 is no limit.
 */
#ifndef CPA_CHILD_H
#define CPA_CHILD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "clock.h"

struct cpa_limits {
	uint64_t mem;		/* RLIMIT_AS, bytes */
	uint64_t data;		/* RLIMIT_DATA, bytes (heap, anonymous maps) */
	uint64_t cpu_s;		/* RLIMIT_CPU: SIGXCPU at it, SIGKILL 1 s on */
	uint64_t fsize;		/* RLIMIT_FSIZE, bytes: SIGXFSZ past it */
	uint64_t wall_ms;	/* killed this long after its start */
};

struct cpa_spawn {
	const char *path;
	char *const *argv;
	int fd[3];		/* its stdin, stdout, stderr; -1: /dev/null */
	pid_t pgid;		/* 0: a group of its own */
	const struct cpa_limits *limits;	/* NULL: none */
	/* run in the child just before exec (system calls only) */
	void (*in_child)(void *arg);
	void *arg;
};

/* Starts the child: its pid, or -1 with errno. */
pid_t cpa_spawn(const struct cpa_spawn *s);

/* Which bound ended a child. */
enum cpa_limit_hit {
	CPA_LIMIT_NONE, CPA_LIMIT_WALL, CPA_LIMIT_CPU, CPA_LIMIT_MEM,
	CPA_LIMIT_FSIZE,
};

/* "wall time", "CPU time", "memory", "file size" (NULL for NONE) */
const char *cpa_limit_name(enum cpa_limit_hit hit);

/*
 * The bound a wait status shows (CPU and file size by their signals);
 * memory shows only in the child's words, so last_line (its last line on
 * stderr, may be NULL) is read for an out-of-memory message when a
 * memory limit was set.
 */
enum cpa_limit_hit cpa_limit_of(int status, const struct cpa_limits *lim,
				const char *last_line);

/* Monotonic milliseconds (clock.h's cpa_mono_ns); a deadline is now +
 * wall_ms. */
static inline int64_t cpa_mono_ms(void)
{
	return (int64_t)(cpa_mono_ns() / CPA_NSEC_PER_MSEC);
}

/*
 * Waits for pid until deadline_ms (cpa_mono_ms time; < 0: no deadline);
 * past it the child's group gets SIGKILL and *killed is set. The wait
 * status in *status. 0, or -1 with errno.
 */
int cpa_wait_until(pid_t pid, int64_t deadline_ms, int *status,
		   bool *killed);

#endif
