/* SPDX-License-Identifier: MIT */
/*
 * A slowloris client for cpa-serve's tests, on loopback only: N
 * connections that each send the start of a request header and then one
 * byte per interval, never its end; each the server closes is opened
 * again after a pause. Runs for a bounded time, then reports:
 *   opened N closed N oldest_open_ms N longest_life_ms N
 * (longest_life_ms: the longest a connection lived before the server
 * closed it). "ready" goes to stdout once all N have connected.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

struct conn {
	int fd;
	long long opened, next_byte, reopen;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static struct sockaddr_in to;
static long opened, closed, longest;

/* The server let go of it: counted, and opened again after a pause. */
static void lost(struct conn *c, long long t, long pause_ms)
{
	if (t - c->opened > longest)
		longest = t - c->opened;
	close(c->fd);
	c->fd = -1;
	c->reopen = t + pause_ms;
	closed++;
}

static void open_one(struct conn *c, long long t)
{
	static const char start[] = "GET /v1/profiling HTTP/1.1\r\nHost: x\r\n";

	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		perror("slowloris: socket");
		exit(1);
	}
	if (connect(c->fd, (struct sockaddr *)&to, sizeof(to)) ||
	    write(c->fd, start, sizeof(start) - 1) < 0) {
		/* refused at once: counts as closed, tried again later */
		close(c->fd);
		c->fd = -1;
		c->reopen = t + 100;
		closed++;
		return;
	}
	fcntl(c->fd, F_SETFL, O_NONBLOCK);
	opened++;
	c->opened = t;
	c->next_byte = t;
}

int main(int argc, char **argv)
{
	long n, seconds, interval, pause_ms = 50;
	struct rlimit rl;
	struct conn *cs;
	struct pollfd *pf;
	long long end, t;

	if (argc < 6) {
		fprintf(stderr, "usage: slowloris ADDR PORT CONNECTIONS SECONDS "
			"INTERVAL_MS\n");
		return 2;
	}
	memset(&to, 0, sizeof(to));
	to.sin_family = AF_INET;
	to.sin_port = htons((unsigned short)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1 ||
	    (ntohl(to.sin_addr.s_addr) >> 24) != 127) {
		fprintf(stderr, "slowloris: %s: loopback addresses only\n",
			argv[1]);
		return 2;
	}
	n = atol(argv[3]);
	seconds = atol(argv[4]);
	interval = atol(argv[5]);
	signal(SIGPIPE, SIG_IGN);
	if (n < 1 || n > 10000 || seconds < 1 || seconds > 120 || interval < 1)
		return 2;
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	cs = calloc((size_t)n, sizeof(*cs));
	pf = calloc((size_t)n, sizeof(*pf));
	t = now_ms();
	end = t + seconds * 1000;
	for (long i = 0; i < n; i++)
		open_one(&cs[i], t);
	printf("ready\n");
	fflush(stdout);
	while ((t = now_ms()) < end) {
		for (long i = 0; i < n; i++) {
			struct conn *c = &cs[i];

			if (c->fd < 0 && t >= c->reopen)
				open_one(c, t);
			if (c->fd >= 0 && t >= c->next_byte) {
				if (write(c->fd, "X", 1) < 0 && errno != EAGAIN) {
					lost(c, t, pause_ms);
					continue;
				}
				c->next_byte = t + interval;
			}
			pf[i].fd = c->fd;
			pf[i].events = POLLIN | POLLRDHUP;
			pf[i].revents = 0;
		}
		poll(pf, (nfds_t)n, 10);
		t = now_ms();
		for (long i = 0; i < n; i++) {
			struct conn *c = &cs[i];
			char b[512];

			if (c->fd < 0 || !pf[i].revents)
				continue;
			/* an answer (a 408?) or the close: either way the
			 * server let go of it */
			if (read(c->fd, b, sizeof(b)) > 0 &&
			    !(pf[i].revents & (POLLHUP | POLLRDHUP | POLLERR)))
				continue;
			lost(c, t, pause_ms);
		}
	}
	t = now_ms();
	long long oldest = 0;

	for (long i = 0; i < n; i++)
		if (cs[i].fd >= 0 && t - cs[i].opened > oldest)
			oldest = t - cs[i].opened;
	printf("opened %ld closed %ld oldest_open_ms %lld longest_life_ms %ld\n",
	       opened, closed, oldest, longest);
	for (long i = 0; i < n; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	free(cs);
	free(pf);
	return 0;
}
