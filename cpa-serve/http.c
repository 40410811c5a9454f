/* SPDX-License-Identifier: MIT */
/*
 * The HTTP side: the gate's connections (gate.c) served by libmicrohttpd
 * daemons, one per thread, and each request's life. Once its header is
 * in, a request goes through HUATUO's checks in HUATUO's order:
 * authentication (401) unless the path is public, the route (404, 405),
 * permission (403), then the body's presence, type and declared size
 * (400, 415, 413); its body is read only after those, and only up to
 * --max-body; then the route's handler answers (api.c). Every JSON
 * answer is the envelope of errors.h. A path or query value with a NUL
 * or another control character, escaped or not, is refused (400).
 */
#include <config.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api.h"
#include "child.h"
#include "auth.h"
#include "errors.h"
#include "gate.h"
#include "history.h"
#include "http.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "offload.h"

/* Most of a refused body read before the connection is dropped. */
#define DRAIN_MAX (16u << 20)
#define MAX_DAEMONS 64
#define MAX_PATH 2048

/* One daemon per HTTP thread: the gate hands each new connection to the
 * next, as a thread pool would. */
static struct MHD_Daemon *daemons[MAX_DAEMONS];
static unsigned n_daemons, next_daemon;
static int listen_fd = -1;
static struct http_config cfg;

/* Per connection: what the unescaping saw of the request being read. */
struct conn_ctx {
	bool bad_byte;
};

/* A history request answered off the HTTP threads (offload.h). */
struct history_task {
	struct MHD_Connection *conn;
	struct query_arg args[HISTORY_MAX_ARGS];
	char *owned;		/* the args' strings, one block */
	size_t n_args;
	bool done;
	int code;
	struct cpa_buf body;
	const char *ctype;
	json_object *err;
};

/* Work a handler deferred (ANSWER_DEFER), answered off the HTTP threads. */
struct defer_task {
	struct MHD_Connection *conn;
	void (*work)(void *arg, struct answer *a);
	void *arg;
	struct answer a;
	bool done;
};

struct request {
	struct api_request api;
	char path[MAX_PATH];
	char segs[MAX_PATH];	/* path, cut into api.seg */
	struct query_args args;
	struct cpa_buf body;
	size_t drained;		/* bytes of body read, kept or not */
	bool too_big;
	bool answered;		/* a refusal was queued before the body */
	int64_t body_deadline;	/* cpa_mono_ms: the body's end, at most */
	struct history_task *task;
	struct defer_task *deferred;
};

static enum MHD_Result send_response(struct MHD_Connection *c, int code,
				     struct MHD_Response *r, bool close)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (close)
		MHD_add_response_header(r, "Connection", "close");
	metrics_count(code);
	ret = MHD_queue_response(c, (unsigned)code, r);
	MHD_destroy_response(r);
	return ret;
}

/* A JSON body; a refusal before the body was read closes the
 * connection (the rest of a body is never read), and so does a 401:
 * only a client that showed a token keeps its connection, an idle one
 * being a slot an attacker would otherwise keep for free. */
static enum MHD_Result reply_json_at(struct MHD_Connection *c, int code,
				     json_object *o, const char *allow,
				     bool close, const char *location)
{
	const char *text = json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(text);
	char *copy = cpa_malloc(len + 2);
	struct MHD_Response *r;

	memcpy(copy, text, len);
	copy[len++] = '\n';
	json_object_put(o);
	r = MHD_create_response_from_buffer(len, copy, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(copy);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type",
				"application/json; charset=utf-8");
	if (code == 401)
		MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
	if (allow)
		MHD_add_response_header(r, "Allow", allow);
	if (location && location[0])
		MHD_add_response_header(r, "Location", location);
	return send_response(c, code, r, close || code == 401);
}

static enum MHD_Result reply_json(struct MHD_Connection *c, int code,
				  json_object *o, const char *allow,
				  bool close)
{
	return reply_json_at(c, code, o, allow, close, NULL);
}

static enum MHD_Result refuse(struct MHD_Connection *c, struct request *rq,
			      const char *code, const char *message,
			      const char *allow)
{
	rq->answered = true;
	return reply_json(c, api_status(code), api_error(code, message), allow,
			  true);
}

static enum MHD_Result reply_file(struct MHD_Connection *c, const char *path,
				  const char *content_type)
{
	struct MHD_Response *r;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return reply_json(c, 500, api_error("internal_error", NULL),
				  NULL, false);
	}
	r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", content_type);
	return send_response(c, 200, r, false);
}

/* A raw page: prefix, the window files joined by commas, suffix. */
struct raw_reader {
	struct raw_page page;
	size_t file, part;	/* part 0: comma, 1: file */
	uint64_t in_file;
	size_t prefix_at, suffix_at;
};

static ssize_t copy_out(const char *s, size_t *at, char *buf, size_t max)
{
	size_t n = strlen(s + *at);

	if (n > max)
		n = max;
	memcpy(buf, s + *at, n);
	*at += n;
	return (ssize_t)n;
}

static ssize_t read_raw(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct raw_reader *r = cls;
	struct raw_page *p = &r->page;

	(void)pos;
	if (r->prefix_at < strlen(p->prefix))
		return copy_out(p->prefix, &r->prefix_at, buf, max);
	while (r->file < p->n) {
		ssize_t n;

		if (r->part == 0) {
			r->part = 1;
			if (r->file > 0) {
				buf[0] = ',';
				return 1;
			}
		}
		if (r->in_file < p->sizes[r->file]) {
			uint64_t left = p->sizes[r->file] - r->in_file;

			n = read(p->fds[r->file], buf, left < max ? left : max);
			if (n <= 0)
				return MHD_CONTENT_READER_END_WITH_ERROR;
			r->in_file += (uint64_t)n;
			return n;
		}
		r->file++;
		r->part = 0;
		r->in_file = 0;
	}
	if (r->suffix_at < strlen(p->suffix))
		return copy_out(p->suffix, &r->suffix_at, buf, max);
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static void free_raw(void *cls)
{
	struct raw_reader *r = cls;

	raw_page_free(&r->page);
	free(r);
}

static enum MHD_Result reply_raw(struct MHD_Connection *c,
				 struct raw_page *page)
{
	struct raw_reader *rr = cpa_calloc(1, sizeof(*rr));
	struct MHD_Response *r;

	rr->page = *page;
	memset(page, 0, sizeof(*page));
	r = MHD_create_response_from_callback(rr->page.total, 65536, read_raw,
					      rr, free_raw);
	if (!r) {
		free_raw(rr);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type",
				"application/json; charset=utf-8");
	return send_response(c, 200, r, false);
}

static void history_work(void *arg)
{
	struct history_task *t = arg;

	t->code = history_answer(cfg.store_dir, t->args, t->n_args,
				 &cfg.child_limits, &t->body, &t->ctype,
				 &t->err);
	t->done = true;
	MHD_resume_connection(t->conn);
}

static void defer_work(void *arg)
{
	struct defer_task *t = arg;

	memset(&t->a, 0, sizeof(t->a));
	t->work(t->arg, &t->a);
	t->arg = NULL;
	t->done = true;
	MHD_resume_connection(t->conn);
}

static void defer_task_free(struct defer_task *t)
{
	if (!t)
		return;
	if (t->a.kind == ANSWER_JSON)
		json_object_put(t->a.json);
	cpa_buf_free(&t->a.bytes);
	free(t->arg);
	free(t);
}

static enum MHD_Result reply_bytes(struct MHD_Connection *c, int code,
				   struct cpa_buf *b, const char *ctype)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		b->len, b->p ? b->p : (void *)"", b->p ? MHD_RESPMEM_MUST_FREE
						       : MHD_RESPMEM_PERSISTENT);

	if (!r)
		return MHD_NO;
	*b = (struct cpa_buf){ 0 };
	MHD_add_response_header(r, "Content-Type", ctype);
	return send_response(c, code, r, false);
}

/* The worker's answer, once the connection is resumed. */
static enum MHD_Result reply_deferred(struct MHD_Connection *c,
				      struct defer_task *t)
{
	json_object *j;

	if (t->a.kind == ANSWER_BYTES)
		return reply_bytes(c, t->a.status, &t->a.bytes,
				   t->a.content_type);
	j = t->a.json;
	t->a.json = NULL;
	if (!j) {
		t->a.status = 500;
		j = api_error("internal_error", NULL);
	}
	return reply_json(c, t->a.status, j, NULL, false);
}

static void history_task_free(struct history_task *t)
{
	if (!t)
		return;
	cpa_buf_free(&t->body);
	json_object_put(t->err);
	free(t->owned);
	free(t);
}

static enum MHD_Result reply_task(struct MHD_Connection *c,
				  struct history_task *t)
{
	struct MHD_Response *r;

	if (t->code != 200) {
		json_object *e = t->err;

		t->err = NULL;
		return reply_json(c, t->code, e, NULL, false);
	}
	r = MHD_create_response_from_buffer(t->body.len, t->body.p,
					    MHD_RESPMEM_MUST_FREE);
	if (!r)
		return MHD_NO;
	t->body = (struct cpa_buf){ 0 };
	MHD_add_response_header(r, "Content-Type", t->ctype);
	return send_response(c, 200, r, false);
}

/* Queues the request's history query: the connection waits, suspended,
 * until a worker has the answer. */
static enum MHD_Result reply_history(struct MHD_Connection *c,
				     struct request *rq)
{
	const struct query_args *a = &rq->args;
	struct history_task *t;
	size_t need = 0, at = 0;

	if (a->n > HISTORY_MAX_ARGS) {
		char msg[64];

		snprintf(msg, sizeof(msg), "more than %d parameters",
			 HISTORY_MAX_ARGS);
		return reply_json(c, 400, api_error("invalid_request", msg),
				  NULL, false);
	}
	t = cpa_calloc(1, sizeof(*t));
	for (size_t i = 0; i < a->n; i++)
		need += strlen(a->v[i].key) + strlen(a->v[i].value) + 2;
	t->owned = cpa_malloc(need + 1);
	for (size_t i = 0; i < a->n; i++) {
		size_t kl = strlen(a->v[i].key) + 1;
		size_t vl = strlen(a->v[i].value) + 1;

		t->args[i].key = memcpy(t->owned + at, a->v[i].key, kl);
		at += kl;
		t->args[i].value = memcpy(t->owned + at, a->v[i].value, vl);
		at += vl;
	}
	t->n_args = a->n;
	t->conn = c;
	rq->task = t;
	MHD_suspend_connection(c);
	if (!offload_submit(history_work, t)) {
		t->code = 503;
		t->err = api_error("service_unavailable", "busy: too many "
				   "history queries at once; retry");
		t->done = true;
		MHD_resume_connection(c);
	}
	return MHD_YES;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind,
				   const char *key, const char *value)
{
	struct query_args *a = cls;

	(void)kind;
	if (a->n == API_MAX_ARGS) {
		a->overflow = true;
		return MHD_NO;
	}
	a->v[a->n].key = key;
	a->v[a->n].value = value ? value : "";
	a->n++;
	return MHD_YES;
}

static struct conn_ctx *ctx_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Unescapes %XX in place, as the library would, and notes a decoded
 * byte a path or a value must not hold. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s)
{
	struct conn_ctx *ctx = ctx_of(c);
	char *out = s;

	(void)cls;
	for (char *in = s; *in; in++) {
		unsigned v;
		char hex[3] = { 0 };

		if (in[0] == '%' && in[1] && in[2] &&
		    (hex[0] = in[1], hex[1] = in[2],
		     sscanf(hex, "%2x", &v) == 1) &&
		    strspn(hex, "0123456789abcdefABCDEF") == 2) {
			*out++ = (char)v;
			in += 2;
		} else {
			*out++ = *in;
		}
		if ((unsigned char)out[-1] < 0x20 || out[-1] == 0x7f)
			if (ctx)
				ctx->bad_byte = true;
	}
	*out = 0;
	return (size_t)(out - s);
}

/* The checks that need no body, in HUATUO's order; MHD_YES with
 * rq->answered when one refused. */
static enum MHD_Result admit(struct MHD_Connection *c, struct request *rq,
			     const char *url, const char *method)
{
	struct api_request *r = &rq->api;
	const char *allowed, *why = NULL, *h;
	const struct route *route;
	bool public_path;

	r->method = strcmp(method, "HEAD") ? method : "GET";
	if (strlen(url) >= sizeof(rq->path))
		return refuse(c, rq, "route_not_found", "route not found",
			      NULL);
	snprintf(rq->path, sizeof(rq->path), "%s", url);
	snprintf(rq->segs, sizeof(rq->segs), "%s", url);
	r->path = rq->path;
	r->args = &rq->args;
	route = api_match(r, rq->segs, &allowed);
	public_path = route ? route->auth == AUTH_PUBLIC
		      : !strncmp(url, "/healthz", 8) ||
			!strncmp(url, "/readyz", 7) ||
			!strncmp(url, "/metrics", 8) ||
			!strncmp(url, "/version", 8) ||
			!strncmp(url, "/openapi.json", 13);
	/* 1: who (public paths aside) */
	h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (!public_path) {
		bool node = route ? route->auth == AUTH_NODE
				  : !strncmp(url, "/v1/operations", 14);

		if (node ? !auth_node(h, &why)
			 : !(r->user = auth_user(h, &why)))
			return refuse(c, rq, "unauthenticated", why, NULL);
	}
	/* 2: the route, and the request's own bytes */
	if (ctx_of(c) && ctx_of(c)->bad_byte)
		return refuse(c, rq, "invalid_request", "a NUL or control "
			      "character in the path or a parameter", NULL);
	if (!route)
		return refuse(c, rq, allowed ? "method_not_allowed"
					     : "route_not_found",
			      allowed ? "method not allowed" : "route not found",
			      allowed);
	r->route = route;
	/* 3: what the user may do */
	if (route->auth == AUTH_ADMIN && !r->user->admin)
		return refuse(c, rq, "permission_denied",
			      "administrator permission required", NULL);
	if (route->auth == AUTH_USER &&
	    !auth_permits(r->user, r->method, url)) {
		char msg[400];

		snprintf(msg, sizeof(msg), "permission denied: user \"%s\" "
			 "does not have permission to access %s %.200s",
			 r->user->id, r->method, url);
		return refuse(c, rq, "permission_denied", msg, NULL);
	}
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg,
				  &rq->args);
	if (rq->args.overflow)
		return refuse(c, rq, "invalid_request", "too many parameters",
			      NULL);
	/* 4: the body: none where none is taken, else of its type and
	 * within --max-body */
	const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      "Content-Length");
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     "Transfer-Encoding");
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     "Content-Type");
	unsigned long long declared = len ? strtoull(len, NULL, 10) : 0;

	if (route->body == BODY_NONE) {
		if (declared || te)
			return refuse(c, rq, "invalid_request",
				      "request body is not allowed", NULL);
		return MHD_YES;
	}
	{
		const char *want = route->body == BODY_JSON ? "application/json"
							    : "application/proto";
		size_t wl = strlen(want);

		if (!ct || strncasecmp(ct, want, wl) ||
		    (ct[wl] && ct[wl] != ';' && ct[wl] != ' '))
			return refuse(c, rq, "unsupported_media_type",
				      route->body == BODY_JSON
				      ? "the request body must be application/json"
				      : "the request body must be "
					"application/proto", NULL);
	}
	if (declared > cfg.max_body)
		rq->too_big = true;
	/* a client that waits for 100 Continue is refused before it sends;
	 * one that does not is read to the end (up to DRAIN_MAX) so that
	 * it gets the answer, not a reset */
	if (rq->too_big &&
	    (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect") ||
	     declared > DRAIN_MAX))
		return refuse(c, rq, "request_too_large", "the request body "
			      "is over --max-body", NULL);
	return MHD_YES;
}

static enum MHD_Result answer(struct MHD_Connection *c, struct request *rq)
{
	struct api_request *r = &rq->api;
	struct answer a;
	enum MHD_Result ret;

	memset(&a, 0, sizeof(a));
	/* only a client that showed a token keeps its connection: a public
	 * path answered to anyone would otherwise leave a slot whose next
	 * header no gate watches */
	bool public_close = r->route->auth == AUTH_PUBLIC;

	r->body = rq->body.p ? (const char *)rq->body.p : "";
	r->body_len = rq->body.len;
	r->route->handle(r, &a);
	switch (a.kind) {
	case ANSWER_JSON:
		return reply_json_at(c, a.status, a.json, NULL, public_close,
				     a.location);
	case ANSWER_FILE:
		return reply_file(c, a.path, a.content_type);
	case ANSWER_RAW:
		return reply_raw(c, &a.page);
	case ANSWER_HISTORY:
		return reply_history(c, rq);
	case ANSWER_BYTES:
		return reply_bytes(c, a.status, &a.bytes, a.content_type);
	case ANSWER_DEFER: {
		struct defer_task *t = cpa_calloc(1, sizeof(*t));

		t->conn = c;
		t->work = a.work;
		t->arg = a.work_arg;
		rq->deferred = t;
		MHD_suspend_connection(c);
		if (!offload_submit(defer_work, t)) {
			free(t->arg);
			t->arg = NULL;
			t->a.kind = ANSWER_JSON;
			t->a.status = 503;
			t->a.json = api_error("service_unavailable", "busy: too "
					      "many queries at once; retry");
			t->done = true;
			MHD_resume_connection(c);
		}
		return MHD_YES;
	}
	case ANSWER_TEXT: {
		struct MHD_Response *resp = MHD_create_response_from_buffer(
			strlen(a.text), a.text, MHD_RESPMEM_MUST_FREE);

		if (!resp) {
			free(a.text);
			return MHD_NO;
		}
		MHD_add_response_header(resp, "Content-Type", a.content_type);
		return send_response(c, a.status, resp, public_close);
	}
	case ANSWER_EMPTY:
		ret = send_response(c, a.status, MHD_create_response_from_buffer(
			0, (void *)"", MHD_RESPMEM_PERSISTENT), public_close);
		return ret;
	}
	return MHD_NO;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct request *rq = *con_cls;

	(void)cls;
	(void)version;
	if (!rq) {
		if (cfg.tls_cert)
			gate_header_seen(c);
		rq = cpa_calloc(1, sizeof(*rq));
		*con_cls = rq;
		rq->body_deadline = cpa_mono_ms() + cfg.read_timeout_ms;
		return admit(c, rq, url, method);
	}
	if (rq->answered)
		return MHD_YES;	/* its refusal is on its way */
	/* a body has --read-timeout from its header's end, whatever its
	 * bytes' pace: one byte every so often does not keep a connection
	 * (its silence is the library's idle timeout) */
	if (*upload_size && cpa_mono_ms() > rq->body_deadline)
		return MHD_NO;
	if (*upload_size) {
		if (rq->body.len + *upload_size > cfg.max_body)
			rq->too_big = true;
		else if (!rq->too_big)
			cpa_buf_add(&rq->body, upload, *upload_size);
		rq->drained += *upload_size;
		*upload_size = 0;
		if (rq->drained > DRAIN_MAX)
			return refuse(c, rq, "request_too_large", "the request "
				      "body is over --max-body", NULL);
		return MHD_YES;
	}
	if (rq->too_big)
		return refuse(c, rq, "request_too_large", "the request body is "
			      "over --max-body", NULL);
	if (rq->task)	/* resumed: the worker has the answer */
		return rq->task->done ? reply_task(c, rq->task) : MHD_YES;
	if (rq->deferred)
		return rq->deferred->done ? reply_deferred(c, rq->deferred)
					  : MHD_YES;
	return answer(c, rq);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode why)
{
	struct request *rq = *con_cls;
	struct conn_ctx *ctx = ctx_of(c);

	(void)cls;
	(void)why;
	if (ctx)
		ctx->bad_byte = false;	/* the next request's own */
	if (rq) {
		cpa_buf_free(&rq->body);
		history_task_free(rq->task);
		defer_task_free(rq->deferred);
		free(rq);
		*con_cls = NULL;
	}
}

static int parse_listen(const char *listen, struct sockaddr_storage *ss,
			bool *v6, char *err, size_t errlen)
{
	char host[256];
	const char *colon, *port;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM }, *ai;
	int rc;

	if (listen[0] == '[') {
		const char *close_br = strchr(listen, ']');

		if (!close_br || close_br[1] != ':')
			return cpa_fail(err, errlen, "--listen '%s': expected "
					"[ADDR]:PORT", listen);
		snprintf(host, sizeof(host), "%.*s",
			 (int)(close_br - listen - 1), listen + 1);
		port = close_br + 2;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			return cpa_fail(err, errlen, "--listen '%s': expected "
					"ADDR:PORT", listen);
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen),
			 listen);
		port = colon + 1;
	}
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc)
		return cpa_fail(err, errlen, "--listen '%s': %s", listen,
				gai_strerror(rc));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);
	return 0;
}

static void notify(void *cls, struct MHD_Connection *c, void **socket_ctx,
		   enum MHD_ConnectionNotificationCode what)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	(void)cls;
	if (what == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c,
			MHD_CONNECTION_INFO_CONNECTION_FD);

		*socket_ctx = cpa_calloc(1, sizeof(struct conn_ctx));
		if (cfg.tls_cert && fi)
			gate_watch(c, fi->connect_fd);
	} else {
		gate_forget(c);
		free(*socket_ctx);
		*socket_ctx = NULL;
	}
	if (!ci || !ci->client_addr)
		return;
	if (what == MHD_CONNECTION_NOTIFY_STARTED)
		gate_opened(ci->client_addr);
	else
		gate_closed(ci->client_addr);
}

static void hand_over(int fd, const struct sockaddr *sa, socklen_t len,
		      void *arg)
{
	unsigned i = __atomic_fetch_add(&next_daemon, 1, __ATOMIC_RELAXED);

	(void)arg;
	/* on failure the library closes the socket itself */
	MHD_add_connection(daemons[i % n_daemons], fd, sa, len);
}

static int open_listener(const struct http_config *c, unsigned *port,
			 bool *v6, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1;

	if (parse_listen(c->listen, &ss, v6, err, errlen))
		return -1;
	listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
			   SOCK_CLOEXEC, 0);
	if (listen_fd < 0)
		return cpa_fail_errno(err, errlen, errno, "--listen %s",
				      c->listen);
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	len = ss.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
				       : sizeof(struct sockaddr_in);
	if (bind(listen_fd, (struct sockaddr *)&ss, len) ||
	    listen(listen_fd, 4096))
		return cpa_fail_errno(err, errlen, errno, "cannot serve on %s",
				      c->listen);
	len = sizeof(ss);
	if (getsockname(listen_fd, (struct sockaddr *)&ss, &len))
		return cpa_fail_errno(err, errlen, errno, "getsockname");
	*port = ntohs(ss.ss_family == AF_INET6
		      ? ((struct sockaddr_in6 *)&ss)->sin6_port
		      : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

int http_start(const struct http_config *c, unsigned *port, char *err,
	       size_t errlen)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
			 MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_ERROR_LOG;
	struct gate_config g;
	bool v6 = false;

	cfg = *c;
	if (open_listener(c, port, &v6, err, errlen))
		return -1;
	if (v6)
		flags |= MHD_USE_IPv6;
	if (c->tls_cert)
		flags |= MHD_USE_TLS;
	n_daemons = c->threads < MAX_DAEMONS ? c->threads : MAX_DAEMONS;
	for (unsigned i = 0; i < n_daemons; i++) {
		daemons[i] = MHD_start_daemon(flags, 0, NULL, NULL, handle,
			NULL,
			MHD_OPTION_CONNECTION_LIMIT,
			(unsigned)(c->max_connections / n_daemons + 1),
			MHD_OPTION_CONNECTION_TIMEOUT, 30u,
			MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
			MHD_OPTION_NOTIFY_CONNECTION, notify, NULL,
			MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
			c->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
			c->tls_cert, MHD_OPTION_HTTPS_MEM_KEY, c->tls_key,
			MHD_OPTION_END);
		if (!daemons[i])
			return cpa_fail(err, errlen, "cannot serve on %s (a bad "
					"TLS certificate or key?)", c->listen);
	}
	offload_start(c->workers, 4 * c->workers);
	memset(&g, 0, sizeof(g));
	g.listen_fd = listen_fd;
	g.tls = c->tls_cert != NULL;
	g.header_timeout_ms = c->header_timeout_ms;
	g.max_waiting = c->max_connections / 2;
	g.max_waiting_per_addr = c->max_per_addr / 4 ? c->max_per_addr / 4 : 1;
	g.max_per_addr = c->max_per_addr;
	g.hand_over = hand_over;
	return gate_start(&g, err, errlen);
}

void http_stop(void)
{
	struct gate_stats st;

	gate_get_stats(&st);
	cpa_debug("connections: %lu accepted, %lu handed over, %lu timed "
		  "out, %lu evicted, %lu refused", st.accepted, st.handed_over,
		  st.timed_out, st.evicted, st.refused);
	gate_stop();
	/* queued history answers resume their connections first: a daemon
	 * is not stopped with a connection suspended */
	offload_stop();
	for (unsigned i = 0; i < n_daemons; i++)
		MHD_stop_daemon(daemons[i]);
	n_daemons = 0;
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
}
