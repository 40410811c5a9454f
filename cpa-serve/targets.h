/* SPDX-License-Identifier: MIT */
/*
 * The processes a job names without a pid: the JVMs of its scope (Java
 * object_alloc and object_usage take pids), or those running
 * binary_match_path. The launcher resolves them, as root, when the job
 * starts; processes started later are not added.
 */
#ifndef CPA_SERVE_TARGETS_H
#define CPA_SERVE_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

#include "spec.h"

/* Whether the job must be given its processes as pids. */
bool targets_needed(const struct job_spec *s);

/* The pids of the job's processes, comma-separated, in out (at most
 * outlen bytes); the count, 0 when none (why says what was looked for). */
size_t targets_resolve(const struct job_spec *s, char *out, size_t outlen,
		       char *why, size_t whylen);

/* Whether a process of container cid (a prefix of its id) runs now;
 * /proc/PID/cgroup is world-readable, so no privilege is needed. */
bool targets_container_exists(const char *cid);

#endif
