/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * The client side of HTTP/1.1, as the tools speak it: ClickHouse's HTTP
 * interface (clickhouse.h) and a node's Operation API (cpa-serve's
 * apiserver). One connection, one request at a time, answers with a
 * Content-Length, chunked, or to the end of the connection.
 *
 * Rules of this layer:
 * - Every wait is bounded: by timeout_ms per connect, send and receive,
 *   and, when deadline_ms is set, by that moment of cpa_mono_ms() for the
 *   whole call (a server that drips one byte a second does not hold a
 *   caller past it). idle, when set, is called at least once a second
 *   while waiting.
 * - Sizes are bounded: a header past header_max or a body past body_max
 *   is -EPROTO, not memory taken.
 * - Functions return 0 or -errno (-EPROTO: not an HTTP answer, -ENODATA:
 *   the connection closed, -ETIMEDOUT); nothing is printed.
 */
#ifndef CPA_HTTPC_H
#define CPA_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct cpa_http_io {
	int fd;
	int timeout_ms;		/* per wait */
	int64_t deadline_ms;	/* cpa_mono_ms() of the call's end, or 0 */
	void (*idle)(void);	/* called while waiting, or NULL */
};

/* Connects to host:port (non-blocking, close-on-exec): the descriptor in
 * *fd. 0, or -1 with err saying why ("cannot resolve ...", "cannot
 * connect: ..."). */
int cpa_http_connect(const char *host, const char *port,
		     const struct cpa_http_io *io, int *fd, char *err,
		     size_t errlen);

/* Whether a kept connection was closed by its server (reads as end of
 * file before anything is sent). */
bool cpa_http_stale(int fd);

/* Sends all of p. */
int cpa_http_send(const struct cpa_http_io *io, const void *p, size_t n);

/* One answer: the status line and headers into hdr, the body (de-chunked)
 * into body, the status in *status; *close_after when the server closes
 * the connection after it. */
int cpa_http_read_answer(const struct cpa_http_io *io, size_t header_max,
			 size_t body_max, struct cpa_buf *hdr,
			 struct cpa_buf *body, int *status, bool *close_after);

/* The value of header name in the header block h (len bytes), or NULL;
 * it runs to the line's "\r\n". */
const char *cpa_http_header(const char *h, size_t len, const char *name);

/* What a negative return means, in words. */
const char *cpa_http_strerror(int r);

#endif
