/* SPDX-License-Identifier: MIT */
/*
 * The one way cpa-unwind opens a file on a process's behalf: the objects
 * it maps and their separate debug files. Those paths are chosen by
 * whoever runs the process, and cpa-unwind reads them with more
 * privilege than that user has, so (docs/security.md):
 *
 *  - a process's path is resolved inside the process's root directory
 *    (openat2 with RESOLVE_IN_ROOT, or an equivalent walk on kernels
 *    without it): an absolute symlink or ".." in a container ends inside
 *    the container, never on the host;
 *  - the path is first opened O_PATH, which runs no driver and cannot
 *    block, and only a regular file is opened for reading, with
 *    O_NONBLOCK|O_NOCTTY: a FIFO, device or socket is refused, not
 *    waited on;
 *  - when the caller knows the inode the process mapped, a file with
 *    another inode is refused.
 *
 * Refusals are counted by reason for --stats.
 */
#ifndef CPA_UNWIND_SAFEOPEN_H
#define CPA_UNWIND_SAFEOPEN_H

#include <stdint.h>
#include <sys/stat.h>

enum safeopen_refusal {
	SAFEOPEN_NOT_REGULAR = 0,	/* FIFO, device, socket, directory */
	SAFEOPEN_WRONG_FILE,	/* another inode than the mapping's */
	SAFEOPEN_UNVERIFIED,	/* host path with nothing to check it by */
	SAFEOPEN_REFUSAL_COUNT
};

/*
 * An O_PATH descriptor of the root directory of pid (/proc/PID/root),
 * or -1 with errno ENOENT or ESRCH when the process is gone.
 */
int safeopen_proc_root(uint32_t pid);

/*
 * Opens path (absolute or not, as the process sees it) for reading,
 * resolved inside the directory rootfd as if it were "/". want_ino is
 * the inode the file must have, 0 when unknown. Returns the descriptor
 * with *st filled, or -1 (errno EPERM for a refused file).
 */
int safeopen_in_root(int rootfd, const char *path, uint64_t want_ino,
		     struct stat *st);

/*
 * Opens path of process pid inside its root, as safeopen_in_root; a path
 * written from outside a chroot (/proc/PID/maps as read by another
 * process: the root's own path in front) is also tried without that
 * prefix. On success *rootfd is the process's root (the caller closes
 * it), else -1, and errno ENOENT or ESRCH say the process is gone when
 * opening its root failed.
 */
int safeopen_in_proc_root(uint32_t pid, const char *path, uint64_t want_ino,
			  struct stat *st, int *rootfd);

/*
 * Opens a host path the profiler itself chose (/proc/PID/map_files/...,
 * /usr/lib/debug/.build-id/...), under the same file-type and inode
 * rules.
 */
int safeopen_host(const char *path, uint64_t want_ino, struct stat *st);

/* Counts a refusal decided by a caller (SAFEOPEN_UNVERIFIED). */
void safeopen_count(enum safeopen_refusal why);
/* Refusals so far, by reason. */
void safeopen_refusals(uint64_t out[SAFEOPEN_REFUSAL_COUNT]);
const char *safeopen_refusal_name(unsigned why);

#endif
