// SPDX-License-Identifier: MIT
/*
 * The agent's life. cpa-capture loads it with the attach mechanism's
 * "load" request; Agent_OnAttach starts one daemon thread that listens on
 * /tmp/.cpa-jvmti-PID (the JVM's /tmp and pid) and serves one capture at
 * a time. A session gets a JVMTI environment of its own, so that its end
 * (DisposeEnvironment) gives back every capability, event and object tag
 * it took; between sessions the agent holds a thread blocked in accept()
 * and nothing else. JVMTI has no way to unload an agent: a second load
 * finds the thread running and leaves it be, and a capture that finds
 * the socket answering loads nothing at all.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "io.h"
#include "jvmagent.h"

static JavaVM *vm;
static atomic_bool started;
static char sock_path[108];

/* Writes all of buf; false when the capture went away. */
static bool send_all(int fd, const void *buf, size_t len)
{
	return cpa_send_full(fd, buf, len) == 0;
}

/* The request line: "cpa-jvmti 1 interval=N live=0|1". */
static bool read_request(int fd, uint64_t *interval, bool *live)
{
	char line[JVMAGENT_LINE_MAX];
	size_t n = 0;
	unsigned version, l;
	unsigned long long iv;

	while (n + 1 < sizeof(line)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 5000) <= 0)
			return false;
		ssize_t k = recv(fd, line + n, 1, 0);
		if (k <= 0)
			return false;
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	if (sscanf(line, "cpa-jvmti %u interval=%llu live=%u", &version, &iv,
		   &l) != 3 || version != JVMAGENT_VERSION || !iv ||
	    iv > 0x7fffffff)
		return false;
	*interval = iv;
	*live = l != 0;
	return true;
}

/* Sends what is queued, waiting up to ms for it, and the drops. */
static bool send_queued(int fd, unsigned ms)
{
	size_t len;
	uint8_t *buf = queue_take(&len, ms);
	bool ok = !buf || send_all(fd, buf, len);
	uint64_t drops = queue_drops();

	free(buf);
	if (ok && drops) {
		struct jvmagent_drops d = {
			.h = { .len = sizeof(d), .type = JVMAGENT_DROPS },
			.time_ns = agent_now_ns(),
			.count = drops,
		};
		ok = send_all(fd, &d, sizeof(d));
	}
	return ok;
}

/* Sends what the events queue until the capture says stop (true) or
 * goes away (false). */
static bool pump(int fd)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char c;

		/* the capture sends nothing but "stop" */
		if (poll(&p, 1, 0) > 0)
			return recv(fd, &c, 1, MSG_DONTWAIT) > 0;
		if (!send_queued(fd, 100))
			return false;
	}
}

static void session(int fd)
{
	jvmtiEnv *jvmti = NULL;
	uint64_t interval;
	bool live;
	char err[128] = "", answer[JVMAGENT_LINE_MAX];

	if (!read_request(fd, &interval, &live))
		return;
	if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_11) != JNI_OK) {
		snprintf(err, sizeof(err), "no JVMTI 11 environment");
		jvmti = NULL;
	} else if (events_start(jvmti, interval, live, err, sizeof(err)) < 0) {
		(*jvmti)->DisposeEnvironment(jvmti);
		jvmti = NULL;
	}
	if (!jvmti) {
		snprintf(answer, sizeof(answer), "error %s\n", err);
		send_all(fd, answer, strlen(answer));
		return;
	}
	bool stopped = send_all(fd, "ok\n", 3) && pump(fd);
	events_stop(jvmti);
	if (stopped && send_queued(fd, 0)) {
		struct jvmagent_head end = { .len = sizeof(end),
					     .type = JVMAGENT_END };
		send_all(fd, &end, sizeof(end));
	}
	/* its tags, capabilities and callbacks go with it */
	(*jvmti)->DisposeEnvironment(jvmti);
	queue_clear();
	names_clear();
}

static int listen_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old;

	if (fd < 0)
		return -1;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	unlink(sock_path);	/* left by an earlier JVM of this pid */
	old = umask(077);	/* the JVM's user and root only */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 4) < 0) {
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	return fd;
}

static void *serve(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	JNIEnv *jni;

	/* JVMTI calls are made from a thread the JVM knows */
	if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&jni, NULL) !=
	    JNI_OK)
		return NULL;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		session(fd);
		close(fd);
	}
	return NULL;
}

static jint start(JavaVM *jvm)
{
	pthread_t t;
	pthread_attr_t a;
	int fd;

	if (atomic_exchange(&started, true))
		return JNI_OK;	/* loaded again: the first thread serves */
	vm = jvm;
	snprintf(sock_path, sizeof(sock_path), "/tmp/" JVMAGENT_SOCKET_FMT,
		 (unsigned)getpid());
	fd = listen_socket();
	if (fd < 0) {
		fprintf(stderr, "cpa-jvmti: %s: %s\n", sock_path,
			strerror(errno));
		atomic_store(&started, false);
		return JNI_ERR;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, serve, (void *)(intptr_t)fd)) {
		pthread_attr_destroy(&a);
		close(fd);
		unlink(sock_path);
		atomic_store(&started, false);
		return JNI_ERR;
	}
	pthread_attr_destroy(&a);
	return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *jvm, char *options,
				      void *reserved)
{
	(void)options;
	(void)reserved;
	return start(jvm);
}

/* The socket goes when the JVM exits. */
__attribute__((destructor)) static void remove_socket(void)
{
	if (atomic_load(&started) && sock_path[0])
		unlink(sock_path);
}
