/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * A small client for ClickHouse's HTTP interface, as cpa-push writes and
 * cpa-query reads the fleet's history (docs/fleet.md).
 *
 * Rules of this layer:
 * - One keep-alive connection per struct cpa_ch, opened on first use and
 *   again after the server closed it. A statement is never sent twice by
 *   this layer: a connection found closed before the request is sent is
 *   replaced; one that fails after is an error, and the caller decides
 *   whether the statement took effect (cpa-push asks the server).
 * - A call returns 0, or -1 with ch->err set to one line naming the server,
 *   the statement (its first words) and what happened: the server's own
 *   message (its first line) for an answer other than 200, else the
 *   system's. Nothing is printed here.
 * - Answers are read whole into ch->body (statements are aggregated, so
 *   answers are small); wait_end_of_query=1 is asked for, so an error
 *   found while the answer is made comes as a status, not mid-body.
 * - RowBinary is the data format both ways: little-endian integers,
 *   strings and arrays prefixed by their length as a ULEB128 (lib/leb128.h).
 */
#ifndef CPA_CLICKHOUSE_H
#define CPA_CLICKHOUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "le.h"

struct cpa_ch {
	char *url;		/* as given, for messages (no password) */
	char *host, *port;
	char *params;		/* the URL's own query string, or "" */
	char *auth;		/* "Basic ..." from user:password@, or NULL */
	int fd;			/* -1 when not connected */
	int timeout_ms;		/* per connect, send and receive */
	int status;		/* HTTP status of the last answer */
	/* called at least once a second while a statement waits (a stage
	 * keeps its statistics file fresh for its supervisor), or NULL */
	void (*idle)(void);
	struct cpa_buf req, body, hdr;
	char err[640];
};

/* Parses http://[USER[:PASSWORD]@]HOST[:PORT][/][?PARAMS] (port 8123 by
 * default; PARAMS are passed with every statement, e.g. settings). 0, or
 * -1 with err naming the URL. Connects on the first statement. */
int cpa_ch_init(struct cpa_ch *ch, const char *url, char *err, size_t errlen);
void cpa_ch_free(struct cpa_ch *ch);
/* Drops the connection (after an error whose state is unknown). */
void cpa_ch_disconnect(struct cpa_ch *ch);

/*
 * Runs one statement. Without data, sql is the body; with data (an
 * INSERT ... FORMAT RowBinary), sql goes in the URL and data is the body.
 * settings are more URL parameters ("a=1&b=2"), may be NULL. The answer is
 * in ch->body. 0, or -1 with ch->err set.
 */
int cpa_ch_exec(struct cpa_ch *ch, const char *sql, const void *data,
		size_t len, const char *settings);

/* Reads one answer from ch->fd, as cpa_ch_exec does after sending sql:
 * for the fuzz target, which hands it arbitrary bytes. */
int cpa_ch_read_answer(struct cpa_ch *ch, const char *sql);

/*
 * A SELECT of n UInt64 columns and one row (sql without FORMAT; it is
 * freed): the numbers into v. 0, or -1 with ch->err set, also when the
 * answer is not n numbers.
 */
int cpa_ch_numbers(struct cpa_ch *ch, struct cpa_buf *sql, uint64_t *v,
		   size_t n);

/* --database NAME, the same in every tool: letters, digits and _ (it is
 * written into statements unquoted); exits 2 naming it otherwise. */
const char *cpa_ch_opt_database(const char *arg);

/* Appends s as a quoted SQL string literal ('it\'s'). */
void cpa_ch_quote(struct cpa_buf *b, const char *s, size_t len);
static inline void cpa_ch_quote_str(struct cpa_buf *b, const char *s)
{
	cpa_ch_quote(b, s, strlen(s));
}
/* Appends text (no NUL). */
static inline void cpa_ch_add(struct cpa_buf *b, const char *s)
{
	cpa_buf_add(b, s, strlen(s));
}
/* Appends printf text. */
void cpa_ch_addf(struct cpa_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---- RowBinary ------------------------------------------------------- */

static inline void cpa_rb_string(struct cpa_buf *b, const char *s, size_t len)
{
	cpa_buf_uleb128(b, len);
	cpa_buf_add(b, s, len);
}
static inline void cpa_rb_u16(struct cpa_buf *b, uint16_t v)
{
	cpa_buf_reserve(b, 2);
	cpa_put_le16(b->p + b->len, v);
	b->len += 2;
}
static inline void cpa_rb_u64(struct cpa_buf *b, uint64_t v)
{
	cpa_buf_reserve(b, 8);
	cpa_put_le64(b->p + b->len, v);
	b->len += 8;
}

/* A reader over a RowBinary answer; every read checks what is left. */
struct cpa_rb {
	const uint8_t *p, *end, *start;
	bool bad;		/* a read ran past the end */
};
static inline void cpa_rb_init(struct cpa_rb *r, const void *p, size_t len)
{
	r->start = r->p = p;
	r->end = r->p + len;
	r->bad = false;
}
static inline bool cpa_rb_more(const struct cpa_rb *r)
{
	return !r->bad && r->p < r->end;
}
uint64_t cpa_rb_get_u64(struct cpa_rb *r);
uint16_t cpa_rb_get_u16(struct cpa_rb *r);
uint8_t cpa_rb_get_u8(struct cpa_rb *r);
/* A string: points into the answer (not NUL-terminated). */
const char *cpa_rb_get_string(struct cpa_rb *r, uint32_t *len);
/* A length prefix (Array's), at most max. */
uint64_t cpa_rb_get_count(struct cpa_rb *r, uint64_t max);

#endif
