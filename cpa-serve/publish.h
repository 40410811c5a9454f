/* SPDX-License-Identifier: MIT */
/*
 * A node's job windows into the fleet's ClickHouse (--publish URL), as
 * HUATUO's node saves each window to the shared store: the job's stream
 * is cut into windows of its aggregation interval (cpa-store
 * --interval), pushed with the job's request_id (cpa-push --job --once,
 * the fleet's schema, docs/fleet.md), and the publication marker is
 * written by cpa-push once every window is in. Only then is the job
 * completed; a failure is the job's finalization_failed.
 */
#ifndef CPA_SERVE_PUBLISH_H
#define CPA_SERVE_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>

#include "jobs.h"

/* Publishes the job's stream in dir (none when empty: the marker
 * alone): 0, or -1 with err. */
int publish_job(const char *dir, const struct job *j,
		const struct serve_limits *lim, bool empty, char *err,
		size_t errlen);

#endif
