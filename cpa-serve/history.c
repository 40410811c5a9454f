/* SPDX-License-Identifier: MIT */
/*
 * History answers come from the same tools as `cpa show`: cpa-query
 * selects the range, and for pictures hands cpa-render the stream. Every
 * parameter is passed as one `--name=value` argument, so a value can
 * never become an option of its own.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "errors.h"
#include "history.h"
#include "log.h"
#include "run.h"

/* Parameters passed on to cpa-query under the same name. */
static const char *const query_params[] = {
	"from", "to", "last", "comm", "pid", "tid", "cgroup", "container",
	"pod", "cpu", "env", "kind", "grep", "exclude", "host",
	"diff-from", "diff-to",
};

static const struct {
	const char *name, *content_type;
	bool rendered;		/* by cpa-render from the stream */
} formats[] = {
	{ "folded", "text/plain; charset=utf-8", false },
	{ "pprof", "application/octet-stream", false },
	{ "svg", "image/svg+xml", true },
	{ "html", "text/html; charset=utf-8", true },
};

#define HISTORY_MAX_BYTES (256u << 20)

static int bad_request(json_object **err_out, const char *field,
		       const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad_request(json_object **err_out, const char *field,
		       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	(void)field;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*err_out = api_error("invalid_request", msg);
	return 400;
}

int history_answer(const char *dir, const struct query_arg *args, size_t n,
		   const struct cpa_limits *lim, struct cpa_buf *body,
		   const char **ctype, json_object **err_out)
{
	char *qargv[HISTORY_MAX_ARGS + 4], *rargv[3];
	char *owned[HISTORY_MAX_ARGS + 3];
	size_t nq = 0, n_owned = 0, f = 0;
	struct run_result r;
	int code = 200;
	bool diff = false;	/* a baseline: folded lines of two counts */

	if (n > HISTORY_MAX_ARGS)
		return bad_request(err_out, NULL, "more than %d parameters",
				   HISTORY_MAX_ARGS);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(args[i].key, "format")) {
			for (f = 0; f < sizeof(formats) / sizeof(*formats); f++)
				if (!strcmp(formats[f].name, args[i].value))
					break;
			if (f == sizeof(formats) / sizeof(*formats))
				return bad_request(err_out, "format", "format: "
						   "'%s' is not folded, svg, "
						   "pprof or html",
						   args[i].value);
			continue;
		}
		size_t k;

		for (k = 0; k < sizeof(query_params) / sizeof(*query_params); k++)
			if (!strcmp(query_params[k], args[i].key))
				break;
		if (k == sizeof(query_params) / sizeof(*query_params))
			return bad_request(err_out, args[i].key, "unknown "
					   "parameter '%s'", args[i].key);
		if (!args[i].value[0])
			return bad_request(err_out, args[i].key, "%s: empty "
					   "value", args[i].key);
		diff |= !strcmp(args[i].key, "diff-from");
	}

	qargv[nq++] = (char *)run_tool("cpa-query");
	/* the store, or with cpa-serve --clickhouse the fleet's URL */
	bool fleet = !strncmp(dir, "http://", 7);
	owned[n_owned] = cpa_malloc(strlen(dir) + 16);
	sprintf(owned[n_owned], fleet ? "--clickhouse=%s" : "--dir=%s", dir);
	qargv[nq++] = owned[n_owned++];
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(args[i].key, "format"))
			continue;
		owned[n_owned] = cpa_malloc(strlen(args[i].key) +
					    strlen(args[i].value) + 4);
		sprintf(owned[n_owned], "--%s=%s", args[i].key, args[i].value);
		qargv[nq++] = owned[n_owned++];
	}
	qargv[nq++] = formats[f].rendered && !diff ? "--format=stream"
		      : !strcmp(formats[f].name, "pprof") ? "--format=pprof"
							  : "--format=folded";
	qargv[nq] = NULL;
	owned[n_owned] = cpa_malloc(strlen(formats[f].name) + 16);
	sprintf(owned[n_owned], "--format=%s", formats[f].name);
	rargv[0] = (char *)run_tool("cpa-render");
	rargv[1] = owned[n_owned++];
	rargv[2] = NULL;

	if (run_pipeline(qargv, formats[f].rendered ? rargv : NULL, -1, -1,
			 HISTORY_MAX_BYTES, lim, &r) < 0) {
		/* cpa-query says 2 for a bad option value: the client's */
		bool client = WIFEXITED(r.status[0]) &&
			      WEXITSTATUS(r.status[0]) == 2;

		code = r.hit == CPA_LIMIT_WALL ? 503
		       : r.hit || r.over ? 413 : client ? 400 : 500;
		*err_out = api_error(code == 503 ? "service_unavailable"
				     : code == 413 ? "result_too_large"
				     : code == 400 ? "invalid_request"
				     : "internal_error", r.err);
		run_result_free(&r);
	} else {
		*body = r.out;
		*ctype = formats[f].content_type;
	}
	for (size_t i = 0; i < n_owned; i++)
		free(owned[i]);
	return code;
}
