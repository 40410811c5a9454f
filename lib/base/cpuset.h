/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/* CPU sets as the kernel writes them: "0", "0,2-3", "0-7,16-23". */
#ifndef CPA_CPUSET_H
#define CPA_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPA_CPUSET_MAX 4096

struct cpa_cpuset {
	uint64_t bits[CPA_CPUSET_MAX / 64];
};

/* Returns 0, or -1 with err set to what is wrong and where. */
int cpa_cpuset_parse(const char *s, struct cpa_cpuset *set, char *err,
		     size_t errlen);
static inline bool cpa_cpuset_has(const struct cpa_cpuset *set, unsigned cpu)
{
	return cpu < CPA_CPUSET_MAX && (set->bits[cpu / 64] >> (cpu % 64)) & 1;
}
void cpa_cpuset_add(struct cpa_cpuset *set, unsigned cpu);
unsigned cpa_cpuset_count(const struct cpa_cpuset *set);
/* The online CPUs, from /sys/devices/system/cpu/online. 0 or -1. */
int cpa_cpuset_online(struct cpa_cpuset *set);

#endif
