/* SPDX-License-Identifier: MIT */
/* A fixed set of worker threads on one bounded queue, under one mutex. */
#include <config.h>

#include <pthread.h>
#include <stdlib.h>

#include "log.h"
#include "offload.h"

struct task {
	void (*fn)(void *arg);
	void *arg;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;
static struct task *queue;	/* a ring of queue_cap */
static unsigned queue_cap, head, len, n_workers;
static pthread_t *workers;
static bool stopping;

static void *worker(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct task t;

		while (!len && !stopping)
			pthread_cond_wait(&more, &lock);
		if (!len)
			break;
		t = queue[head];
		head = (head + 1) % queue_cap;
		len--;
		pthread_mutex_unlock(&lock);
		t.fn(t.arg);
		pthread_mutex_lock(&lock);
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

void offload_start(unsigned n, unsigned queue_max)
{
	queue_cap = queue_max;
	queue = cpa_calloc(queue_cap, sizeof(*queue));
	workers = cpa_calloc(n, sizeof(*workers));
	for (n_workers = 0; n_workers < n; n_workers++)
		if (pthread_create(&workers[n_workers], NULL, worker, NULL))
			cpa_die("cannot start a worker thread");
}

bool offload_submit(void (*fn)(void *arg), void *arg)
{
	bool ok;

	pthread_mutex_lock(&lock);
	ok = !stopping && len < queue_cap;
	if (ok) {
		queue[(head + len) % queue_cap] = (struct task){ fn, arg };
		len++;
		pthread_cond_signal(&more);
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

void offload_stop(void)
{
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_broadcast(&more);
	pthread_mutex_unlock(&lock);
	for (unsigned i = 0; i < n_workers; i++)
		pthread_join(workers[i], NULL);
	free(workers);
	free(queue);
	workers = NULL;
	queue = NULL;
	n_workers = 0;
}
