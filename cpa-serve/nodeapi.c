/* SPDX-License-Identifier: MIT */
/*
 * Bodies are bounded as the contract bounds them (1 MiB of success, 8
 * KiB of error); a redirect is not followed (a 3xx is a protocol error);
 * an answer is read only up to the call's deadline, however slowly a
 * node sends it.
 */
#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "buf.h"
#include "child.h"
#include "errors.h"
#include "httpc.h"
#include "log.h"
#include "nodeapi.h"

#define SUCCESS_MAX (1u << 20)
#define ERROR_MAX (8u << 10)
#define HEADER_MAX (64u << 10)

static void protocol(struct node_answer *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void protocol(struct node_answer *out, const char *fmt, ...)
{
	va_list ap;

	out->kind = NODE_PROTOCOL;
	va_start(ap, fmt);
	vsnprintf(out->message, sizeof(out->message), fmt, ap);
	va_end(ap);
}

static const char *str_of(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* An error answer: the envelope with a known code, a message, and the
 * status the code's directory entry gives. */
static void read_error(int status, json_object *body, struct node_answer *out)
{
	json_object *e = NULL;
	const char *code, *msg;

	if (body)
		json_object_object_get_ex(body, "error", &e);
	code = str_of(e, "code");
	msg = str_of(e, "message");
	if (!code || !msg || !msg[0] || json_object_object_length(body) != 1) {
		protocol(out, "HTTP %d without the error envelope", status);
		return;
	}
	if (api_node_status(code) != status) {
		protocol(out, "HTTP %d with code \"%.40s\", which a node answers "
			 "%s", status, code, api_node_status(code) < 0
			 ? "never" : "with another status");
		return;
	}
	out->kind = NODE_ERROR;
	snprintf(out->code, sizeof(out->code), "%s", code);
	snprintf(out->message, sizeof(out->message), "%s", msg);
}

/* A success answer: {"data": Operation} of this id and kind. */
static void read_snapshot(const char *id, json_object *body,
			  struct node_answer *out)
{
	static const char *const statuses[] = { "pending", "running",
						"stopping", "terminal" };
	json_object *d = NULL, *t = NULL;
	const char *rid, *kind, *status;
	bool known = false;

	if (body)
		json_object_object_get_ex(body, "data", &d);
	rid = str_of(d, "request_id");
	kind = str_of(d, "kind");
	status = str_of(d, "status");
	if (!rid || !kind || !status) {
		protocol(out, "an Operation without request_id, kind or status");
		return;
	}
	if (strcmp(rid, id)) {
		protocol(out, "the Operation of request_id \"%.60s\", not "
			 "\"%.60s\"", rid, id);
		return;
	}
	if (strcmp(kind, "profiling")) {
		protocol(out, "an Operation of kind \"%.30s\"", kind);
		return;
	}
	for (size_t i = 0; i < 4; i++)
		known |= !strcmp(status, statuses[i]);
	if (!known) {
		protocol(out, "Operation status \"%.30s\"", status);
		return;
	}
	out->kind = NODE_SNAPSHOT;
	snprintf(out->status, sizeof(out->status), "%s", status);
	if (json_object_object_get_ex(d, "terminal", &t) &&
	    json_object_is_type(t, json_type_object)) {
		const char *o = str_of(t, "outcome"), *r = str_of(t, "reason");
		const char *m = str_of(t, "message");

		out->has_terminal = true;
		snprintf(out->outcome, sizeof(out->outcome), "%s", o ? o : "");
		snprintf(out->reason, sizeof(out->reason), "%s", r ? r : "");
		snprintf(out->message, sizeof(out->message), "%s", m ? m : "");
	}
	if (out->has_terminal != !strcmp(status, "terminal"))
		protocol(out, "a %s Operation %s a terminal object", status,
			 out->has_terminal ? "with" : "without");
}

void node_call(const struct node_addr *a, const char *token,
	       enum node_call what, const char *id, const char *body,
	       int timeout_ms, struct node_answer *out)
{
	struct cpa_http_io io = { .fd = -1, .timeout_ms = timeout_ms,
				  .deadline_ms = cpa_mono_ms() + timeout_ms };
	struct cpa_buf req = { 0 }, hdr = { 0 }, ans = { 0 };
	char err[300];
	size_t blen = body ? strlen(body) : 0;
	bool close_after;
	int status = 0, r;
	json_object *o;

	memset(out, 0, sizeof(*out));
	if (cpa_http_connect(a->host, a->port, &io, &io.fd, err,
			     sizeof(err)) < 0) {
		out->kind = NODE_TRANSPORT;
		snprintf(out->message, sizeof(out->message), "%.60s:%s: %.180s",
			 a->host, a->port, err);
		return;
	}
	{
		char head[1400];
		int n = snprintf(head, sizeof(head), "%s /v1/operations%s%s%s "
				 "HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: "
				 "Bearer %s\r\nConnection: close\r\n%s"
				 "Content-Length: %zu\r\n\r\n",
				 what == NODE_GET ? "GET" : "POST",
				 what == NODE_START ? "" : "/",
				 what == NODE_START ? "" : id,
				 what == NODE_STOP ? "/stop" : "", a->host,
				 a->port, token, what == NODE_START
				 ? "Content-Type: application/json\r\n" : "",
				 what == NODE_START ? blen : 0);

		cpa_buf_add(&req, head, n > 0 && (size_t)n < sizeof(head)
			    ? (size_t)n : 0);
		explicit_bzero(head, sizeof(head));
		if (what == NODE_START)
			cpa_buf_add(&req, body, blen);
	}
	r = cpa_http_send(&io, req.p, req.len);
	if (!r)
		r = cpa_http_read_answer(&io, HEADER_MAX, SUCCESS_MAX, &hdr,
					 &ans, &status, &close_after);
	close(io.fd);
	explicit_bzero(req.p, req.len);
	cpa_buf_free(&req);
	cpa_buf_free(&hdr);
	if (r == -EPROTO) {
		protocol(out, "%.60s:%s: not an HTTP answer, or one over %u bytes",
			 a->host, a->port, SUCCESS_MAX);
		cpa_buf_free(&ans);
		return;
	}
	if (r < 0) {
		out->kind = NODE_TRANSPORT;
		snprintf(out->message, sizeof(out->message), "%.60s:%s: %.180s",
			 a->host, a->port, cpa_http_strerror(r));
		cpa_buf_free(&ans);
		return;
	}
	if (status >= 400 && ans.len > ERROR_MAX) {
		protocol(out, "an error answer of %zu bytes (over %u)", ans.len,
			 ERROR_MAX);
		cpa_buf_free(&ans);
		return;
	}
	cpa_buf_add(&ans, "", 1);
	o = json_tokener_parse((const char *)ans.p);
	cpa_buf_free(&ans);
	if (status >= 400)
		read_error(status, o, out);
	else if (status == 200 || (status == 202 && what != NODE_GET))
		read_snapshot(id, o, out);
	else
		protocol(out, "HTTP %d to %s", status,
			 what == NODE_GET ? "GET" : "POST");
	if (status < 400 && out->kind == NODE_SNAPSHOT && !o)
		protocol(out, "HTTP %d without JSON", status);
	json_object_put(o);
}
