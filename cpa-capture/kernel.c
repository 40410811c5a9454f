/* SPDX-License-Identifier: MIT */
/* Kernel releases with known hazards for cpa-capture. */
#include <config.h>

#include <stdio.h>

#include "cpa-capture.h"

/*
 * Upstream 5.19 to 6.3 (6.1 LTS included) can deadlock when a BPF program
 * copies user memory from NMI context while the task holds mmap_lock
 * (copy_from_user_nofault). Stable branches fixed it later, but a release
 * number cannot tell, so every release of those series counts.
 */
bool kernel_nofault_hazard(const char *release)
{
	unsigned major = 0, minor = 0;

	if (sscanf(release, "%u.%u", &major, &minor) != 2)
		return false;
	return (major == 5 && minor >= 19) || (major == 6 && minor <= 3);
}
