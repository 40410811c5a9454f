/* SPDX-License-Identifier: MIT */
/*
 * Work that waits on a child process (a history query and its render)
 * runs on a few threads of its own, never on an HTTP thread: the HTTP
 * side suspends the connection, queues the work, and resumes it when the
 * answer is ready. The queue is bounded; past it the caller answers 503.
 */
#ifndef CPA_SERVE_OFFLOAD_H
#define CPA_SERVE_OFFLOAD_H

#include <stdbool.h>

void offload_start(unsigned workers, unsigned queue_max);
/* Queues fn(arg) for a worker; false when the queue is full. */
bool offload_submit(void (*fn)(void *arg), void *arg);
/* Lets queued work finish, then ends the workers. */
void offload_stop(void);

#endif
