/* SPDX-License-Identifier: MIT */
/*
 * Quotas count active jobs (pending, running, stopping): every job costs
 * a capture's BPF programs on every CPU, so the host's count bounds the
 * overhead, and the per-target count keeps two clients from profiling the
 * same process twice over. The apiserver (--fleet) counts HUATUO's
 * way: all active jobs of the process, and those of one host name.
 */
#include <config.h>

#include <string.h>

#include "log.h"
#include "quotas.h"

int quota_check(struct job *const *jobs, size_t n,
		const struct job_spec *spec, const struct serve_limits *lim,
		char *err, size_t errlen)
{
	char target[96], other[96];
	unsigned host = 0, same = 0;

	spec_target(spec, target, sizeof(target));
	for (size_t i = 0; i < n; i++) {
		if (!job_active(jobs[i]))
			continue;
		host++;
		if (lim->fleet) {
			same += !strcmp(jobs[i]->spec.hostname, spec->hostname);
			continue;
		}
		spec_target(&jobs[i]->spec, other, sizeof(other));
		same += !strcmp(target, other);
	}
	if (host >= lim->max_jobs)
		return cpa_fail(err, errlen, "Job quota exceeded: %u active "
				"jobs %s, at most %u (--max-jobs)", host,
				lim->fleet ? "in the fleet" : "on this host",
				lim->max_jobs);
	if (lim->fleet && same >= lim->max_jobs_per_target)
		return cpa_fail(err, errlen, "Job quota exceeded: %u active "
				"jobs on host %s, at most %u "
				"(--max-jobs-per-target)", same, spec->hostname,
				lim->max_jobs_per_target);
	if (same >= lim->max_jobs_per_target)
		return cpa_fail(err, errlen, "Job quota exceeded: %u active "
				"jobs on target %s, at most %u "
				"(--max-jobs-per-target)", same, target,
				lim->max_jobs_per_target);
	return 0;
}
