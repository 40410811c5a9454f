// SPDX-License-Identifier: MIT
/* Asking JVMs for their perf maps, off the sample path (see jvm.h). */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "jvm.h"
#include "jvmattach.h"
#include "log.h"
#include "proc.h"

#define QUEUE_LEN 64		/* requests waiting; more are dropped */
#define FIRST_BACKOFF_MS 250
#define MAX_BACKOFF_MS 60000
#define ATTACH_TIMEOUT_MS 5000	/* for the listener, then the answer */
#define POLL_MS 20		/* between looks for a listener */

static uint64_t mono_ms(void)
{
	return cpa_mono_ns() / CPA_NSEC_PER_MSEC;
}

struct jvm_job {
	uint32_t pid;
	bool ask_flags;		/* first request: -XX:+PreserveFramePointer? */
};

struct jvm_result {
	uint32_t pid;
	int rc;
	uint8_t fp;		/* enum jvm_fp */
	struct jvm_layout layout;	/* read with the first map */
};

struct jvm_active {
	struct jvm_job job;
	struct jvm_target t;
	bool opened;		/* t opened, listener triggered */
	uint64_t start_ms, deadline_ms;
};

struct jvm_attacher {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* the thread: a job is queued */
	pthread_cond_t done;	/* samples: a result is in */
	pthread_t thread;
	bool closing;		/* no more jobs: finish those under way */
	atomic_bool have_results;
	struct jvm_job queue[QUEUE_LEN];
	unsigned qhead, qlen;
	struct jvm_result results[QUEUE_LEN];
	unsigned nresults;
	struct jvm_stats st;
};

/* Whether compiled code keeps frame pointers: printflag answers
 * "-XX:+PreserveFramePointer" or "-XX:-PreserveFramePointer". */
static uint8_t ask_fp(struct jvm_attacher *a, struct jvm_target *t)
{
	static const char *const args[3] = { "PreserveFramePointer", NULL,
					     NULL };
	char err[256], out[256];
	if (jvm_attach_cmd(t, "printflag", args, ATTACH_TIMEOUT_MS, NULL,
			   out, sizeof(out), err, sizeof(err)) != 0)
		return JVM_FP_UNKNOWN;
	return strstr(out, "+PreserveFramePointer") ? JVM_FP_YES
	       : strstr(out, "-PreserveFramePointer") ? JVM_FP_NO
						       : JVM_FP_UNKNOWN;
}

/* The listener is up: the map, and the flag the first time. */
static int ask_map(struct jvm_attacher *a, struct jvm_active *j, uint8_t *fp,
		   char *err, size_t errlen)
{
	static const char *const args[3] = { "Compiler.perfmap", NULL, NULL };
	char out[512];
	int rc = jvm_attach_cmd(&j->t, "jcmd", args, ATTACH_TIMEOUT_MS,
				NULL, out, sizeof(out), err, errlen);
	if (rc > 0) {
		/* the JVM's own error (a JDK before 17 has no
		 * Compiler.perfmap): its first line */
		out[strcspn(out, "\n")] = '\0';
		snprintf(err, errlen, "jcmd Compiler.perfmap failed: %.160s",
			 out[0] ? out : "no message");
	}
	if (rc == 0 && j->job.ask_flags)
		*fp = ask_fp(a, &j->t);
	return rc;
}

static void finish(struct jvm_attacher *a, struct jvm_active *j, int rc,
		   uint8_t fp, const char *err)
{
	uint32_t pid = j->job.pid;
	struct jvm_layout layout = { 0 };
	char lerr[256];
	if (rc == 0 && j->job.ask_flags &&
	    jvm_layout_read(pid, &layout, lerr, sizeof(lerr)) < 0)
		cpa_debug("pid %u: interpreted Java frames stay unnamed: %s",
			  pid, lerr);
	jvm_target_close(&j->t);
	if (rc == 0)
		cpa_debug("pid %u: Java perf map written in %" PRIu64 " ms",
			  pid, mono_ms() - j->start_ms);
	else if (rc != JVM_ATTACH_CANCELLED)
		cpa_warn("pid %u: Java perf map: %s", pid, err);
	pthread_mutex_lock(&a->lock);
	a->st.maps += rc == 0;
	a->st.refused += rc > 0 || rc == JVM_ATTACH_REFUSED ||
			 rc == JVM_ATTACH_FAILED;
	a->st.gone += rc == JVM_ATTACH_GONE;
	if (a->nresults < QUEUE_LEN)
		a->results[a->nresults++] =
			(struct jvm_result){ pid, rc, fp, layout };
	atomic_store(&a->have_results, true);
	pthread_cond_broadcast(&a->done);
	pthread_mutex_unlock(&a->lock);
}

/*
 * One step of one attach; false when it is done. A JVM whose listener
 * is not up yet is only looked at again on the next pass, so one that
 * never answers (-XX:+DisableAttachMechanism) holds up no other.
 */
static bool step(struct jvm_attacher *a, struct jvm_active *j)
{
	char err[256] = "";
	uint8_t fp = JVM_FP_UNKNOWN;
	int rc;
	if (!j->opened) {
		j->opened = true;
		j->start_ms = mono_ms();
		rc = jvm_target_open(&j->t, j->job.pid, err, sizeof(err));
		if (rc == 0 && (rc = jvm_attach_listening(&j->t)) == 0) {
			rc = jvm_attach_trigger(&j->t, err, sizeof(err));
			j->deadline_ms = j->start_ms + ATTACH_TIMEOUT_MS;
			if (rc == 0)
				return true;
		}
	} else {
		rc = jvm_attach_wait(&j->t, j->deadline_ms, NULL, err,
				     sizeof(err));
		if (rc == 0)
			return true;
	}
	if (rc == 1)
		rc = ask_map(a, j, &fp, err, sizeof(err));
	finish(a, j, rc, fp, err);
	return false;
}

static void *attacher_main(void *arg)
{
	struct jvm_attacher *a = arg;
	struct jvm_active act[QUEUE_LEN];
	unsigned nact = 0;
	pthread_mutex_lock(&a->lock);
	while (!a->closing || a->qlen || nact) {
		while (a->qlen && nact < QUEUE_LEN) {
			act[nact++] = (struct jvm_active){
				.job = a->queue[a->qhead],
				.t = { .tmpfd = -1 },
			};
			a->qhead = (a->qhead + 1) % QUEUE_LEN;
			a->qlen--;
		}
		if (!nact) {
			if (!a->closing)
				pthread_cond_wait(&a->cond, &a->lock);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		for (unsigned i = 0; i < nact;)
			if (step(a, &act[i]))
				i++;
			else
				act[i] = act[--nact];
		pthread_mutex_lock(&a->lock);
		if (nact && !a->qlen) {
			/* listeners coming up: looked at every POLL_MS */
			struct timespec ts = cpa_timespec(cpa_mono_ns() +
							  POLL_MS * CPA_NSEC_PER_MSEC);
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
		}
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

struct jvm_attacher *jvm_attacher_new(void)
{
	struct jvm_attacher *a = cpa_calloc(1, sizeof(*a));
	pthread_condattr_t ca;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_cond_init(&a->done, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&a->thread, NULL, attacher_main, a)) {
		cpa_warn("no thread for Java attach: JIT frames of JVMs "
			 "without a perf map stay unnamed");
		pthread_mutex_destroy(&a->lock);
		pthread_cond_destroy(&a->cond);
		pthread_cond_destroy(&a->done);
		free(a);
		return NULL;
	}
	return a;
}

void jvm_attacher_free(struct jvm_attacher *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->closing = true;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	pthread_mutex_destroy(&a->lock);
	pthread_cond_destroy(&a->cond);
	pthread_cond_destroy(&a->done);
	free(a);
}

bool jvm_is_jvm(struct proc *p)
{
	if (p->jvm.kind != JVM_UNKNOWN && p->jvm.checked_nmaps == p->nmaps)
		return p->jvm.kind == JVM_YES;
	p->jvm.kind = JVM_NO;
	p->jvm.checked_nmaps = p->nmaps;
	for (uint32_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].base && !strcmp(p->maps[i].base, "libjvm.so")) {
			p->jvm.kind = JVM_YES;
			break;
		}
	return p->jvm.kind == JVM_YES;
}

/* Whether a result for pid is waiting; under the lock. */
static bool has_result(const struct jvm_attacher *a, uint32_t pid)
{
	for (unsigned i = 0; i < a->nresults; i++)
		if (a->results[i].pid == pid)
			return true;
	return false;
}

bool jvm_map_missed(struct jvm_attacher *a, struct proc *p, uint64_t now_ns,
		    uint64_t wait_ns)
{
	struct jvm_proc *j = &p->jvm;
	if (!a || j->refused || (!j->pending && now_ns < j->next_ns) ||
	    !jvm_is_jvm(p))
		return false;
	bool arrived = false;
	pthread_mutex_lock(&a->lock);
	if (!j->pending && a->qlen < QUEUE_LEN) {
		a->queue[(a->qhead + a->qlen++) % QUEUE_LEN] =
			(struct jvm_job){ p->pid, j->fp == JVM_FP_UNKNOWN };
		a->st.requests++;
		j->pending = true;
		j->waited = false;
		j->backoff_ms = j->backoff_ms ? j->backoff_ms * 2
					      : FIRST_BACKOFF_MS;
		if (j->backoff_ms > MAX_BACKOFF_MS)
			j->backoff_ms = MAX_BACKOFF_MS;
		pthread_cond_signal(&a->cond);
	}
	/* The samples that asked wait once for the answer, as long as
	 * they would for an object to load: the batch that shows a JVM
	 * first is named too. */
	if (j->pending && !j->waited) {
		j->waited = true;
		/* from now: the sample may have spent its --load-wait on
		 * libjvm.so already */
		uint64_t from = cpa_mono_ns();
		uint64_t until = from + wait_ns;
		if (until < from)
			until = UINT64_MAX;
		struct timespec ts = cpa_timespec(until);
		while (!(arrived = has_result(a, p->pid)))
			if (pthread_cond_timedwait(&a->done, &a->lock, &ts))
				break;
		arrived = arrived || has_result(a, p->pid);
	}
	pthread_mutex_unlock(&a->lock);
	return arrived;
}

void jvm_attacher_poll(struct jvm_attacher *a, struct proctab *procs,
		       uint64_t now_ns)
{
	if (!a || !atomic_load(&a->have_results))
		return;
	struct jvm_result res[QUEUE_LEN];
	pthread_mutex_lock(&a->lock);
	unsigned n = a->nresults;
	memcpy(res, a->results, n * sizeof(*res));
	a->nresults = 0;
	atomic_store(&a->have_results, false);
	pthread_mutex_unlock(&a->lock);

	for (unsigned i = 0; i < n; i++) {
		struct proc *p = proctab_find(procs, res[i].pid);
		if (!p)
			continue;	/* exited meanwhile */
		struct jvm_proc *j = &p->jvm;
		j->pending = false;
		if (res[i].rc == 0) {
			perfmap_recheck(&p->jit);
			if (res[i].fp != JVM_FP_UNKNOWN)
				j->fp = res[i].fp;
			if (res[i].layout.ok)
				j->interp.layout = res[i].layout;
			/* the backoff counts from the map, not the ask */
			j->next_ns = now_ns + (uint64_t)j->backoff_ms * 1000000u;
		} else if (res[i].rc != JVM_ATTACH_CANCELLED) {
			j->refused = true;
		}
	}
}

void jvm_attacher_stats(struct jvm_attacher *a, struct jvm_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	*st = a->st;
	pthread_mutex_unlock(&a->lock);
}

unsigned jvm_trusted_frames(struct proc *p, const uint64_t *ips, unsigned n,
			    uint64_t now_ns)
{
	if (p->jvm.fp != JVM_FP_NO ||
	    perfmap_refresh(&p->jit, p->pid, now_ns) < 0)
		return n;
	for (unsigned i = 0; i < n; i++) {
		/* a return address points past its call */
		long k = symtab_lookup(&p->jit.syms, i ? ips[i] - 1 : ips[i]);
		if (k < 0)
			continue;
		const char *name = symtab_name(&p->jit.syms, k), *m;
		if (jvm_method_name(name, strlen(name), &m) && m != name)
			return i + 1;
	}
	return n;
}

size_t jvm_method_name(const char *raw, size_t len, const char **start)
{
	*start = raw;
	const char *paren = memchr(raw, '(', len);
	if (!paren || raw[len - 1] != ')')
		return len;
	const char *s = paren;
	while (s > raw && s[-1] != ' ')
		s--;
	/* "RET pkg.Cls.m": a return type, then a qualified name */
	if (s == raw || s == paren || !memchr(s, '.', (size_t)(paren - s)))
		return len;
	*start = s;
	return (size_t)(paren - s);
}
