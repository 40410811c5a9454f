// SPDX-License-Identifier: MIT
/*
 * A session's JVMTI events. SampledObjectAlloc runs on the allocating
 * Java thread, about once per interval bytes that thread allocates: it
 * reads the thread's Java stack and names it (names.c), tags the object
 * with its id and size when live objects are asked for, and queues one
 * record. ObjectFree comes for a tagged object the collector freed, with
 * only its tag, which is all the free record needs.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "jvmagent.h"

/* The JVM's own default: sampling falls back to it when a session ends. */
#define DEFAULT_INTERVAL (512 * 1024)

static atomic_bool active;
static bool live;
static atomic_uint_fast64_t seq;

uint64_t agent_now_ns(void)
{
	return cpa_mono_ns();
}

/* A record is built on the Java thread's stack, where a few frames fit;
 * a deeper one moves to the heap. */
#define SMALL_RECORD 4096

struct record {
	uint8_t *p;
	size_t at;
	uint8_t *heap;	/* p, once moved; freed by the caller */
	uint8_t small[SMALL_RECORD];
};

/* Appends one frame, its length first; false when the record is full. */
static bool put_frame(struct record *r, const char *name, size_t n)
{
	uint16_t len = (uint16_t)(n > JVMAGENT_NAME_MAX ? JVMAGENT_NAME_MAX : n);

	if (!len || r->at + 2 + len > JVMAGENT_RECORD_MAX)
		return false;
	if (!r->heap && r->at + 2 + len > SMALL_RECORD) {
		r->heap = malloc(JVMAGENT_RECORD_MAX);
		if (!r->heap)
			return false;
		memcpy(r->heap, r->small, r->at);
		r->p = r->heap;
	}
	memcpy(r->p + r->at, &len, 2);
	memcpy(r->p + r->at + 2, name, len);
	r->at += 2u + len;
	return true;
}

static _Thread_local struct {
	uint32_t tid;
	char name[16];
} me;

static void JNICALL on_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread,
			     jobject object, jclass klass, jlong size)
{
	jvmtiFrameInfo frames[JVMAGENT_MAX_FRAMES];
	char name[JVMAGENT_NAME_MAX + 1], *sig = NULL;
	struct jvmagent_alloc a;
	struct record rec;
	size_t n;
	jint depth = 0;
	uint16_t nframes = 0;

	(void)jni;
	if (!atomic_load(&active))
		return;
	rec.p = rec.small;
	rec.at = sizeof(a);
	rec.heap = NULL;
	memset(&a, 0, sizeof(a));
	a.time_ns = agent_now_ns();
	a.size = (uint64_t)size;
	/* system calls cost as much as the rest of a sample: the thread's
	 * id and name are asked once (a later rename is not seen) */
	if (!me.tid) {
		me.tid = (uint32_t)gettid();
		prctl(PR_GET_NAME, me.name);
	}
	a.tid = me.tid;
	memcpy(a.thread, me.name, sizeof(a.thread));
	a.cpu = (uint32_t)sched_getcpu();

	/* the leaf frame is the class of the object */
	if ((*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) ==
	    JVMTI_ERROR_NONE) {
		n = names_class(sig, name, sizeof(name));
		(*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
	} else {
		n = (size_t)snprintf(name, sizeof(name), "[unknown class]");
	}
	if (put_frame(&rec, name, n))
		nframes++;
	if ((*jvmti)->GetStackTrace(jvmti, thread, 0, JVMAGENT_MAX_FRAMES,
				    frames, &depth) != JVMTI_ERROR_NONE)
		depth = 0;
	for (jint i = 0; i < depth; i++) {
		n = names_method(jvmti, frames[i].method, name, sizeof(name));
		if (!put_frame(&rec, name, n))
			break;
		nframes++;
	}

	if (live) {
		uint64_t s = atomic_fetch_add(&seq, 1) + 1;
		jlong tag = (jlong)((s << JVMAGENT_TAG_SIZE_BITS) |
				    JVMAGENT_TAG_SIZE((uint64_t)size));
		/* an object too large for the tag's size is not tracked */
		if ((uint64_t)size == JVMAGENT_TAG_SIZE((uint64_t)size) &&
		    (*jvmti)->SetTag(jvmti, object, tag) == JVMTI_ERROR_NONE)
			a.tag = (uint64_t)tag;
	}
	a.h.len = (uint32_t)rec.at;
	a.h.type = JVMAGENT_ALLOC;
	a.h.n = nframes;
	memcpy(rec.p, &a, sizeof(a));
	queue_push(rec.p, rec.at);
	free(rec.heap);
}

static void JNICALL on_free(jvmtiEnv *jvmti, jlong tag)
{
	struct jvmagent_free f = {
		.h = { .len = sizeof(f), .type = JVMAGENT_FREE },
		.time_ns = agent_now_ns(),
		.tag = (uint64_t)tag,
	};

	(void)jvmti;
	queue_push(&f, sizeof(f));
}

int events_start(jvmtiEnv *jvmti, uint64_t interval, bool want_live,
		 char *err, size_t errlen)
{
	jvmtiCapabilities caps;
	jvmtiEventCallbacks cb;
	jvmtiError e;

	memset(&caps, 0, sizeof(caps));
	caps.can_generate_sampled_object_alloc_events = 1;
	if (want_live) {
		caps.can_tag_objects = 1;
		caps.can_generate_object_free_events = 1;
	}
	e = (*jvmti)->AddCapabilities(jvmti, &caps);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "AddCapabilities: JVMTI error %d", e);
		return -1;
	}
	memset(&cb, 0, sizeof(cb));
	cb.SampledObjectAlloc = on_alloc;
	cb.ObjectFree = on_free;
	live = want_live;
	(*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof(cb));
	e = (*jvmti)->SetHeapSamplingInterval(jvmti, (jint)interval);
	if (e == JVMTI_ERROR_NONE)
		e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
			JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
	if (e == JVMTI_ERROR_NONE && want_live)
		e = (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
			JVMTI_EVENT_OBJECT_FREE, NULL);
	if (e != JVMTI_ERROR_NONE) {
		snprintf(err, errlen, "enabling the events: JVMTI error %d", e);
		events_stop(jvmti);
		return -1;
	}
	atomic_store(&active, true);
	return 0;
}

void events_stop(jvmtiEnv *jvmti)
{
	atomic_store(&active, false);
	(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE,
		JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
	(*jvmti)->SetEventNotificationMode(jvmti, JVMTI_DISABLE,
		JVMTI_EVENT_OBJECT_FREE, NULL);
	(*jvmti)->SetHeapSamplingInterval(jvmti, DEFAULT_INTERVAL);
}
