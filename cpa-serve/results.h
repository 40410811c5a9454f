/* SPDX-License-Identifier: MIT */
/*
 * A job's results: its unwound stream (profile.cpa), rendered once when
 * the job ends into one file per format. A new format is one row.
 */
#ifndef CPA_SERVE_RESULTS_H
#define CPA_SERVE_RESULTS_H

#include <stddef.h>

#include <json-c/json.h>

#include "child.h"

struct result_format {
	const char *endpoint;	/* /v1/profiling/ID/ENDPOINT */
	const char *render;	/* cpa-render --format */
	const char *file;	/* in the job's directory */
	const char *content_type;
};

extern const struct result_format result_formats[];
extern const size_t n_result_formats;

#define RESULT_STREAM "profile.cpa"
#define RESULT_LOG "log"

const struct result_format *results_format(const char *endpoint);

/* Renders every format from the job's stream, each cpa-render under
 * lim: 0, 1 when it holds no sample (err says so), -1 with err on
 * failure. */
int results_render(const char *dir, const struct cpa_limits *lim, char *err,
		   size_t errlen);

#endif
