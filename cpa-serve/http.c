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
#include "gate.h"
#include "history.h"
#include "http.h"
#include "jobs.h"
#include "log.h"
#include "offload.h"
#include "results.h"
#include "spec.h"
#include "state.h"

#define MAX_SEGMENTS 6
#define RAW_DEFAULT_LIMIT 1000
#define RAW_MAX_LIMIT 100000
/* Most of a refused body read before the connection is dropped. */
#define DRAIN_MAX (16u << 20)

#define MAX_DAEMONS 64

/* One daemon per HTTP thread: the gate hands each new connection to the
 * next, as a thread pool would. */
static struct MHD_Daemon *daemons[MAX_DAEMONS];
static unsigned n_daemons, next_daemon;
static int listen_fd = -1;
static struct http_config cfg;

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

struct request {
	struct cpa_buf body;
	size_t drained;		/* bytes of body read, kept or not */
	bool too_big;
	struct history_task *task;
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
	/* only a client that has shown the token keeps its connection: an
	 * idle one is a slot an attacker would otherwise keep for free */
	if (code == 401) {
		MHD_add_response_header(r, "WWW-Authenticate",
					"Bearer realm=\"cpa\"");
		MHD_add_response_header(r, "Connection", "close");
	}
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

static void history_work(void *arg)
{
	struct history_task *t = arg;

	t->code = history_answer(cfg.store_dir, t->args, t->n_args,
				 &cfg.child_limits, &t->body, &t->ctype,
				 &t->err);
	t->done = true;
	MHD_resume_connection(t->conn);
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
		return reply_json(c, t->code, e);
	}
	r = MHD_create_response_from_buffer(t->body.len, t->body.p,
					    MHD_RESPMEM_MUST_FREE);
	if (!r)
		return MHD_NO;
	t->body = (struct cpa_buf){ 0 };
	MHD_add_response_header(r, "Content-Type", t->ctype);
	return send_response(c, 200, r);
}

/* Queues the request's history query: the connection waits, suspended,
 * until a worker has the answer. */
static enum MHD_Result reply_history(struct MHD_Connection *c,
				     struct request *rq, const struct args *a)
{
	struct history_task *t;
	size_t need = 0, at = 0;

	if (!cfg.store_dir)
		return reply_error(c, 404, "no store: cpa-serve was started "
				   "without --dir", NULL);
	if (a->n > HISTORY_MAX_ARGS) {
		char msg[64];

		snprintf(msg, sizeof(msg), "more than %d parameters",
			 HISTORY_MAX_ARGS);
		return reply_error(c, 400, msg, NULL);
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
		t->err = json_error("busy: too many history queries at once; "
				    "retry", NULL);
		t->done = true;
		MHD_resume_connection(c);
	}
	return MHD_YES;
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
		return reply_history(c, rq, &a);
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
	if (rq->task)	/* resumed: the worker has the answer */
		return rq->task->done ? reply_task(c, rq->task) : MHD_YES;
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
		history_task_free(rq->task);
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
	(void)socket_ctx;
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
