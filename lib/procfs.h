/* SPDX-License-Identifier: MIT */
/*
 * Facts about a process read from /proc, for tools that must tell one
 * process from an earlier one that had the same pid.
 */
#ifndef CPA_PROCFS_H
#define CPA_PROCFS_H

#include <stdint.h>

/*
 * When the process started, in CLOCK_REALTIME nanoseconds (the clock of
 * file times), to the kernel's clock tick; 0 when it cannot be read (the
 * process has exited). The kernel counts a start from boot, so this is
 * rebased on the clocks' difference now.
 */
uint64_t cpa_proc_start_realtime_ns(uint32_t pid);

#endif
