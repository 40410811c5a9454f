/* SPDX-License-Identifier: MIT */
/*
 * The route table and its handlers. A path is matched segment by
 * segment, so nothing in it reaches the file system but a job id that
 * spec_id_valid passed (through the job table) and a result format that
 * is a row of a table. Literal segments win over "{id}", so
 * /v1/profiling/capabilities is never a job.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "capabilities.h"
#include "errors.h"
#include "fleetraw.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "querier.h"
#include "results.h"
#include "spec.h"
#include "ui.h"

static struct api_config cfg;

void api_configure(const struct api_config *c)
{
	cfg = *c;
}

const struct api_config *api_config(void)
{
	return &cfg;
}

static void json_answer(struct answer *a, int status, json_object *body)
{
	a->kind = ANSWER_JSON;
	a->status = status;
	a->json = body;
}

static void error_answer(struct answer *a, const char *code,
			 const char *message)
{
	json_answer(a, api_status(code), api_error(code, message));
}

static const char *arg(const struct api_request *r, const char *key)
{
	const char *v = NULL;

	for (size_t i = 0; i < r->args->n; i++)
		if (!strcmp(r->args->v[i].key, key))
			v = r->args->v[i].value;
	return v;
}

/* A page parameter: its default when absent; an explicit value must be
 * a whole number in [min, max] (limit=0 is refused, not clamped). */
static int page_arg(const struct api_request *r, const char *key,
		    uint64_t dflt, uint64_t min, uint64_t max, uint64_t *out,
		    struct answer *a)
{
	const char *v = arg(r, key);
	char *end, msg[160];

	*out = dflt;
	if (!v)
		return 0;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (!v[0] || v[0] == '-' || v[0] == '+' || *end || errno ||
	    *out < min || *out > max) {
		snprintf(msg, sizeof(msg), "%s: expected an integer from %llu "
			 "to %llu", key, (unsigned long long)min,
			 (unsigned long long)max);
		error_answer(a, "invalid_request", msg);
		return -1;
	}
	return 0;
}

static void h_empty(struct api_request *r, struct answer *a)
{
	(void)r;
	a->kind = ANSWER_EMPTY;
	a->status = 204;
}

static void h_version(struct api_request *r, struct answer *a)
{
	json_object *o = json_object_new_object(), *f;

	(void)r;
	json_object_object_add(o, "name", json_object_new_string("cpa-serve"));
	json_object_object_add(o, "version",
			       json_object_new_string(PACKAGE_VERSION));
	f = cfg.features ? json_tokener_parse(cfg.features) : NULL;
	if (f) {
		json_object_object_foreach(f, k, v)
			json_object_object_add(o, k, json_object_get(v));
		json_object_put(f);
	}
	json_answer(a, 200, api_data(o));
}

static void h_openapi(struct api_request *r, struct answer *a);

static void h_capabilities(struct api_request *r, struct answer *a)
{
	(void)r;
	json_answer(a, 200, api_data(capabilities_json()));
}

static void h_create(struct api_request *r, struct answer *a)
{
	struct job_spec spec;
	char err[400];
	json_object *out;

	if (spec_parse(BODY_CREATE, r->body, r->body_len, &spec, NULL, err,
		       sizeof(err))) {
		error_answer(a, "invalid_request", err);
		return;
	}
	a->status = jobs_create(r->user, &spec, &out);
	json_answer(a, a->status, out);
	if (a->status == 201) {
		json_object *d, *id;

		if (json_object_object_get_ex(out, "data", &d) &&
		    json_object_object_get_ex(d, "request_id", &id))
			snprintf(a->location, sizeof(a->location),
				 "/v1/profiling/%s", json_object_get_string(id));
	}
}

static void h_list(struct api_request *r, struct answer *a)
{
	uint64_t limit, offset;
	json_object *out;

	if (page_arg(r, "limit", 100, 1, 1000, &limit, a) ||
	    page_arg(r, "offset", 0, 0, (uint64_t)1 << 62, &offset, a))
		return;
	a->status = jobs_list(r->user, limit, offset, &out);
	json_answer(a, a->status, out);
}

static void h_get(struct api_request *r, struct answer *a)
{
	json_object *out;

	a->status = jobs_get(r->user, r->seg[2], &out);
	json_answer(a, a->status, out);
}

static void h_stop(struct api_request *r, struct answer *a)
{
	json_object *out;

	a->status = jobs_stop(r->user, r->seg[2], &out);
	json_answer(a, a->status, out);
}

static void h_raw(struct api_request *r, struct answer *a)
{
	uint64_t limit, offset;
	json_object *out = NULL;

	if (page_arg(r, "limit", RAW_DEFAULT_LIMIT, 1, RAW_MAX_LIMIT, &limit,
		     a) ||
	    page_arg(r, "offset", 0, 0, (uint64_t)1 << 62, &offset, a))
		return;
	if (cfg.fleet) {	/* from the fleet's store, off this thread */
		struct fleetraw_req *q = cpa_calloc(1, sizeof(*q));

		a->status = jobs_raw_check(r->user, r->seg[2], &q->spec,
					   &q->max_page, &out);
		if (a->status) {
			free(q);
			json_answer(a, a->status, out);
			return;
		}
		snprintf(q->id, sizeof(q->id), "%s", r->seg[2]);
		q->limit = limit;
		q->offset = offset;
		a->kind = ANSWER_DEFER;
		a->work = fleetraw_work;
		a->work_arg = q;
		return;
	}
	a->status = jobs_raw(r->user, r->seg[2], limit, offset, &a->page,
			     &out);
	if (a->status == 200)
		a->kind = ANSWER_RAW;
	else
		json_answer(a, a->status, out);
}

/* cpa's own formats of a result: flamegraph, pprof, speedscope, folded */
static void h_result(struct api_request *r, struct answer *a)
{
	const struct result_format *f = results_format(r->seg[3]);
	json_object *out = NULL;
	char dir[4300];

	a->status = jobs_result_dir(r->user, r->seg[2], dir, sizeof(dir), &out);
	if (a->status != 200) {
		json_answer(a, a->status, out);
		return;
	}
	a->kind = ANSWER_FILE;
	a->content_type = f->content_type;
	snprintf(a->path, sizeof(a->path), "%s/%s", dir, f->file);
}


static void h_history(struct api_request *r, struct answer *a)
{
	(void)r;
	if (!cfg.store_dir) {
		error_answer(a, "route_not_found", "no store: cpa-serve was "
			     "started without --dir or --clickhouse");
		return;
	}
	a->kind = ANSWER_HISTORY;
}

static void h_op_start(struct api_request *r, struct answer *a)
{
	struct spec_request req;
	struct job_spec spec;
	char err[400];
	json_object *out;

	if (spec_parse(BODY_OPERATION, r->body, r->body_len, &spec, &req, err,
		       sizeof(err))) {
		error_answer(a, "invalid_request", err);
		return;
	}
	a->status = ops_start(&spec, &req, &out);
	json_answer(a, a->status, out);
}

static void h_op_get(struct api_request *r, struct answer *a)
{
	json_object *out;

	a->status = ops_get(r->seg[2], &out);
	json_answer(a, a->status, out);
}

static void h_op_stop(struct api_request *r, struct answer *a)
{
	json_object *out;

	a->status = ops_stop(r->seg[2], &out);
	json_answer(a, a->status, out);
}

/* Literal routes before those with "{id}" in the same place. */
static const struct route routes[] = {
	{ "GET", "/healthz", AUTH_PUBLIC, BODY_NONE, h_empty },
	{ "GET", "/readyz", AUTH_PUBLIC, BODY_NONE, h_empty },
	{ "GET", "/version", AUTH_PUBLIC, BODY_NONE, h_version },
	{ "GET", "/metrics", AUTH_PUBLIC, BODY_NONE, metrics_answer },
	{ "GET", "/openapi.json", AUTH_PUBLIC, BODY_NONE, h_openapi },
	{ "GET", "/ui", AUTH_PUBLIC, BODY_NONE, ui_answer },
	{ "GET", "/v1/profiling/capabilities", AUTH_USER, BODY_NONE,
	  h_capabilities },
	{ "POST", "/v1/profiling", AUTH_USER, BODY_JSON, h_create },
	{ "GET", "/v1/profiling", AUTH_USER, BODY_NONE, h_list },
	{ "POST", "/v1/profiling/flamegraph/querier.v1.QuerierService/{id}",
	  AUTH_ADMIN, BODY_PROTO, querier_handle },
	/* Pyroscope's own path, as Grafana's data source calls it */
	{ "POST", "/querier.v1.QuerierService/{id}", AUTH_ADMIN, BODY_PROTO,
	  querier_handle },
	{ "GET", "/v1/profiling/{id}", AUTH_USER, BODY_NONE, h_get },
	{ "POST", "/v1/profiling/{id}/stop", AUTH_USER, BODY_NONE, h_stop },
	{ "GET", "/v1/profiling/{id}/raw", AUTH_USER, BODY_NONE, h_raw },
	{ "GET", "/v1/profiling/{id}/flamegraph", AUTH_USER, BODY_NONE,
	  h_result },
	{ "GET", "/v1/profiling/{id}/pprof", AUTH_USER, BODY_NONE, h_result },
	{ "GET", "/v1/profiling/{id}/speedscope", AUTH_USER, BODY_NONE,
	  h_result },
	{ "GET", "/v1/profiling/{id}/folded", AUTH_USER, BODY_NONE, h_result },
	{ "GET", "/v1/history", AUTH_USER, BODY_NONE, h_history },
	{ "POST", "/v1/operations", AUTH_NODE, BODY_JSON, h_op_start },
	{ "GET", "/v1/operations/{id}", AUTH_NODE, BODY_NONE, h_op_get },
	{ "POST", "/v1/operations/{id}/stop", AUTH_NODE, BODY_NONE,
	  h_op_stop },
};
static const size_t n_routes = sizeof(routes) / sizeof(routes[0]);

/* How well pattern fits the segments: -1 not at all, else the count of
 * literal segments (more is a better fit). */
static int fit(const char *pattern, char *const *seg, size_t n)
{
	const char *p = pattern;
	int literal = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			return -1;
		len = strcspn(p, "/");
		if (len == 4 && !strncmp(p, "{id}", 4))
			;
		else if (strlen(seg[i]) == len && !strncmp(p, seg[i], len))
			literal++;
		else
			return -1;
		p += len;
	}
	while (*p == '/')
		p++;
	return *p ? -1 : literal;
}

const struct route *api_match(struct api_request *r, char *path,
			      const char **allowed)
{
	static const char *const allow[] = { NULL, "GET", "POST", "GET, POST" };
	const struct route *best = NULL;
	int best_fit = -1, methods = 0, path_fit = -1;
	char *save = NULL, *s;

	r->n_seg = 0;
	for (s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		if (r->n_seg == API_MAX_SEGMENTS) {
			*allowed = NULL;
			return NULL;
		}
		r->seg[r->n_seg++] = s;
	}
	/* the best fitting pattern decides the route; its method, or the
	 * methods of the patterns that fit as well, decide 405 */
	for (size_t i = 0; i < n_routes; i++) {
		int f = fit(routes[i].pattern, r->seg, r->n_seg);

		if (f > path_fit)
			path_fit = f;
	}
	for (size_t i = 0; path_fit >= 0 && i < n_routes; i++) {
		if (fit(routes[i].pattern, r->seg, r->n_seg) != path_fit)
			continue;
		methods |= !strcmp(routes[i].method, "GET") ? 1 : 2;
		if (!strcmp(routes[i].method, r->method) && path_fit > best_fit) {
			best = &routes[i];
			best_fit = path_fit;
		}
	}
	*allowed = allow[methods];
	return best;
}

/* The bundled document: each route's method and path, its security, and
 * the error envelope; enough for a client generator to find its way. */
static void h_openapi(struct api_request *r, struct answer *a)
{
	json_object *doc = json_object_new_object(), *info, *paths, *comp;

	(void)r;
	info = json_object_new_object();
	json_object_object_add(info, "title", json_object_new_string(
		"cpa-serve: HUATUO's profiling API on a node"));
	json_object_object_add(info, "version",
			       json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(doc, "openapi", json_object_new_string("3.0.3"));
	json_object_object_add(doc, "info", info);
	paths = json_object_new_object();
	for (size_t i = 0; i < n_routes; i++) {
		char path[200], *d;
		json_object *p, *op, *resp, *ok;
		char method[8];

		snprintf(path, sizeof(path), "%s", routes[i].pattern);
		/* the querier's last segment is a method, not a job */
		if ((d = strstr(path, "QuerierService/{id}")) != NULL)
			snprintf(d, sizeof(path) - (size_t)(d - path),
				 "QuerierService/{method}");
		while ((d = strstr(path, "{id}")) != NULL) {
			memmove(d + 12, d + 4, strlen(d + 4) + 1);
			memcpy(d, "{request_id}", 12);
		}
		if (!json_object_object_get_ex(paths, path, &p)) {
			p = json_object_new_object();
			json_object_object_add(paths, path, p);
		}
		size_t ml = strlen(routes[i].method);

		for (size_t k = 0; k < ml && k < sizeof(method) - 1; k++)
			method[k] = (char)(routes[i].method[k] | 0x20);
		method[ml < sizeof(method) - 1 ? ml : sizeof(method) - 1] = 0;
		op = json_object_new_object();
		resp = json_object_new_object();
		ok = json_object_new_object();
		json_object_object_add(ok, "description",
				       json_object_new_string("success"));
		json_object_object_add(resp, routes[i].handle == h_empty ? "204"
				       : routes[i].handle == h_create ? "201"
				       : routes[i].handle == h_op_start ? "202"
				       : "200", ok);
		ok = json_object_new_object();
		json_object_object_add(ok, "$ref", json_object_new_string(
			"#/components/responses/Error"));
		json_object_object_add(resp, "default", ok);
		json_object_object_add(op, "responses", resp);
		if (routes[i].auth == AUTH_PUBLIC)
			json_object_object_add(op, "security",
					       json_object_new_array());
		json_object_object_add(p, method, op);
	}
	json_object_object_add(doc, "paths", paths);
	comp = json_tokener_parse(
		"{\"securitySchemes\":{\"bearer\":{\"type\":\"http\","
		"\"scheme\":\"bearer\"}},\"responses\":{\"Error\":"
		"{\"description\":\"{\\\"error\\\":{\\\"code\\\":...,"
		"\\\"message\\\":...}}\"}}}");
	json_object_object_add(doc, "components", comp);
	json_object_object_add(doc, "security", json_tokener_parse(
		"[{\"bearer\":[]}]"));
	json_answer(a, 200, doc);
}
