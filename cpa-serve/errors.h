/* SPDX-License-Identifier: MIT */
/*
 * The error directory: every code cpa-serve answers with, and the one
 * HTTP status each has (HUATUO's, docs/api.md). A reply's status is a
 * function of its code alone, so clients branch on the code. Bodies are
 * HUATUO's envelope: {"data": ...} on success, {"error": {"code": ...,
 * "message": ...}} on failure.
 */
#ifndef CPA_SERVE_ERRORS_H
#define CPA_SERVE_ERRORS_H

#include <json-c/json.h>

/* The status of code; 500 for a code not in the directory. */
int api_status(const char *code);

/* The status a node's error code has in the node API's directory, or
 * -1 for a code a node does not answer with. */
int api_node_status(const char *code);

/* {"error":{"code":code,"message":message}}; a code not in the
 * directory becomes internal_error ("internal error"). */
json_object *api_error(const char *code, const char *message);
json_object *api_errorf(const char *code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* {"data": data}, taking data's reference. */
json_object *api_data(json_object *data);

/* The code of an error body, or NULL for a success one. */
const char *api_code_of(json_object *body);

#endif
