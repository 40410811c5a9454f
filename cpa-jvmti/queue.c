// SPDX-License-Identifier: MIT
/*
 * The queue between the Java threads that allocate and the agent's
 * thread that writes to the socket. A Java thread only copies its record
 * in under a mutex held for that copy: a slow or stalled reader fills
 * the queue, and what does not fit is counted and dropped, so the
 * application never waits for the profiler.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "clock.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint8_t *buf;
static size_t used, cap = 4u << 20;
static uint64_t dropped;

static void init_cond(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&ready, &a);
	pthread_condattr_destroy(&a);
}

void queue_set_capacity(size_t bytes)
{
	pthread_mutex_lock(&lock);
	cap = bytes;
	pthread_mutex_unlock(&lock);
}

bool queue_push(const void *rec, size_t len)
{
	bool ok = false;

	pthread_once(&once, init_cond);
	pthread_mutex_lock(&lock);
	if (!buf)
		buf = malloc(cap);
	if (buf && len <= cap - used) {
		memcpy(buf + used, rec, len);
		used += len;
		ok = true;
		pthread_cond_signal(&ready);
	} else {
		dropped++;
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

uint8_t *queue_take(size_t *len, unsigned ms)
{
	struct timespec ts;
	uint8_t *out = NULL;

	pthread_once(&once, init_cond);
	ts = cpa_timespec(cpa_mono_ns() + ms * CPA_NSEC_PER_MSEC);
	pthread_mutex_lock(&lock);
	while (!used && pthread_cond_timedwait(&ready, &lock, &ts) == 0)
		;
	if (used) {
		/* the whole buffer goes; the next push allocates another */
		out = buf;
		*len = used;
		buf = NULL;
		used = 0;
	}
	pthread_mutex_unlock(&lock);
	return out;
}

uint64_t queue_drops(void)
{
	uint64_t n;

	pthread_mutex_lock(&lock);
	n = dropped;
	dropped = 0;
	pthread_mutex_unlock(&lock);
	return n;
}

void queue_clear(void)
{
	pthread_mutex_lock(&lock);
	free(buf);
	buf = NULL;
	used = 0;
	dropped = 0;
	pthread_mutex_unlock(&lock);
}
