/* SPDX-License-Identifier: MIT */
/*
 * GET /metrics: cpa-serve's own series in Prometheus's text format
 * (lib/base/promtext.h keeps the format's conventions). The requests
 * and connections it answered, its jobs, and its process; a module with
 * series of its own (the fleet's) adds a writer with metrics_add, and
 * each writer opens its own families, named cpa_serve_... or cpa_....
 */
#ifndef CPA_SERVE_METRICS_H
#define CPA_SERVE_METRICS_H

#include <stdio.h>

#include "api.h"

/* Adds a writer of families, called on every scrape from an HTTP
 * thread (so it reads what it shows under its own lock, or atomically).
 * Call before serving; at most 8. */
void metrics_add(void (*write)(FILE *out));

/* Counts an answer by its status (the HTTP side, on every response). */
void metrics_count(int status);

/* The route's handler. */
void metrics_answer(struct api_request *r, struct answer *a);

#endif
