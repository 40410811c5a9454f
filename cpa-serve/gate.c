/* SPDX-License-Identifier: MIT */
/*
 * One thread, one epoll set. The header is looked for with MSG_PEEK, so
 * the bytes stay in the socket for the HTTP library to read as if it had
 * accepted the connection itself. A peek costs the bytes waiting, so a
 * connection may be woken only GATE_MAX_WAKES times before its header is
 * in: a client sends a header in one to three segments, a trickle needs
 * a wake per byte.
 *
 * A connection is new for its first GATE_NEW_MS: a client sends its
 * request with its connect, so a new connection is not yet counted
 * against its address, whatever the address does meanwhile. It then
 * settles: it takes one of its address's places in the room, or is
 * closed when they are all taken (those that came first keep theirs, up
 * to their deadline); when the whole room is full its oldest occupant
 * goes. So a client that sends its header within GATE_NEW_MS is never
 * turned away by slow connections, even from its own address, and slow
 * ones hold a bounded number of places for a bounded time.
 *
 * An address is an IPv4 address, or an IPv6 /64 (what one host is
 * given); IPv4-mapped IPv6 addresses count as their IPv4 address.
 */
#include <config.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "buf.h"
#include "child.h"
#include "gate.h"
#include "log.h"

#define GATE_HEADER_MAX (32u << 10)
#define GATE_MAX_WAKES 64
#define GATE_NEW_MS 1000
#define GATE_MAX_NEW 4096

struct addr_key {
	uint8_t b[16];
};

struct waiting {
	int fd;
	struct sockaddr_storage sa;
	socklen_t len;
	struct addr_key key;
	int64_t accepted, deadline;
	unsigned wakes;
};

struct held {
	struct addr_key key;
	unsigned n;
};

static struct gate_config cfg;
static pthread_t thread;
static bool running;
static int ep = -1, wake_fd = -1;
/* in accept order, oldest first: the settled ones, then the new ones */
static struct waiting *wait_list;
static size_t n_waiting, n_settled;
static char peek_buf[GATE_HEADER_MAX];

/* TLS connections handed over whose first header is not in yet */
struct watched {
	void *conn;
	int fd;
	int64_t deadline;
};

static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watched *watch;
static size_t n_watch, cap_watch;
static struct held *held;		/* handed over, per address */
static size_t n_held, cap_held;
static struct gate_stats stats;

static void key_of(const struct sockaddr *sa, struct addr_key *k)
{
	memset(k, 0, sizeof(*k));
	if (sa->sa_family == AF_INET) {
		memcpy(k->b, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		if (IN6_IS_ADDR_V4MAPPED(a))
			memcpy(k->b, a->s6_addr + 12, 4);
		else
			memcpy(k->b + 4, a->s6_addr, 8);
		k->b[15] = 6;
	}
}

static bool same(const struct addr_key *a, const struct addr_key *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static unsigned held_by(const struct addr_key *k)
{
	unsigned n = 0;

	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < n_held; i++)
		if (same(&held[i].key, k))
			n = held[i].n;
	pthread_mutex_unlock(&held_lock);
	return n;
}

static void held_add(const struct sockaddr *sa, int d)
{
	struct addr_key k;
	size_t i;

	key_of(sa, &k);
	pthread_mutex_lock(&held_lock);
	for (i = 0; i < n_held; i++)
		if (same(&held[i].key, &k))
			break;
	if (i == n_held && d > 0) {
		CPA_GROW(held, cap_held, n_held + 1);
		held[n_held].key = k;
		held[n_held++].n = 0;
	}
	if (i < n_held) {
		if (d > 0)
			held[i].n++;
		else if (held[i].n && !--held[i].n)
			held[i] = held[--n_held];
	}
	pthread_mutex_unlock(&held_lock);
}

void gate_opened(const struct sockaddr *sa)
{
	held_add(sa, 1);
}

void gate_closed(const struct sockaddr *sa)
{
	held_add(sa, -1);
}

void gate_watch(void *conn, int fd)
{
	pthread_mutex_lock(&held_lock);
	CPA_GROW(watch, cap_watch, n_watch + 1);
	watch[n_watch++] = (struct watched){ conn, fd,
		cpa_mono_ms() + cfg.header_timeout_ms };
	pthread_mutex_unlock(&held_lock);
}

void gate_forget(void *conn)
{
	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < n_watch; i++)
		if (watch[i].conn == conn) {
			watch[i] = watch[--n_watch];
			break;
		}
	pthread_mutex_unlock(&held_lock);
}

void gate_header_seen(void *conn)
{
	gate_forget(conn);
}

/* Shuts down the watched past their deadline; the ms to the next. The
 * lock is held across the shutdown, and gate_forget takes it before the
 * library closes the socket, so fd is still that connection's. */
static int64_t watch_deadlines(int64_t now)
{
	int64_t next = -1;

	pthread_mutex_lock(&held_lock);
	for (size_t i = 0; i < n_watch;) {
		if (watch[i].deadline <= now) {
			shutdown(watch[i].fd, SHUT_RDWR);
			stats.timed_out++;
			watch[i] = watch[--n_watch];
			continue;
		}
		if (next < 0 || watch[i].deadline - now < next)
			next = watch[i].deadline - now;
		i++;
	}
	pthread_mutex_unlock(&held_lock);
	return next;
}

void gate_get_stats(struct gate_stats *s)
{
	pthread_mutex_lock(&held_lock);
	*s = stats;
	pthread_mutex_unlock(&held_lock);
}

static void count(unsigned long *c)
{
	pthread_mutex_lock(&held_lock);
	(*c)++;
	pthread_mutex_unlock(&held_lock);
}

/* Takes entry i off the list; its fd stays open. */
static struct waiting take(size_t i)
{
	struct waiting w = wait_list[i];

	epoll_ctl(ep, EPOLL_CTL_DEL, w.fd, NULL);
	memmove(&wait_list[i], &wait_list[i + 1],
		(n_waiting - i - 1) * sizeof(*wait_list));
	n_waiting--;
	if (i < n_settled)
		n_settled--;
	return w;
}

static void drop(size_t i, unsigned long *why)
{
	struct waiting w = take(i);

	close(w.fd);
	count(why);
}

static void hand_over(size_t i)
{
	struct waiting w = take(i);

	count(&stats.handed_over);
	cfg.hand_over(w.fd, (struct sockaddr *)&w.sa, w.len, cfg.arg);
}

/* Whether what has come is a whole header (or all the gate would wait
 * for): the header's blank line, or for TLS the first record. */
static bool header_in(const char *p, size_t n)
{
	if (n >= GATE_HEADER_MAX)
		return true;	/* the HTTP side refuses it as too large */
	if (cfg.tls) {
		const unsigned char *u = (const unsigned char *)p;

		return u[0] != 0x16 ||
		       (n >= 5 && n >= 5 + ((size_t)u[3] << 8 | u[4]));
	}
	for (size_t i = 0; i + 1 < n; i++)
		if (p[i] == '\n' &&
		    (p[i + 1] == '\n' ||
		     (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n')))
			return true;
	return false;
}

/* Whether fd's header is in, looked at without taking a byte. */
static bool peek_header(int fd)
{
	ssize_t n = recv(fd, peek_buf, sizeof(peek_buf),
			 MSG_PEEK | MSG_DONTWAIT);

	return n > 0 && header_in(peek_buf, (size_t)n);
}

/* Entry i must make room: unless its header has come meanwhile (then it
 * goes on), it is closed. */
static void evict(size_t i)
{
	if (peek_header(wait_list[i].fd))
		hand_over(i);
	else
		drop(i, &stats.evicted);
}

/* The settled connections of an address, and the oldest of them. */
static unsigned waiting_from(const struct addr_key *k, size_t *oldest)
{
	unsigned n = 0;

	for (size_t i = n_settled; i-- > 0;)
		if (same(&wait_list[i].key, k)) {
			n++;
			*oldest = i;
		}
	return n;
}

/* The oldest new connection takes its place in the room, or leaves. */
static void settle(void)
{
	struct waiting *w = &wait_list[n_settled];
	size_t oldest = 0;

	if (held_by(&w->key) + waiting_from(&w->key, &oldest) >=
	    cfg.max_per_addr ||
	    waiting_from(&w->key, &oldest) >= cfg.max_waiting_per_addr) {
		drop(n_settled, &stats.refused);
		return;
	}
	if (n_settled >= cfg.max_waiting)
		evict(0);
	n_settled++;
}

/* At most a round's worth, so that a flood of connects does not starve
 * the waiting ones' deadlines and wakes. */
static void accept_all(void)
{
	for (int round = 0; round < 256; round++) {
		struct waiting w = { .len = sizeof(w.sa) };
		/* edge-triggered: the bytes stay unread, a wake is new bytes */
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP |
						   EPOLLET };

		w.fd = accept4(cfg.listen_fd, (struct sockaddr *)&w.sa, &w.len,
			       SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (w.fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/* out of descriptors: the oldest waiting gives its
			 * own up, and the rest wait in the backlog */
			if ((errno == EMFILE || errno == ENFILE) && n_waiting)
				drop(0, &stats.evicted);
			return;
		}
		count(&stats.accepted);
		key_of((struct sockaddr *)&w.sa, &w.key);
		/* a client that sent its request with its connect has it
		 * waiting already: it never takes a place in the room */
		if (peek_header(w.fd)) {
			count(&stats.handed_over);
			cfg.hand_over(w.fd, (struct sockaddr *)&w.sa, w.len,
				      cfg.arg);
			continue;
		}
		if (n_waiting - n_settled >= GATE_MAX_NEW)
			settle();
		w.accepted = cpa_mono_ms();
		w.deadline = w.accepted + cfg.header_timeout_ms;
		ev.data.fd = w.fd;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, w.fd, &ev)) {
			close(w.fd);
			continue;
		}
		wait_list[n_waiting++] = w;
	}
}

static void readable(int fd)
{
	size_t i;
	ssize_t n;

	for (i = 0; i < n_waiting && wait_list[i].fd != fd; i++)
		;
	if (i == n_waiting)
		return;
	n = recv(fd, peek_buf, sizeof(peek_buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop(i, &stats.timed_out);	/* gone before its header */
		return;
	}
	if (header_in(peek_buf, (size_t)n))
		hand_over(i);
	else if (++wait_list[i].wakes > GATE_MAX_WAKES)
		drop(i, &stats.timed_out);
}

static void *gate_main(void *arg)
{
	struct epoll_event evs[64];

	(void)arg;
	while (running) {
		int64_t now = cpa_mono_ms();
		int timeout = -1, n;

		while (n_waiting && wait_list[0].deadline <= now)
			drop(0, &stats.timed_out);
		while (n_settled < n_waiting &&
		       wait_list[n_settled].accepted + GATE_NEW_MS <= now)
			settle();
		if (n_waiting)
			timeout = (int)(wait_list[0].deadline - now);
		if (n_settled < n_waiting &&
		    wait_list[n_settled].accepted + GATE_NEW_MS - now < timeout)
			timeout = (int)(wait_list[n_settled].accepted +
					GATE_NEW_MS - now);
		/* watches come from other threads: looked at twice a second */
		int64_t w = watch_deadlines(now);

		if (w >= 0 && (timeout < 0 || w < timeout))
			timeout = (int)w;
		if (cfg.tls && (timeout < 0 || timeout > 500))
			timeout = 500;
		n = epoll_wait(ep, evs, 64, timeout);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == cfg.listen_fd)
				accept_all();
			else if (evs[i].data.fd != wake_fd)
				readable(evs[i].data.fd);
		}
	}
	return NULL;
}

int gate_start(const struct gate_config *c, char *err, size_t errlen)
{
	struct epoll_event ev = { .events = EPOLLIN };

	cfg = *c;
	wait_list = cpa_calloc(cfg.max_waiting + GATE_MAX_NEW + 1,
			       sizeof(*wait_list));
	ep = epoll_create1(EPOLL_CLOEXEC);
	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ep < 0 || wake_fd < 0)
		return cpa_fail_errno(err, errlen, errno, "epoll");
	ev.data.fd = cfg.listen_fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, cfg.listen_fd, &ev))
		return cpa_fail_errno(err, errlen, errno, "epoll");
	ev.data.fd = wake_fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd, &ev))
		return cpa_fail_errno(err, errlen, errno, "epoll");
	running = true;
	if (pthread_create(&thread, NULL, gate_main, NULL)) {
		running = false;
		return cpa_fail(err, errlen, "cannot start the gate's thread");
	}
	return 0;
}

void gate_stop(void)
{
	uint64_t one = 1;

	if (!running)
		return;
	running = false;
	if (write(wake_fd, &one, sizeof(one)) < 0)
		cpa_warn("gate: cannot wake its thread");
	pthread_join(thread, NULL);
	while (n_waiting)
		close(take(0).fd);
	n_settled = 0;
	close(ep);
	close(wake_fd);
	free(wait_list);
	free(held);
	free(watch);
	watch = NULL;
	n_watch = cap_watch = 0;
	wait_list = NULL;
	held = NULL;
	n_held = cap_held = 0;
	ep = wake_fd = -1;
}
