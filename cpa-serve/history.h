/* SPDX-License-Identifier: MIT */
/* GET /v1/history: a time range of `cpa monitor`'s store, as cpa show
 * would write it, through cpa-query (and cpa-render). */
#ifndef CPA_SERVE_HISTORY_H
#define CPA_SERVE_HISTORY_H

#include <stddef.h>

#include <json-c/json.h>

#include "buf.h"
#include "child.h"

#define HISTORY_MAX_ARGS 32

struct query_arg {
	const char *key, *value;
};

/*
 * Answers a history request of args[n] from the store in dir (or, when
 * dir is an http:// URL, from the fleet's tables there), its
 * children under lim: 200 with the body in *body and its type in *ctype,
 * or an error status and a JSON body in *err_out (400 for a bad value,
 * 413 for a query past its memory, CPU or output bound, 503 past its
 * wall time).
 */
int history_answer(const char *dir, const struct query_arg *args, size_t n,
		   const struct cpa_limits *lim, struct cpa_buf *body,
		   const char **ctype, json_object **err_out);

#endif
