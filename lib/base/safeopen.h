/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * The one way a cpa tool opens a file on a monitored process's behalf:
 * the objects it maps, their separate debug files, the interpreter files
 * cpa-capture reads for Python, its perf map. Those paths are chosen by
 * whoever runs the process, and cpa reads them with more privilege than
 * that user has, so (docs/security.md, "Files read on a process's
 * behalf"):
 *
 *  - a process's path is resolved inside the process's root directory
 *    (openat2 with RESOLVE_IN_ROOT, or an equivalent walk on kernels
 *    without it): an absolute symlink or ".." in a container ends inside
 *    the container, never on the host;
 *  - the path is first opened O_PATH, which runs no driver and cannot
 *    block, and only a regular file is opened for reading, with
 *    O_NONBLOCK|O_NOCTTY: a FIFO, device or socket is refused, not
 *    waited on;
 *  - the rules may add: the inode the process mapped (a file with
 *    another inode is refused), a size bound (a larger file is refused
 *    before it is read), and the process's own credentials (each
 *    directory walked must be searchable by the process and the file
 *    readable by it, as the kernel would judge its uid, gid and groups:
 *    a file only cpa's own privilege can reach is refused).
 *
 * Rules: callers never open() such a path themselves; a refusal is
 * counted by reason here, once, for the tools' statistics; every
 * function is safe to call from several threads at once.
 */
#ifndef CPA_SAFEOPEN_H
#define CPA_SAFEOPEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "procfs.h"

enum safeopen_refusal {
	SAFEOPEN_NOT_REGULAR = 0,	/* FIFO, device, socket, directory */
	SAFEOPEN_WRONG_FILE,	/* another inode than the mapping's */
	SAFEOPEN_UNVERIFIED,	/* host path with nothing to check it by */
	SAFEOPEN_TOO_BIG,	/* larger than the caller's bound */
	SAFEOPEN_NOT_PERMITTED,	/* the process itself could not read it */
	SAFEOPEN_REFUSAL_COUNT
};

/* Whose access a file is judged by: a process's fsuid, fsgid and
 * supplementary groups, as /proc/PID/status gives them (a group past
 * the ones that fit counts as absent). */
struct safeopen_cred {
	uid_t uid;
	gid_t gid;
	unsigned ngroups;
	gid_t groups[CPA_PROC_MAX_GROUPS];
};

/* What a file must be besides a regular file. A NULL rules pointer (or
 * 0 where the callers of old passed an inode) means no more than that. */
struct safeopen_rules {
	uint64_t ino;		/* the inode it must have; 0: any */
	uint64_t max_size;	/* bytes it may have; 0: any */
	const struct safeopen_cred *as;	/* NULL: cpa's own access */
	/* its owner's own file: one link, not reached through a symlink
	 * as the last component, readable by its owner (a process that
	 * has exited has no credentials left to judge by) */
	bool own_file;
};

/* The credentials of pid; -1 with errno ESRCH or ENOENT when it is
 * gone. */
int safeopen_cred_of(uint32_t pid, struct safeopen_cred *c);
/* The same from a status already read; -1 (ESRCH) for a zombie. */
int safeopen_cred_from(const struct cpa_proc_status *st,
		       struct safeopen_cred *c);

/*
 * An O_PATH descriptor of the root directory of pid (/proc/PID/root),
 * or -1 with errno ENOENT or ESRCH when the process is gone.
 */
int safeopen_proc_root(uint32_t pid);

/*
 * Opens path (absolute or not, as the process sees it) for reading,
 * resolved inside the directory rootfd as if it were "/", under rules
 * (may be NULL). Returns the descriptor with *st filled, or -1 (errno
 * EPERM for a refused file, EFBIG for one over max_size).
 */
int safeopen_in_root(int rootfd, const char *path,
		     const struct safeopen_rules *rules, struct stat *st);

/*
 * Opens path of process pid inside its root, as safeopen_in_root; a path
 * written from outside a chroot (/proc/PID/maps as read by another
 * process: the root's own path in front) is also tried without that
 * prefix. On success *rootfd is the process's root (the caller closes
 * it), else -1, and errno ENOENT or ESRCH say the process is gone when
 * opening its root failed.
 */
int safeopen_in_proc_root(uint32_t pid, const char *path,
			  const struct safeopen_rules *rules, struct stat *st,
			  int *rootfd);

/*
 * Opens a host path the profiler itself chose (/proc/PID/map_files/...,
 * /usr/lib/debug/.build-id/...), under the same rules.
 */
int safeopen_host(const char *path, const struct safeopen_rules *rules,
		  struct stat *st);

/* Counts a refusal decided by a caller (SAFEOPEN_UNVERIFIED). */
void safeopen_count(enum safeopen_refusal why);
/* Refusals so far, by reason. */
void safeopen_refusals(uint64_t out[SAFEOPEN_REFUSAL_COUNT]);
const char *safeopen_refusal_name(unsigned why);

#endif
