/* SPDX-License-Identifier: MIT */
/*
 * GET /v1/profiling/capabilities (HUATUO's static table, from spec.c's
 * rows) and what the host's kernel offers (cpa-capture --features, run
 * once at start, shown by GET /version).
 */
#ifndef CPA_SERVE_CAPABILITIES_H
#define CPA_SERVE_CAPABILITIES_H

#include <stddef.h>

#include <json-c/json.h>

/* {"items": [...]}: the nine rows in HUATUO's shape. */
json_object *capabilities_json(void);

/* {"kernel": ..., "features": {...}} from cpa-capture --features, as
 * JSON text (malloc'd); NULL with err when cpa-capture cannot say. */
char *capabilities_probe(char *err, size_t errlen);

#endif
