/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Facts about a process read from /proc: when it started (to tell one
 * process from an earlier one that had the same pid), and the lines of
 * /proc/PID/status that cpa acts on. The one reader of each file.
 */
#ifndef CPA_PROCFS_H
#define CPA_PROCFS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * When the process started, in CLOCK_REALTIME nanoseconds (the clock of
 * file times), to the kernel's clock tick; 0 when it cannot be read (the
 * process has exited). The kernel counts a start from boot, so this is
 * rebased on the clocks' difference now.
 */
uint64_t cpa_proc_start_realtime_ns(uint32_t pid);

#define CPA_PROC_MAX_GROUPS 64

/* What cpa reads of /proc/PID/status. */
struct cpa_proc_status {
	uint32_t nspid;		/* the last NSpid: its pid in its namespace */
	uint64_t sigcgt;	/* signals it catches */
	uint32_t fsuid, fsgid;	/* the ids its file accesses are judged by */
	unsigned ngroups;	/* supplementary groups */
	uint32_t groups[CPA_PROC_MAX_GROUPS];
	bool groups_cut;	/* it has more than fit */
	bool have_ids;		/* Uid and Gid were there (not a zombie) */
};

/* Reads it; false when the process is gone. */
bool cpa_proc_status(uint32_t pid, struct cpa_proc_status *st);

#endif
