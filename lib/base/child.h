/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Child processes with bounds and with less than their parent holds. What
 * a child may cost is set in the child before it runs its program
 * (address space, data, CPU seconds, file size, as rlimits), and how long
 * it may take is a deadline the parent enforces by killing the child's
 * process group. What it may do is set there too: a capability bounding
 * set, another user, no_new_privs, a signal at its parent's death. This is
 * the one place cpa starts a program on someone else's behalf:
 * cpa-supervise starts every stage through it, cpa-serve its request
 * children.
 *
 * Rules:
 * - Safe in a threaded program: between fork and exec the child makes
 *   system calls only (dup2, setrlimit, setpgid, prctl, capset, setuid,
 *   execve), and so must the in_child hook. Whatever needs the C library
 *   (looking a user up) is done by the parent first: cpa_spawn_user.
 * - Each child leads its own process group unless pgid says which to
 *   join (or -1: its parent's), so that a deadline kills what the child
 *   started too.
 * - An exec that fails is the parent's to report: cpa_spawn returns -1
 *   with the exec's errno, never a child that exits 127 later.
 * - Capabilities are only ever reduced, and only when the parent is root:
 *   an unprivileged parent has nothing to give away.
 * - A limit of 0 is no limit.
 */
#ifndef CPA_CHILD_H
#define CPA_CHILD_H

#include <stdbool.h>
#include <stddef.h>
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

#define CPA_SPAWN_MAX_GROUPS 64

/* A user to run as, looked up before the fork. */
struct cpa_spawn_user {
	uid_t uid;
	gid_t gid;
	gid_t groups[CPA_SPAWN_MAX_GROUPS];
	size_t n_groups;
};

struct cpa_spawn {
	const char *path;
	char *const *argv;
	int fd[3];		/* its stdin, stdout, stderr; -1: /dev/null */
	pid_t pgid;		/* 0: a group of its own; -1: the parent's */
	const struct cpa_limits *limits;	/* NULL: none */
	/* as root, the capabilities it keeps (bounding, inheritable; its
	 * permitted set at exec), ended by -1; NULL: all. A user keeps
	 * none whatever this says. */
	const int *caps;
	const struct cpa_spawn_user *user;	/* NULL: the parent's */
	int death_sig;		/* sent to it when the parent dies; 0: none */
	bool no_new_privs;
	/* run in the child just before exec (system calls only) */
	void (*in_child)(void *arg);
	void *arg;
};

/* Starts the child: its pid, or -1 with errno (the exec's too). */
pid_t cpa_spawn(const struct cpa_spawn *s);

/* Does what cpa_spawn's child does, then execs path (looked up on PATH)
 * in this process: returns only on failure, -1 with errno, *what naming
 * the step that failed. */
int cpa_spawn_exec(const struct cpa_spawn *s, const char **what);

/* Looks the user up for cpa_spawn: 0, or -1 when there is none. */
int cpa_spawn_user(const char *name, struct cpa_spawn_user *u);

/* Keeps only caps (ended by -1) in this process's bounding, permitted,
 * effective and inheritable sets, and none ambient; nothing to do unless
 * root. 0, or -1 with errno. */
int cpa_caps_keep(const int *caps);

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

/* The path of a cpa tool: next to the running program (installed side by
 * side), in the build tree's TOOL/TOOL beside it, else on PATH; name
 * itself when none is found (the exec then says so). */
void cpa_find_tool(const char *name, char *out, size_t outlen);

/* Capability names as the kernel's headers spell them, in lower case and
 * without CAP_ ("sys_ptrace"), as setpriv prints them; NULL past the last
 * one this build knows. */
const char *cpa_cap_name(int cap);

#endif
