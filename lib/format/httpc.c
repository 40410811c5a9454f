/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.1 answers read off a non-blocking socket. Only what servers
 * send to a client that asked for no compression and no upgrade is
 * handled: a status line, headers, and a body with a Content-Length,
 * chunked (without trailers), or running to the end of the connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "child.h"
#include "httpc.h"
#include "io.h"
#include "log.h"

/* The wait left of io's per-wait timeout and its deadline. */
static int wait_left(const struct cpa_http_io *io)
{
	int left = io->timeout_ms;

	if (io->deadline_ms) {
		int64_t d = io->deadline_ms - cpa_mono_ms();

		if (d <= 0)
			return 0;
		if (d < left)
			left = (int)d;
	}
	return left;
}

/* Waits for fd in slices of a second at most, calling idle between. */
static int wait_fd(const struct cpa_http_io *io, int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };
	int left = wait_left(io);

	for (;;) {
		int slice = left < 1000 ? left : 1000;
		int r = poll(&p, 1, slice);

		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0)
			return 0;
		if (r == 0)
			left -= slice;
		if (left <= 0)
			return -ETIMEDOUT;
		if (io->idle)
			io->idle();
	}
}

int cpa_http_connect(const char *host, const char *port,
		     const struct cpa_http_io *io, int *fdp, char *err,
		     size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int r = getaddrinfo(host, port, &hints, &res), e = 0;

	*fdp = -1;
	if (r)
		return cpa_fail(err, errlen, "cannot resolve %s: %s", host,
				gai_strerror(r));
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family,
				ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		socklen_t sl = sizeof(e);
		int w;

		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 &&
		    errno != EINPROGRESS) {
			e = errno;
			close(fd);
			continue;
		}
		w = wait_fd(io, fd, POLLOUT);
		if (w < 0)
			e = -w;
		else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) < 0)
			e = errno;
		if (e) {
			close(fd);
			continue;
		}
		*fdp = fd;
		break;
	}
	freeaddrinfo(res);
	if (*fdp < 0)
		return cpa_fail(err, errlen, "cannot connect: %s",
				strerror(e ? e : ECONNREFUSED));
	return 0;
}

bool cpa_http_stale(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;
	ssize_t k;

	if (poll(&p, 1, 0) <= 0)
		return false;
	k = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return k <= 0 && !(k < 0 && (errno == EAGAIN || errno == EINTR));
}

int cpa_http_send(const struct cpa_http_io *io, const void *p, size_t n)
{
	int left = wait_left(io);

	if (!left)
		return -ETIMEDOUT;
	return cpa_send_full_within(io->fd, p, n, left);
}

/* Reads more of the answer into b. 0, -ENODATA at end of file, -errno. */
static int recv_more(const struct cpa_http_io *io, struct cpa_buf *b)
{
	cpa_buf_reserve(b, 65536);
	for (;;) {
		ssize_t k = recv(io->fd, b->p + b->len, b->cap - b->len, 0);
		int r;

		if (k > 0) {
			b->len += (size_t)k;
			return 0;
		}
		if (k == 0)
			return -ENODATA;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		r = wait_fd(io, io->fd, POLLIN);
		if (r < 0)
			return r;
	}
}

const char *cpa_http_header(const char *h, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = h; p && p < h + len;) {
		const char *eol = memmem(p, (size_t)(h + len - p), "\r\n", 2);

		if (!eol)
			break;
		if ((size_t)(eol - p) > nl && p[nl] == ':' &&
		    !strncasecmp(p, name, nl)) {
			p += nl + 1;
			while (*p == ' ')
				p++;
			return p;
		}
		p = eol + 2;
	}
	return NULL;
}

int cpa_http_read_answer(const struct cpa_http_io *io, size_t header_max,
			 size_t body_max, struct cpa_buf *h,
			 struct cpa_buf *body, int *status, bool *close_after)
{
	const uint8_t *eoh;
	struct cpa_buf raw = { 0 };
	int major, minor, r = 0;
	size_t hlen;
	const char *hs, *te, *cl, *conn;

	h->len = 0;
	body->len = 0;
	while (!(eoh = memmem(h->p ? h->p : (const uint8_t *)"", h->len,
			      "\r\n\r\n", 4))) {
		if (h->len > header_max)
			return -EPROTO;
		r = recv_more(io, h);
		if (r < 0)
			return r;
	}
	hlen = (size_t)(eoh - h->p) + 4;
	/* the header block as a string for sscanf: its own NUL */
	cpa_buf_reserve(h, 1);
	h->p[h->len] = 0;
	if (sscanf((char *)h->p, "HTTP/%d.%d %d", &major, &minor, status) != 3)
		return -EPROTO;
	hs = (const char *)h->p;
	te = cpa_http_header(hs, hlen, "Transfer-Encoding");
	cl = cpa_http_header(hs, hlen, "Content-Length");
	conn = cpa_http_header(hs, hlen, "Connection");
	*close_after = (conn && !strncasecmp(conn, "close", 5)) ||
		       (major == 1 && minor == 0);
	/* what came after the headers is the start of the body */
	cpa_buf_add(&raw, h->p + hlen, h->len - hlen);
	h->len = hlen;
	if (te && !strncasecmp(te, "chunked", 7)) {
		size_t at = 0;

		for (;;) {
			const uint8_t *eol;
			unsigned long long n;
			char *e;

			/* memmem may not be given the empty buffer's NULL */
			while (raw.len == at ||
			       !(eol = memmem(raw.p + at, raw.len - at, "\r\n",
					      2))) {
				if (raw.len - at > 64) {
					r = -EPROTO;
					goto out;
				}
				if ((r = recv_more(io, &raw)) < 0)
					goto out;
			}
			/* the line's end as an offset: the NUL's room may
			 * move raw.p */
			size_t next = (size_t)(eol - raw.p) + 2;

			cpa_buf_reserve(&raw, 1);
			raw.p[raw.len] = 0;
			n = strtoull((char *)raw.p + at, &e, 16);
			if (e == (char *)raw.p + at || n > body_max ||
			    body->len + n > body_max) {
				r = -EPROTO;
				goto out;
			}
			at = next;
			while (raw.len - at < n + 2)
				if ((r = recv_more(io, &raw)) < 0)
					goto out;
			if (n == 0)
				break;	/* no trailers */
			cpa_buf_add(body, raw.p + at, n);
			at += n + 2;
		}
	} else if (cl) {
		char *e;
		unsigned long long n = strtoull(cl, &e, 10);

		if (e == cl || n > body_max) {
			r = -EPROTO;
			goto out;
		}
		while (raw.len < n)
			if ((r = recv_more(io, &raw)) < 0)
				goto out;
		cpa_buf_add(body, raw.p, n);
	} else {
		/* the body runs to the end of the connection */
		while ((r = recv_more(io, &raw)) == 0)
			if (raw.len > body_max) {
				r = -EPROTO;
				goto out;
			}
		if (r != -ENODATA)
			goto out;
		r = 0;
		cpa_buf_add(body, raw.p, raw.len);
		*close_after = true;
	}
out:
	cpa_buf_free(&raw);
	return r;
}

const char *cpa_http_strerror(int r)
{
	return r == -EPROTO ? "not an HTTP answer"
	       : r == -ENODATA ? "connection closed by the server"
	       : r == -ETIMEDOUT ? "no answer in time"
	       : strerror(-r);
}
