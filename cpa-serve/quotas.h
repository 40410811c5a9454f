/* SPDX-License-Identifier: MIT */
/* How many jobs may run at once: on the host, and on one target. */
#ifndef CPA_SERVE_QUOTAS_H
#define CPA_SERVE_QUOTAS_H

#include <stddef.h>

#include "jobs.h"

/* 0 when a job of spec may start next to the active jobs among jobs[n];
 * -1 with the quota it would exceed in err. */
int quota_check(struct job *const *jobs, size_t n,
		const struct job_spec *spec, const struct serve_limits *lim,
		char *err, size_t errlen);

#endif
