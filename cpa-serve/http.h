/* SPDX-License-Identifier: MIT */
/* The HTTP side: the gate, libmicrohttpd's daemons, each request's life
 * (http.c); the routes are api.c's. */
#ifndef CPA_SERVE_HTTP_H
#define CPA_SERVE_HTTP_H

#include <stddef.h>

#include "child.h"

struct http_config {
	const char *listen;		/* ADDR:PORT or [ADDR]:PORT */
	char *tls_cert, *tls_key;	/* PEM text, or NULL for plain HTTP */
	const char *store_dir;		/* history: cpa monitor's --dir */
	size_t max_body;
	unsigned threads;		/* HTTP threads */
	unsigned workers;		/* threads waiting on history children */
	unsigned max_connections;	/* at once, in all */
	unsigned max_per_addr;		/* at once, from one address */
	unsigned header_timeout_ms;	/* from accept to the header's end */
	unsigned read_timeout_ms;	/* from the header's end to the body's */
	struct cpa_limits child_limits;	/* each child a request starts */
};

/* Starts serving; -1 with err when the address cannot be bound. The
 * port bound (for PORT 0) in *port. */
int http_start(const struct http_config *c, unsigned *port, char *err,
	       size_t errlen);
void http_stop(void);

#endif
