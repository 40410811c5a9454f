// SPDX-License-Identifier: MIT
/* Dropping the read pages of a read-only file mapping (filepages.h). */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "filepages.h"
#include "procfs.h"

bool filepages_droppable(const void *p, size_t n)
{
	struct cpa_maps it;
	struct cpa_map m;
	uintptr_t lo = (uintptr_t)p;
	bool ok = false;
	if (!p || !n || lo + n < lo || cpa_maps_open(&it, 0) != 0)
		return false;
	while (cpa_maps_next(&it, &m))
		if (m.start <= lo && lo + n <= m.end) {
			ok = m.inode && m.perms[1] == '-' && m.perms[3] == 'p';
			break;
		}
	cpa_maps_close(&it);
	return ok;
}

void filepages_drop(const void *p, size_t n)
{
	long page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		return;
	uintptr_t mask = (uintptr_t)page - 1;
	uintptr_t lo = ((uintptr_t)p + mask) & ~mask;
	uintptr_t hi = ((uintptr_t)p + n) & ~mask;
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
}
