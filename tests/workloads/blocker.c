/*
 * Off-CPU workload that blocks through one of libc's blocking wrappers,
 * N times, each wait ended after about MS ms by a helper process:
 *
 *   main -> run -> wait_loop -> block_in_MODE -> libc wrapper -> syscall
 *
 * run has a 4 KiB frame, as a real program's stack has depth: the frames
 * from main up are farther from the blocked sp than a small stack copy
 * reaches.
 *
 * MODE is nanosleep, read (a pipe), mutex (pthread_mutex_lock, a futex),
 * cond (pthread_cond_wait), epoll (epoll_wait), poll, select, recv (a
 * socketpair), accept (a unix socket) or write (a full pipe). The helper
 * is a child process, so a capture with --pid of this process sees only
 * the waits. After SIGUSR1 (so a capture can attach first) it runs the
 * loop, then prints "blocked NS", the time spent inside the wrapper calls,
 * and exits without waiting for the helper (it dies with its parent).
 * Prints "ready PID" once waiting for SIGUSR1.
 *
 * usage: blocker MODE MS N
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "start.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* Shared with the helper process. */
struct shared {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	pthread_mutex_t handoff[2];	/* held by the helper in turns */
	atomic_int held;		/* the helper holds handoff[0] */
};

static const char *mode;
static long ms;
static int fds[2];		/* the waiter reads fds[0] / writes fds[1] */
static int efd = -1;
static char sock_path[108];
static struct shared *sh;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void pause_ms(long n)
{
	struct timespec ts = { n / 1000, (n % 1000) * 1000000L };
	while (nanosleep(&ts, &ts))
		;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the helper: ends each wait after about ms ms ---------------------- */

static void helper(void)
{
	char buf[65536];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!strcmp(mode, "mutex")) {
		/* takes the other mutex before letting go of one, so the
		 * waiter, which takes them in the same order, always waits */
		pthread_mutex_lock(&sh->handoff[0]);
		atomic_store(&sh->held, 1);
		for (long r = 0;; r++) {
			pause_ms(ms);
			pthread_mutex_lock(&sh->handoff[(r + 1) % 2]);
			pthread_mutex_unlock(&sh->handoff[r % 2]);
		}
	} else if (!strcmp(mode, "cond")) {
		for (;;) {
			pause_ms(ms);
			pthread_mutex_lock(&sh->mutex);
			pthread_cond_signal(&sh->cond);
			pthread_mutex_unlock(&sh->mutex);
		}
	} else if (!strcmp(mode, "accept")) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		memcpy(a.sun_path, sock_path, sizeof(a.sun_path));
		for (;;) {
			pause_ms(ms);
			int s = socket(AF_UNIX, SOCK_STREAM, 0);
			if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
				die("connect");
			close(s);
		}
	} else if (!strcmp(mode, "write")) {
		/* drains the full pipe a page at a time */
		for (;;) {
			pause_ms(ms);
			if (read(fds[0], buf, 4096) < 0)
				die("read");
		}
	} else {
		for (;;) {
			pause_ms(ms);
			if (write(fds[1], "x", 1) != 1)
				die("write");
		}
	}
	exit(0);
}

/* ---- the waits ---------------------------------------------------------- */

NOINLINE void block_in_nanosleep(long round)
{
	(void)round;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	KEEP_FRAME();
}

NOINLINE void block_in_read(long round)
{
	(void)round;
	char c;
	if (read(fds[0], &c, 1) != 1)
		die("read");
	KEEP_FRAME();
}

NOINLINE void block_in_mutex(long round)
{
	pthread_mutex_t *m = &sh->handoff[(round - 1) % 2];

	pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
	KEEP_FRAME();
}

NOINLINE void block_in_cond(long round)
{
	(void)round;
	pthread_mutex_lock(&sh->mutex);
	pthread_cond_wait(&sh->cond, &sh->mutex);
	pthread_mutex_unlock(&sh->mutex);
	KEEP_FRAME();
}

NOINLINE void block_in_epoll(long round)
{
	(void)round;
	struct epoll_event ev;
	if (epoll_wait(efd, &ev, 1, -1) != 1)
		die("epoll_wait");
	KEEP_FRAME();
}

NOINLINE void block_in_poll(long round)
{
	(void)round;
	struct pollfd p = { .fd = fds[0], .events = POLLIN };
	if (poll(&p, 1, -1) != 1)
		die("poll");
	KEEP_FRAME();
}

NOINLINE void block_in_select(long round)
{
	(void)round;
	fd_set r;
	FD_ZERO(&r);
	FD_SET(fds[0], &r);
	if (select(fds[0] + 1, &r, NULL, NULL, NULL) != 1)
		die("select");
	KEEP_FRAME();
}

NOINLINE void block_in_recv(long round)
{
	(void)round;
	char c;
	if (recv(fds[0], &c, 1, 0) != 1)
		die("recv");
	KEEP_FRAME();
}

NOINLINE void block_in_accept(long round)
{
	(void)round;
	int s = accept(fds[0], NULL, NULL);
	if (s < 0)
		die("accept");
	close(s);
	KEEP_FRAME();
}

NOINLINE void block_in_write(long round)
{
	(void)round;
	static const char page[4096];
	if (write(fds[1], page, sizeof(page)) != (ssize_t)sizeof(page))
		die("write");
	KEEP_FRAME();
}

static const struct wait {
	const char *mode;
	void (*block)(long round);
	bool told;		/* an event wait: read what it was told of */
} waits[] = {
	{ "nanosleep", block_in_nanosleep, false },
	{ "read", block_in_read, false },
	{ "mutex", block_in_mutex, false },
	{ "cond", block_in_cond, false },
	{ "epoll", block_in_epoll, true },
	{ "poll", block_in_poll, true },
	{ "select", block_in_select, true },
	{ "recv", block_in_recv, false },
	{ "accept", block_in_accept, false },
	{ "write", block_in_write, false },
};
static const struct wait *w;

/* Returns the time spent inside the waits. */
NOINLINE uint64_t wait_loop(long count)
{
	uint64_t blocked = 0;
	char c;

	for (long i = 1; i <= count; i++) {
		uint64_t t0 = now_ns();
		w->block(i);
		blocked += now_ns() - t0;
		if (w->told && read(fds[0], &c, 1) != 1)
			die("read");
	}
	KEEP_FRAME();
	return blocked;
}

NOINLINE uint64_t run(long count)
{
	volatile char frame[4096];

	frame[0] = 0;
	uint64_t blocked = wait_loop(count);
	KEEP_FRAME();
	return blocked + (uint64_t)frame[0];
}

static void setup(void)
{
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (!strcmp(mode, waits[i].mode))
			w = &waits[i];
	if (!w) {
		fprintf(stderr, "blocker: unknown mode '%s'\n", mode);
		exit(2);
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(&sh->mutex, &ma);
	pthread_mutex_init(&sh->handoff[0], &ma);
	pthread_mutex_init(&sh->handoff[1], &ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_cond_init(&sh->cond, &ca);

	if (!strcmp(mode, "recv")) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds))
			die("socketpair");
	} else if (!strcmp(mode, "accept")) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(sock_path, sizeof(sock_path), "/tmp/blocker.%d",
			 (int)getpid());
		memcpy(a.sun_path, sock_path, sizeof(a.sun_path));
		unlink(sock_path);
		fds[0] = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fds[0] < 0 || bind(fds[0], (struct sockaddr *)&a, sizeof(a)) ||
		    listen(fds[0], 64))
			die("listen");
	} else if (pipe(fds)) {
		die("pipe");
	}
	if (!strcmp(mode, "write")) {
		/* fill the pipe: every later write blocks until the helper
		 * reads a page */
		static const char page[4096];
		int fl = fcntl(fds[1], F_GETFL);
		fcntl(fds[1], F_SETFL, fl | O_NONBLOCK);
		while (write(fds[1], page, sizeof(page)) > 0)
			;
		fcntl(fds[1], F_SETFL, fl);
	}
	if (!strcmp(mode, "epoll")) {
		struct epoll_event ev = { .events = EPOLLIN };
		efd = epoll_create1(0);
		if (efd < 0 || epoll_ctl(efd, EPOLL_CTL_ADD, fds[0], &ev))
			die("epoll");
	}
}

int main(int argc, char **argv)
{
	long count;

	if (argc != 4) {
		fprintf(stderr, "usage: %s MODE MS N\n", argv[0]);
		return 2;
	}
	mode = argv[1];
	ms = atol(argv[2]);
	count = atol(argv[3]);
	setup();

	wait_for_start();

	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0)
		helper();
	if (w->block == block_in_mutex)
		while (!atomic_load(&sh->held))
			;
	uint64_t blocked = run(count);
	printf("blocked %llu\n", (unsigned long long)blocked);
	fflush(stdout);
	if (sock_path[0])
		unlink(sock_path);
	KEEP_FRAME();
	return 0;
}
