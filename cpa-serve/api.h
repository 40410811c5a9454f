/* SPDX-License-Identifier: MIT */
/*
 * The routes: HUATUO's /v1/profiling and /v1/operations, the public
 * paths, and cpa's own (history and result formats), one table. The
 * HTTP side (http.c) matches a request against it once its header is
 * in, runs the checks that need no body in HUATUO's middleware order
 * (authentication, route, method, permission, body presence, content
 * type, declared size), and calls the route's handler once the body is.
 */
#ifndef CPA_SERVE_API_H
#define CPA_SERVE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "auth.h"
#include "history.h"
#include "windows.h"

enum route_auth { AUTH_PUBLIC, AUTH_USER, AUTH_ADMIN, AUTH_NODE };
enum route_body { BODY_NONE, BODY_JSON, BODY_PROTO };

#define API_MAX_SEGMENTS 8
#define API_MAX_ARGS 40

struct api_request;

/* What a handler answers: a JSON body, a file, a page of windows, or a
 * history query to run off the HTTP thread; bytes of a type; or work to
 * run off the HTTP thread (ANSWER_DEFER: a worker calls work(arg, a),
 * which answers JSON or BYTES, then frees arg). */
enum answer_kind { ANSWER_JSON, ANSWER_FILE, ANSWER_RAW, ANSWER_HISTORY,
		   ANSWER_TEXT, ANSWER_EMPTY, ANSWER_BYTES, ANSWER_DEFER };

struct answer {
	enum answer_kind kind;
	int status;
	json_object *json;		/* ANSWER_JSON */
	char path[4400];		/* ANSWER_FILE */
	const char *content_type;	/* ANSWER_FILE, ANSWER_TEXT */
	struct raw_page page;		/* ANSWER_RAW */
	char *text;			/* ANSWER_TEXT (malloc'd) */
	char location[300];		/* a Location header, or "" */
	struct cpa_buf bytes;		/* ANSWER_BYTES */
	void (*work)(void *arg, struct answer *a);	/* ANSWER_DEFER */
	void *work_arg;
};

struct route {
	const char *method;
	const char *pattern;	/* segments; "{id}" matches any one */
	enum route_auth auth;
	enum route_body body;
	void (*handle)(struct api_request *r, struct answer *a);
};

struct query_args {
	struct query_arg v[API_MAX_ARGS];
	size_t n;
	bool overflow;
};

struct api_request {
	const char *method;		/* "HEAD" is answered as "GET" */
	const char *path;
	char *seg[API_MAX_SEGMENTS];
	size_t n_seg;
	const struct route *route;
	const struct user *user;	/* AUTH_USER, AUTH_ADMIN */
	const char *body;
	size_t body_len;
	const struct query_args *args;
};

/* Matches method and path: the route, or NULL with *allowed the methods
 * the path takes (NULL: no route has the path). path is split into
 * r->seg, in place. */
const struct route *api_match(struct api_request *r, char *path,
			      const char **allowed);

/* What the answers need from the server's configuration. */
struct api_config {
	const char *store_dir;		/* history: cpa monitor's --dir */
	const char *features;		/* cpa-capture --features, as JSON */
	struct cpa_limits child;
	unsigned workers;
	bool fleet;			/* the apiserver (--fleet) */
};
void api_configure(const struct api_config *c);
const struct api_config *api_config(void);

#endif
