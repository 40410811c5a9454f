/* SPDX-License-Identifier: MIT */
/*
 * The connection gate: every connection waits here, outside the HTTP
 * library, until its request header is in, and is handed over only
 * then. A connection gets a fixed time for its header from the moment it
 * is accepted, which bytes do not extend; one address may hold only so
 * many connections, and so many still sending their header; when the
 * waiting room is full its oldest occupant leaves first. So connections
 * that trickle a byte at a time (slowloris) cost a slot each for a
 * bounded time and can never keep a client that sends its request at
 * once from being answered.
 */
#ifndef CPA_SERVE_GATE_H
#define CPA_SERVE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

struct gate_config {
	int listen_fd;			/* bound and listening */
	bool tls;			/* wait for the ClientHello only */
	unsigned header_timeout_ms;	/* from accept, whatever arrives */
	unsigned max_waiting;		/* headers still coming, in all */
	unsigned max_waiting_per_addr;	/* ... from one address */
	unsigned max_per_addr;		/* connections of one address */
	/* takes over a connection whose header is in; it owns fd from
	 * then on, and calls gate_opened/gate_closed for it */
	void (*hand_over)(int fd, const struct sockaddr *sa, socklen_t len,
			  void *arg);
	void *arg;
};

/* Starts the gate's thread: 0, or -1 with err. */
int gate_start(const struct gate_config *c, char *err, size_t errlen);
void gate_stop(void);

/* The HTTP side counts the connections it holds, per address. */
void gate_opened(const struct sockaddr *sa);
void gate_closed(const struct sockaddr *sa);

/*
 * Inside TLS the gate cannot see a header end: the HTTP side tells it
 * when a TLS connection starts and when its first header is in, and a
 * connection whose header is not in by the deadline (from its start) is
 * shut down, which the library then closes. conn is the library's
 * connection, fd its socket, open until gate_forget is called.
 */
void gate_watch(void *conn, int fd);
void gate_header_seen(void *conn);
void gate_forget(void *conn);

struct gate_stats {
	unsigned long accepted, handed_over, timed_out, evicted, refused;
};
void gate_get_stats(struct gate_stats *s);

#endif
