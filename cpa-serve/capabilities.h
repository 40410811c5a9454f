/* SPDX-License-Identifier: MIT */
/* GET /v1/profiling/capabilities: what jobs this host can run. */
#ifndef CPA_SERVE_CAPABILITIES_H
#define CPA_SERVE_CAPABILITIES_H

#include "jobs.h"

/*
 * Builds the answer from cpa-capture --features (run once, at start)
 * and the job table. Returns it as JSON text (malloc'd); NULL with err
 * when cpa-capture cannot say.
 */
char *capabilities_probe(const struct serve_limits *lim, char *err,
			 size_t errlen);

#endif
