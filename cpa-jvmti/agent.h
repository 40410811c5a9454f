/* SPDX-License-Identifier: MIT */
/*
 * libcpa-jvmti.so, the JVMTI agent cpa-capture loads into a running JVM
 * for --java-alloc and --java-live. Each file is one concern:
 *   agent.c    loading, the listening socket, one capture session at a time
 *   events.c   the JVMTI events of a session, turned into records
 *   names.c    method and class names, as frames read them
 *   queue.c    the bounded queue between Java threads and the socket
 * The wire format is lib/runtime/jvmagent.h.
 */
#ifndef CPA_JVMTI_AGENT_H
#define CPA_JVMTI_AGENT_H

#include <jvmti.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* queue.c: records from any thread, never waiting on the reader; a
 * record that does not fit is counted as dropped. */
bool queue_push(const void *rec, size_t len);
/* Waits up to ms for records, then hands over what is queued (the
 * caller frees it); NULL when there is none. */
uint8_t *queue_take(size_t *len, unsigned ms);
/* Records dropped since the last call. */
uint64_t queue_drops(void);
/* Empties the queue and frees its memory. */
void queue_clear(void);
void queue_set_capacity(size_t bytes);

/* names.c: "pkg.Class.method" of a method, cached per jmethodID for the
 * session; "pkg.Class" or "byte[]" of a class signature. */
size_t names_method(jvmtiEnv *jvmti, jmethodID m, char *out, size_t len);
size_t names_class(const char *sig, char *out, size_t len);
void names_clear(void);

/* events.c: a session's events on env jvmti (capabilities, callbacks,
 * interval); the error text in err when they cannot be had. */
int events_start(jvmtiEnv *jvmti, uint64_t interval, bool live, char *err,
		 size_t errlen);
/* Turns them off and sets the interval back. A callback already
 * running may still queue its record; the session's end clears it. */
void events_stop(jvmtiEnv *jvmti);

uint64_t agent_now_ns(void);

#endif
