/* SPDX-License-Identifier: MIT */
/*
 * ClickHouse over HTTP/1.1: a POST per statement on one keep-alive
 * connection, answers with a Content-Length or chunked. Only what
 * ClickHouse's HTTP handler sends is handled; anything else is an error
 * naming the server.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clickhouse.h"
#include "httpc.h"
#include "io.h"
#include "log.h"

/* Largest answer read: fleet answers are aggregated; past this the
 * statement is refused rather than the memory taken. */
#define CH_BODY_MAX (1u << 30)
#define CH_HEADER_MAX (64u << 10)

void cpa_ch_addf(struct cpa_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	cpa_buf_reserve(b, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf((char *)b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

const char *cpa_ch_opt_database(const char *arg)
{
	if (!*arg || strspn(arg, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") !=
			     strlen(arg))
		cpa_die_usage("invalid --database '%s': letters, digits and "
			      "_ only", arg);
	return arg;
}

void cpa_ch_quote(struct cpa_buf *b, const char *s, size_t len)
{
	cpa_buf_reserve(b, len + 2);
	cpa_buf_add(b, "'", 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\'' || c == '\\') {
			cpa_buf_add(b, "\\", 1);
			cpa_buf_add(b, &s[i], 1);
		} else if (c < 0x20 || c == 0x7f) {
			char x[5];
			snprintf(x, sizeof(x), "\\x%02x", c);
			cpa_buf_add(b, x, 4);
		} else {
			cpa_buf_add(b, &s[i], 1);
		}
	}
	cpa_buf_add(b, "'", 1);
}

static void base64(struct cpa_buf *b, const unsigned char *s, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		char o[4] = { t[v >> 18 & 63], t[v >> 12 & 63],
			      i + 1 < n ? t[v >> 6 & 63] : '=',
			      i + 2 < n ? t[v & 63] : '=' };
		cpa_buf_add(b, o, 4);
	}
}

/* %XX for bytes outside what a query string carries as is. */
static void urlencode(struct cpa_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~') {
			cpa_buf_add(b, s, 1);
		} else {
			char x[4];
			snprintf(x, sizeof(x), "%%%02X", c);
			cpa_buf_add(b, x, 3);
		}
	}
}

int cpa_ch_init(struct cpa_ch *ch, const char *url, char *err, size_t errlen)
{
	memset(ch, 0, sizeof(*ch));
	ch->fd = -1;
	ch->timeout_ms = 30000;
	if (strncmp(url, "http://", 7))
		return cpa_fail(err, errlen, "%s: not an http:// URL (https is "
				"not supported: put a TLS proxy on the host)",
				url);
	const char *p = url + 7;
	const char *end = p + strcspn(p, "/?");
	const char *at = memchr(p, '@', (size_t)(end - p));
	struct cpa_buf u = {0};
	cpa_buf_add(&u, "http://", 7);
	if (at) {
		struct cpa_buf a = {0}, b = {0};
		cpa_buf_add(&a, p, (size_t)(at - p));
		cpa_buf_add(&b, "Basic ", 6);
		base64(&b, a.p, a.len);
		cpa_buf_add(&b, "", 1);
		ch->auth = (char *)b.p;
		/* the user, never the password, in messages */
		const char *colon = memchr(p, ':', (size_t)(at - p));
		cpa_buf_add(&u, p, (size_t)((colon ? colon : at) - p));
		cpa_buf_add(&u, "@", 1);
		cpa_buf_free(&a);
		p = at + 1;
	}
	const char *hend = p;
	if (*p == '[') {		/* [::1]:8123 */
		hend = memchr(p, ']', (size_t)(end - p));
		if (!hend)
			goto bad;
		ch->host = cpa_strndup(p + 1, (size_t)(hend - p - 1));
		hend++;
	} else {
		hend = memchr(p, ':', (size_t)(end - p));
		if (!hend)
			hend = end;
		ch->host = cpa_strndup(p, (size_t)(hend - p));
	}
	if (!*ch->host)
		goto bad;
	if (hend < end && *hend == ':') {
		ch->port = cpa_strndup(hend + 1, (size_t)(end - hend - 1));
		if (!*ch->port || strspn(ch->port, "0123456789") !=
				      strlen(ch->port))
			goto bad;
	} else if (hend != end) {
		goto bad;
	} else {
		ch->port = cpa_strdup("8123");
	}
	cpa_buf_add(&u, p, (size_t)(end - p));
	if (*end == '/')
		end++;
	if (*end && *end != '?')
		return cpa_ch_free(ch), cpa_buf_free(&u),
		       cpa_fail(err, errlen, "%s: a path is not supported, "
				"only ?PARAMS", url);
	ch->params = cpa_strdup(*end == '?' ? end + 1 : "");
	cpa_buf_add(&u, "", 1);
	ch->url = (char *)u.p;
	return 0;
bad:
	cpa_buf_free(&u);
	cpa_ch_free(ch);
	return cpa_fail(err, errlen, "%s: expected http://HOST[:PORT][/?PARAMS]",
			url);
}

void cpa_ch_disconnect(struct cpa_ch *ch)
{
	if (ch->fd >= 0)
		close(ch->fd);
	ch->fd = -1;
}

void cpa_ch_free(struct cpa_ch *ch)
{
	cpa_ch_disconnect(ch);
	free(ch->url);
	free(ch->host);
	free(ch->port);
	free(ch->params);
	free(ch->auth);
	cpa_buf_free(&ch->req);
	cpa_buf_free(&ch->body);
	cpa_buf_free(&ch->hdr);
	memset(ch, 0, sizeof(*ch));
	ch->fd = -1;
}

/* The statement up to its first clause or parenthesis, for messages:
 * "INSERT INTO cpa.samples", "SELECT max(pos) FROM cpa.samples". */
static void statement(const char *sql, char *out, size_t len)
{
	static const char *const stops[] = {" WHERE ", " FORMAT ", " GROUP BY ",
					    " SETTINGS ", " ORDER BY "};
	while (*sql == ' ' || *sql == '\n' || *sql == '\t')
		sql++;
	size_t n = strcspn(sql, "\n");
	for (size_t i = 0; i < sizeof(stops) / sizeof(*stops); i++) {
		const char *p = strstr(sql, stops[i]);
		if (p && (size_t)(p - sql) < n)
			n = (size_t)(p - sql);
	}
	/* an INSERT's column list, a CREATE's columns */
	if (!strncmp(sql, "INSERT", 6) || !strncmp(sql, "CREATE", 6)) {
		const char *p = memchr(sql, '(', n);
		if (p)
			n = (size_t)(p - sql);
	}
	while (n && sql[n - 1] == ' ')
		n--;
	/* a long column list: what is selected from where is enough */
	const char *from = strstr(sql, " FROM ");
	if (n > 60 && !strncmp(sql, "SELECT ", 7) && from &&
	    (size_t)(from - sql) < n) {
		snprintf(out, len, "SELECT ...%.*s", (int)(n - (size_t)(from - sql)),
			 from);
		return;
	}
	if (n + 4 > len)
		n = len - 4;
	memcpy(out, sql, n);
	out[n] = 0;
}

static int ch_fail(struct cpa_ch *ch, const char *sql, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int ch_fail(struct cpa_ch *ch, const char *sql, const char *fmt, ...)
{
	char st[80], what[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	statement(sql, st, sizeof(st));
	snprintf(ch->err, sizeof(ch->err), "%s: %s: %s", ch->url, st, what);
	return -1;
}

static struct cpa_http_io io_of(const struct cpa_ch *ch)
{
	struct cpa_http_io io = { .fd = ch->fd, .timeout_ms = ch->timeout_ms,
				  .idle = ch->idle };
	return io;
}

static int ch_connect(struct cpa_ch *ch, const char *sql)
{
	struct cpa_http_io io = io_of(ch);
	char why[300];

	if (cpa_http_connect(ch->host, ch->port, &io, &ch->fd, why,
			     sizeof(why)) < 0)
		return ch_fail(ch, sql, "%s", why);
	return 0;
}

static int send_all(struct cpa_ch *ch, const uint8_t *p, size_t n)
{
	struct cpa_http_io io = io_of(ch);

	return cpa_http_send(&io, p, n);
}

/* One answer: headers into ch->hdr, the body into ch->body. */
static int read_answer(struct cpa_ch *ch, bool *close_after)
{
	struct cpa_http_io io = io_of(ch);

	return cpa_http_read_answer(&io, CH_HEADER_MAX, CH_BODY_MAX, &ch->hdr,
				    &ch->body, &ch->status, close_after);
}

/* The server's message: its first line, without ClickHouse's repeated
 * ", e.what() = DB::Exception" tail. */
static void server_message(const struct cpa_buf *b, char *out, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < b->len && n + 1 < len; i++) {
		char c = (char)b->p[i];
		if (c == '\n' || c == '\r')
			break;
		out[n++] = c >= 0x20 && c != 0x7f ? c : '?';
	}
	out[n] = 0;
	char *tail = strstr(out, ", e.what() = ");
	if (tail)
		*tail = 0;
	if (!n)
		snprintf(out, len, "(no message)");
}

static int answered(struct cpa_ch *ch, const char *sql, int r,
		    bool close_after);

int cpa_ch_exec(struct cpa_ch *ch, const char *sql, const void *data,
		size_t len, const char *settings)
{
	if (ch->fd >= 0 && cpa_http_stale(ch->fd))
		cpa_ch_disconnect(ch);
	if (ch->fd < 0 && ch_connect(ch, sql) < 0)
		return -1;

	struct cpa_buf *q = &ch->req;
	q->len = 0;
	cpa_ch_add(q, "POST /?");
	if (*ch->params) {
		cpa_ch_add(q, ch->params);
		cpa_ch_add(q, "&");
	}
	cpa_ch_add(q, "wait_end_of_query=1");
	if (settings && *settings) {
		cpa_ch_add(q, "&");
		cpa_ch_add(q, settings);
	}
	if (data) {
		cpa_ch_add(q, "&query=");
		urlencode(q, sql);
	} else {
		data = sql;
		len = strlen(sql);
	}
	cpa_ch_addf(q, " HTTP/1.1\r\nHost: %s:%s\r\nContent-Length: %zu\r\n"
		    "Connection: keep-alive\r\n", ch->host, ch->port, len);
	if (ch->auth)
		cpa_ch_addf(q, "Authorization: %s\r\n", ch->auth);
	cpa_ch_add(q, "\r\n");

	int r = send_all(ch, q->p, q->len);
	if (!r)
		r = send_all(ch, data, len);
	bool close_after = false;
	if (!r)
		r = read_answer(ch, &close_after);
	return answered(ch, sql, r, close_after);
}

int cpa_ch_read_answer(struct cpa_ch *ch, const char *sql)
{
	bool close_after = false;
	return answered(ch, sql, read_answer(ch, &close_after), close_after);
}

/* The status of an answer read (r: read_answer's), as cpa_ch_exec
 * returns it. */
static int answered(struct cpa_ch *ch, const char *sql, int r,
		    bool close_after)
{
	if (r < 0) {
		cpa_ch_disconnect(ch);
		return ch_fail(ch, sql, "%s",
			       r == -EPROTO ? "not an HTTP answer ClickHouse "
					      "gives" : cpa_http_strerror(r));
	}
	if (close_after)
		cpa_ch_disconnect(ch);
	if (ch->status != 200) {
		char msg[400];
		server_message(&ch->body, msg, sizeof(msg));
		return ch_fail(ch, sql, "HTTP %d: %s", ch->status, msg);
	}
	return 0;
}

int cpa_ch_numbers(struct cpa_ch *ch, struct cpa_buf *sql, uint64_t *v,
		   size_t n)
{
	cpa_ch_add(sql, " FORMAT RowBinary");
	cpa_buf_add(sql, "", 1);
	int r = cpa_ch_exec(ch, (const char *)sql->p, NULL, 0, NULL);
	if (!r && ch->body.len != 8 * n)
		r = ch_fail(ch, (const char *)sql->p, "an answer of %zu bytes, "
			    "expected %zu numbers", ch->body.len, n);
	for (size_t i = 0; !r && i < n; i++)
		v[i] = cpa_get_le64(ch->body.p + 8 * i);
	cpa_buf_free(sql);
	return r;
}

/* ---- RowBinary reader -------------------------------------------------- */

static bool need(struct cpa_rb *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = true;
		return false;
	}
	return true;
}

uint64_t cpa_rb_get_u64(struct cpa_rb *r)
{
	if (!need(r, 8))
		return 0;
	uint64_t v = cpa_get_le64(r->p);
	r->p += 8;
	return v;
}

uint16_t cpa_rb_get_u16(struct cpa_rb *r)
{
	if (!need(r, 2))
		return 0;
	uint16_t v = cpa_get_le16(r->p);
	r->p += 2;
	return v;
}

uint8_t cpa_rb_get_u8(struct cpa_rb *r)
{
	if (!need(r, 1))
		return 0;
	return *r->p++;
}

uint64_t cpa_rb_get_count(struct cpa_rb *r, uint64_t max)
{
	uint64_t v;
	if (r->bad || !cpa_uleb128(&r->p, r->end, &v) || v > max) {
		r->bad = true;
		return 0;
	}
	return v;
}

const char *cpa_rb_get_string(struct cpa_rb *r, uint32_t *len)
{
	uint64_t n = cpa_rb_get_count(r, UINT32_MAX);
	if (!need(r, n)) {
		*len = 0;
		return "";
	}
	const char *s = (const char *)r->p;
	r->p += n;
	*len = (uint32_t)n;
	return s;
}
