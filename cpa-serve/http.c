/* SPDX-License-Identifier: MIT */
/*
 * Routes and replies. Every request is authenticated before anything
 * else is looked at; a body is read only up to the configured size (a
 * declared larger one is refused before a byte of it is read); a path is
 * matched segment by segment against the routes, so nothing in it ever
 * reaches the file system: job ids are 16 hex digits and result names
 * come from a table.
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

#include "auth.h"
#include "history.h"
#include "http.h"
#include "jobs.h"
#include "log.h"
#include "results.h"
#include "spec.h"
#include "state.h"

#define MAX_SEGMENTS 6
#define RAW_DEFAULT_LIMIT 1000
#define RAW_MAX_LIMIT 100000
/* Most of a refused body read before the connection is dropped. */
#define DRAIN_MAX (16u << 20)

static struct MHD_Daemon *daemon_;
static struct http_config cfg;

struct request {
	struct cpa_buf body;
	size_t drained;		/* bytes of body read, kept or not */
	bool too_big;
};

static enum MHD_Result send_response(struct MHD_Connection *c, int code,
				     struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, (unsigned)code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, int code,
				  json_object *o)
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
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (code == 401)
		MHD_add_response_header(r, "WWW-Authenticate",
					"Bearer realm=\"cpa\"");
	if (code == 405)
		MHD_add_response_header(r, "Allow", "GET, POST");
	return send_response(c, code, r);
}

static enum MHD_Result reply_error(struct MHD_Connection *c, int code,
				   const char *message, const char *field)
{
	return reply_json(c, code, json_error(message, field));
}

static enum MHD_Result unknown_param(struct MHD_Connection *c,
				     const char *key)
{
	char msg[300];

	snprintf(msg, sizeof(msg), "unknown parameter '%.200s'", key);
	return reply_error(c, 400, msg, key);
}

static enum MHD_Result reply_file(struct MHD_Connection *c, const char *dir,
				  const struct result_format *f)
{
	char path[4400];
	struct stat st;
	struct MHD_Response *r;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, f->file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return reply_error(c, 500, "the result file is missing", NULL);
	}
	r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", f->content_type);
	return send_response(c, 200, r);
}

/* The query string's arguments, in order. */
struct args {
	struct query_arg v[40];
	size_t n;
	bool overflow;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind,
				   const char *key, const char *value)
{
	struct args *a = cls;

	if (a->n == sizeof(a->v) / sizeof(a->v[0])) {
		a->overflow = true;
		return MHD_NO;
	}
	a->v[a->n].key = key;
	a->v[a->n].value = value ? value : "";
	a->n++;
	return MHD_YES;
}

/* A whole number parameter in [0, max]; -1 with a 400 queued. */
static int uint_arg(const char *key, const char *value, unsigned long max,
		    unsigned long *out)
{
	char *end;

	if (!value[0] || value[0] == '-' || value[0] == '+')
		return -1;
	errno = 0;
	*out = strtoul(value, &end, 10);
	return errno || *end || *out > max ? -1 : 0;
}

static enum MHD_Result reply_raw(struct MHD_Connection *c, const char *dir,
				 const struct args *a)
{
	unsigned long limit = RAW_DEFAULT_LIMIT, offset = 0;
	char err[300], msg[320];
	json_object *o;

	for (size_t i = 0; i < a->n; i++) {
		const char *k = a->v[i].key, *v = a->v[i].value;

		if (!strcmp(k, "limit")) {
			if (uint_arg(k, v, RAW_MAX_LIMIT, &limit) || !limit) {
				snprintf(msg, sizeof(msg), "limit: expected "
					 "1..%d", RAW_MAX_LIMIT);
				return reply_error(c, 400, msg, k);
			}
		} else if (!strcmp(k, "offset")) {
			if (uint_arg(k, v, 1ul << 40, &offset))
				return reply_error(c, 400, "offset: expected "
						   "a whole number", k);
		} else {
			return unknown_param(c, k);
		}
	}
	o = results_raw(dir, offset, limit, err, sizeof(err));
	if (!o)
		return reply_error(c, 500, err, NULL);
	return reply_json(c, 200, o);
}

static enum MHD_Result route_job(struct MHD_Connection *c, bool get,
				 const char *id, const char *what,
				 const struct args *a)
{
	const struct result_format *f;
	json_object *o;
	char dir[4300];
	int code;

	if (!what) {
		if (!get)
			return reply_error(c, 405, "use GET", NULL);
		code = jobs_get(id, &o);
		return reply_json(c, code, o);
	}
	if (!strcmp(what, "stop")) {
		if (get)
			return reply_error(c, 405, "use POST", NULL);
		code = jobs_stop(id, &o);
		return reply_json(c, code, o);
	}
	f = results_format(what);
	if (!f)
		return reply_error(c, 404, "no such resource", NULL);
	if (!get)
		return reply_error(c, 405, "use GET", NULL);
	code = jobs_result_dir(id, dir, sizeof(dir), &o);
	if (code != 200)
		return reply_json(c, code, o);
	if (!strcmp(f->endpoint, "raw"))
		return reply_raw(c, dir, a);
	if (a->n)
		return unknown_param(c, a->v[0].key);
	return reply_file(c, dir, f);
}

static enum MHD_Result reply_history(struct MHD_Connection *c,
				     const struct args *a)
{
	struct cpa_buf body = { 0 };
	const char *ctype = NULL;
	json_object *err = NULL;
	struct MHD_Response *r;
	int code;

	if (!cfg.store_dir)
		return reply_error(c, 404, "no store: cpa-serve was started "
				   "without --dir", NULL);
	code = history_answer(cfg.store_dir, a->v, a->n, &body, &ctype, &err);
	if (code != 200)
		return reply_json(c, code, err);
	r = MHD_create_response_from_buffer(body.len, body.p,
					    MHD_RESPMEM_MUST_FREE);
	if (!r) {
		cpa_buf_free(&body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	return send_response(c, 200, r);
}

static enum MHD_Result route(struct MHD_Connection *c, const char *url,
			     bool get, struct request *rq)
{
	char path[512], *seg[MAX_SEGMENTS + 1], *save = NULL, *s;
	size_t n = 0;
	struct args a = { .n = 0 };
	json_object *o;
	int code;

	if (strlen(url) >= sizeof(path))
		return reply_error(c, 404, "no such resource", NULL);
	snprintf(path, sizeof(path), "%s", url);
	for (s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		if (n == MAX_SEGMENTS)
			return reply_error(c, 404, "no such resource", NULL);
		seg[n++] = s;
	}
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
	if (a.overflow)
		return reply_error(c, 400, "too many parameters", NULL);
	if (n < 2 || strcmp(seg[0], "v1"))
		return reply_error(c, 404, "no such resource", NULL);

	if (n == 2 && !strcmp(seg[1], "history")) {
		if (!get)
			return reply_error(c, 405, "use GET", NULL);
		return reply_history(c, &a);
	}
	if (strcmp(seg[1], "profiling"))
		return reply_error(c, 404, "no such resource", NULL);
	if (n == 2 && get) {
		const char *status = NULL;

		for (size_t i = 0; i < a.n; i++) {
			if (strcmp(a.v[i].key, "status"))
				return unknown_param(c, a.v[i].key);
			status = a.v[i].value;
		}
		code = jobs_list(status, &o);
		return reply_json(c, code, o);
	}
	if (n == 2) {
		struct job_spec spec;
		char err[300], field[64];

		if (a.n)
			return unknown_param(c, a.v[0].key);
		if (spec_parse((const char *)rq->body.p, rq->body.len, &spec,
			       err, sizeof(err), field, sizeof(field)))
			return reply_error(c, 400, err, field);
		code = jobs_create(&spec, &o);
		return reply_json(c, code, o);
	}
	if (n == 3 && !strcmp(seg[2], "capabilities")) {
		if (!get)
			return reply_error(c, 405, "use GET", NULL);
		o = json_tokener_parse(cfg.capabilities);
		if (!o)
			return reply_error(c, 500, "no capabilities", NULL);
		json_object_object_add(o, "active_jobs",
				       json_object_new_int64(jobs_active()));
		return reply_json(c, 200, o);
	}
	if (n > 4 || !state_job_id_valid(seg[2]))
		return reply_error(c, 404, "no such resource", NULL);
	/* only results take parameters; route_job checks theirs */
	if (a.n && (n == 3 || !results_format(seg[3])))
		return unknown_param(c, a.v[0].key);
	return route_job(c, get, seg[2], n == 4 ? seg[3] : NULL, &a);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct request *rq = *con_cls;
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	if (!rq) {
		const char *len;

		rq = cpa_calloc(1, sizeof(*rq));
		*con_cls = rq;
		/* refused before its body is read */
		if (!auth_check(MHD_lookup_connection_value(c,
				MHD_HEADER_KIND, "Authorization")))
			return reply_error(c, 401, "missing or wrong bearer "
					   "token", NULL);
		len = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						  "Content-Length");
		if (len && strtoull(len, NULL, 10) > cfg.max_body)
			rq->too_big = true;
		if (!get && strcmp(method, "POST"))
			return reply_error(c, 405, "use GET or POST", NULL);
		/* a client that waits for 100 Continue is refused before it
		 * sends; one that does not is read to the end (up to
		 * DRAIN_MAX) so that it gets the answer, not a reset */
		if (rq->too_big && (MHD_lookup_connection_value(c,
				MHD_HEADER_KIND, "Expect") ||
		    strtoull(len, NULL, 10) > DRAIN_MAX))
			goto too_big;
		return MHD_YES;
	}
	if (*upload_size) {
		if (rq->body.len + *upload_size > cfg.max_body)
			rq->too_big = true;
		else if (!rq->too_big)
			cpa_buf_add(&rq->body, upload, *upload_size);
		rq->drained += *upload_size;
		*upload_size = 0;
		if (rq->drained > DRAIN_MAX)
			goto too_big;
		return MHD_YES;
	}
	if (rq->too_big)
		goto too_big;
	return route(c, url, get, rq);
too_big:;
	char msg[96];

	snprintf(msg, sizeof(msg), "request body over %zu bytes",
		 cfg.max_body);
	return reply_error(c, 413, msg, NULL);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode why)
{
	struct request *rq = *con_cls;

	if (rq) {
		cpa_buf_free(&rq->body);
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

int http_start(const struct http_config *c, unsigned *port, char *err,
	       size_t errlen)
{
	struct sockaddr_storage ss;
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	bool v6 = false;

	cfg = *c;
	if (parse_listen(c->listen, &ss, &v6, err, errlen))
		return -1;
	if (v6)
		flags |= MHD_USE_IPv6;
	if (c->tls_cert)
		flags |= MHD_USE_TLS;
	daemon_ = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_THREAD_POOL_SIZE, c->threads,
		MHD_OPTION_CONNECTION_LIMIT, 1024u,
		MHD_OPTION_CONNECTION_TIMEOUT, 30u,
		MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
		c->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END,
		c->tls_cert, MHD_OPTION_HTTPS_MEM_KEY, c->tls_key,
		MHD_OPTION_END);
	if (!daemon_)
		return cpa_fail(err, errlen, "cannot serve on %s (in use, or "
				"a bad TLS certificate or key)", c->listen);
	info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
	*port = info ? info->port : 0;
	return 0;
}

void http_stop(void)
{
	if (daemon_)
		MHD_stop_daemon(daemon_);
	daemon_ = NULL;
}
