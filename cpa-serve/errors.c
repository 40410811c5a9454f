/* SPDX-License-Identifier: MIT */
/* The code directory as one table, HUATUO's statuses. */
#include <config.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"

static const struct {
	const char *code;
	int status;
} directory[] = {
	{ "invalid_request", 400 },
	{ "unauthenticated", 401 },
	{ "permission_denied", 403 },
	{ "job_not_found", 404 },
	{ "result_not_found", 404 },
	{ "route_not_found", 404 },
	{ "not_found", 404 },
	{ "container_not_found", 404 },
	{ "operation_not_found", 404 },
	{ "method_not_allowed", 405 },
	{ "job_conflict", 409 },
	{ "result_not_ready", 409 },
	{ "result_unavailable", 409 },
	{ "request_id_conflict", 409 },
	{ "request_too_large", 413 },
	{ "result_too_large", 413 },
	{ "unsupported_media_type", 415 },
	{ "execution_environment_unsupported", 422 },
	{ "quota_exceeded", 429 },
	{ "rate_limited", 429 },
	{ "operation_limit_exceeded", 429 },
	{ "internal_error", 500 },
	{ "service_not_implemented", 501 },
	{ "service_unavailable", 503 },
};

/* The node Operation API's own directory (HUATUO's §13.5), as an
 * apiserver checks a node's error answers against it. */
static const struct {
	const char *code;
	int status;
} node_directory[] = {
	{ "invalid_request", 400 },
	{ "unauthenticated", 401 },
	{ "container_not_found", 404 },
	{ "operation_not_found", 404 },
	{ "request_id_conflict", 409 },
	{ "request_too_large", 413 },
	{ "unsupported_media_type", 415 },
	{ "execution_environment_unsupported", 422 },
	{ "operation_limit_exceeded", 429 },
	{ "event_stream_limit_exceeded", 429 },
	{ "internal_error", 500 },
	{ "execution_failed", 500 },
	{ "execution_start_failed", 500 },
	{ "execution_stop_failed", 500 },
	{ "finalization_failed", 500 },
	{ "finalization_timeout", 500 },
	{ "launch_timeout", 500 },
	{ "service_not_implemented", 501 },
	{ "service_unavailable", 503 },
};

int api_node_status(const char *code)
{
	for (size_t i = 0; i < sizeof(node_directory) / sizeof(*node_directory);
	     i++)
		if (!strcmp(node_directory[i].code, code))
			return node_directory[i].status;
	return -1;
}

int api_status(const char *code)
{
	for (size_t i = 0; i < sizeof(directory) / sizeof(*directory); i++)
		if (!strcmp(directory[i].code, code))
			return directory[i].status;
	return 500;
}

json_object *api_error(const char *code, const char *message)
{
	json_object *e = json_object_new_object(), *o;

	if (api_status(code) == 500 && strcmp(code, "internal_error")) {
		code = "internal_error";
		message = "internal error";
	}
	json_object_object_add(e, "code", json_object_new_string(code));
	json_object_object_add(e, "message", json_object_new_string(
		message && message[0] ? message : code));
	o = json_object_new_object();
	json_object_object_add(o, "error", e);
	return o;
}

json_object *api_errorf(const char *code, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return api_error(code, msg);
}

json_object *api_data(json_object *data)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "data", data);
	return o;
}

const char *api_code_of(json_object *body)
{
	json_object *e, *c;

	if (!json_object_object_get_ex(body, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &c))
		return NULL;
	return json_object_get_string(c);
}
