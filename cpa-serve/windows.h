/* SPDX-License-Identifier: MIT */
/*
 * A job's raw windows, HUATUO's GET /v1/profiling/{id}/raw. When a job
 * completes, its stream is cut at the aggregation interval (cpa-store,
 * then cpa-query --split-every) and each window becomes one JSON file:
 * the raw item, its profile the window's pprof Profile as JSON. Then an
 * index, then the publication marker; a page is those files sent as
 * they are, so a request never computes a profile.
 */
#ifndef CPA_SERVE_WINDOWS_H
#define CPA_SERVE_WINDOWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "jobs.h"

#define RAW_DEFAULT_LIMIT 20
#define RAW_MAX_LIMIT 100

/* Publishes the windows of the stream in dir (none when empty): 0, or
 * -1 with err. */
int windows_publish(const char *dir, const struct job *j,
		    const struct serve_limits *lim, bool empty, char *err,
		    size_t errlen);

/* Whether dir holds the publication marker of its job's windows. */
bool windows_published(const char *dir);

/* A page ready to send: prefix, the files joined by commas, suffix. */
struct raw_page {
	char *prefix, *suffix;
	int fds[RAW_MAX_LIMIT];
	uint64_t sizes[RAW_MAX_LIMIT];
	size_t n;
	uint64_t total;		/* bytes of the whole reply */
};

/* Opens page offset..offset+limit of the windows in dir: 200, or 413
 * result_too_large when its profiles take more than max_bytes, 503 when
 * they cannot be read (*out the error reply). */
int windows_page(const char *dir, uint64_t limit, uint64_t offset,
		 uint64_t max_bytes, struct raw_page *p, json_object **out);
void raw_page_free(struct raw_page *p);

/* The profile JSON of one window's folded text (the fuzz target's and
 * the tests' entry): a pprof Profile as protojson writes it, with
 * snake_case names and 64-bit numbers as numbers. NULL with err on a
 * malformed line. */
json_object *windows_profile(const char *folded, size_t len,
			     const struct job_spec *spec, int64_t start_ns,
			     int64_t duration_ns, char *err, size_t errlen);

/* The raw item of one window: hostname, region, both timestamps (the
 * fixed 9-digit form), container_id, profile_type, and profile, whose
 * reference it takes; the bytes of the profile's JSON in *profile_bytes
 * (what the page limit counts). */
json_object *windows_item(const struct job_spec *spec, const char *region,
			  json_object *profile, int64_t start,
			  int64_t uploaded, size_t *profile_bytes);

/* "20261201T211750Z.folded" (cpa-query --split's name) -> its start in
 * ns, or -1. */
int64_t windows_start_of(const char *name);

#endif
