// SPDX-License-Identifier: MIT
/* Asking JVMs for their perf maps, off the sample path (see jvm.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "jvm.h"
#include "jvmstructs.h"
#include "jvmwalk.h"
#include "jvmattach.h"
#include "log.h"
#include "proc.h"

#define QUEUE_LEN 64		/* requests waiting; more are dropped */
#define FIRST_BACKOFF_MS 250
#define MAX_BACKOFF_MS 60000
#define ATTACH_TIMEOUT_MS 5000	/* for the listener, then the answer */
#define POLL_MS 20		/* between looks for a listener */
#define LAYOUT_TRIES 5		/* failed reads before the perf map */

static uint64_t mono_ms(void)
{
	return cpa_mono_ns() / CPA_NSEC_PER_MSEC;
}

struct jvm_job {
	uint32_t pid;
	bool ask_flags;		/* first request: -XX:+PreserveFramePointer? */
	bool layout;		/* read the vmStructs layout, attach to none */
};

struct jvm_result {
	uint32_t pid;
	int rc;
	bool layout;		/* the answer to a layout job */
	uint8_t fp;		/* enum jvm_fp */
	struct jvm_layout l;	/* of a layout job */
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
	bool no_layout;		/* CPA_UNWIND_NO_VMSTRUCTS: maps only */
	/* every JVM's code cache's: the sample thread's alone */
	struct jvm_code_stats code_st;
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
			(struct jvm_result){ .pid = pid, .rc = rc, .fp = fp };
	atomic_store(&a->have_results, true);
	pthread_cond_broadcast(&a->done);
	pthread_mutex_unlock(&a->lock);
}

/* A layout job: the JVM's tables read from its memory, nothing asked of
 * it. rc 0: read, its code cache set up; 1: not set up yet (a JVM still
 * starting: read again later); -1: no layout, or one without the code
 * cache (names only): its perf map is asked for instead. */
static void read_layout(struct jvm_attacher *a, uint32_t pid)
{
	struct jvm_result r = { .pid = pid, .layout = true };
	char mem[64], err[256];
	uint64_t t0 = mono_ms();
	snprintf(mem, sizeof(mem), "/proc/%u/mem", pid);
	int fd = open(mem, O_RDONLY | O_CLOEXEC);
	r.rc = jvm_layout_read(pid, fd, &r.l, err, sizeof(err)) < 0 ? -1
	       : r.l.code_ok					    ? 0
	       : r.l.code_described				    ? 1
									    : -1;
	if (fd >= 0)
		close(fd);
	r.fp = r.l.fp;
	if (r.rc < 0)
		cpa_debug("pid %u: no JVM layout: %s", pid,
			  r.l.ok ? "no code cache in its vmStructs" : err);
	else
		cpa_debug("pid %u: JDK %u layout read in %" PRIu64 " ms%s%s",
			  pid, r.l.major, mono_ms() - t0,
			  r.rc ? ", code cache not set up yet" : "",
			  r.l.non_safepoints == JVM_FP_NO
				  ? "; without -XX:+DebugNonSafepoints a "
				    "sample in inlined code takes the scope "
				    "of the next safepoint"
				  : "");
	pthread_mutex_lock(&a->lock);
	a->st.layouts += r.rc == 0;
	a->st.layout_failures += r.rc < 0;
	if (a->nresults < QUEUE_LEN)
		a->results[a->nresults++] = r;
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
	if (j->job.layout) {
		read_layout(a, j->job.pid);
		return false;
	}
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
	const char *nl = getenv("CPA_UNWIND_NO_VMSTRUCTS");
	a->no_layout = nl && *nl && strcmp(nl, "0");
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

/* Waits, under the lock, at most wait_ns from now for a result for pid. */
static bool wait_result(struct jvm_attacher *a, uint32_t pid, uint64_t wait_ns)
{
	/* from now: the sample may have spent its --load-wait on
	 * libjvm.so already */
	uint64_t from = cpa_mono_ns();
	uint64_t until = from + wait_ns;
	if (until < from)
		until = UINT64_MAX;
	struct timespec ts = cpa_timespec(until);
	bool arrived;
	while (!(arrived = has_result(a, pid)))
		if (pthread_cond_timedwait(&a->done, &a->lock, &ts))
			break;
	return arrived || has_result(a, pid);
}

bool jvm_prepare(struct jvm_attacher *a, struct proctab *procs,
		 struct proc *p, uint64_t now_ns, uint64_t wait_ns)
{
	struct jvm_proc *j = &p->jvm;
	j->now_ns = now_ns;
	if (j->code) {
		j->code->lookups_left = JVM_CODE_LOOKUPS;
		return true;
	}
	/* for tests: the perf map alone, as for a JVM without vmStructs */
	if (a && a->no_layout)
		j->layout_state = JVM_LAYOUT_FAILED;
	if (!a || j->layout_state == JVM_LAYOUT_FAILED || !jvm_is_jvm(p))
		return false;
	bool arrived = false;
	pthread_mutex_lock(&a->lock);
	if (j->layout_state == JVM_LAYOUT_NONE && now_ns >= j->layout_next_ns &&
	    a->qlen < QUEUE_LEN) {
		a->queue[(a->qhead + a->qlen++) % QUEUE_LEN] =
			(struct jvm_job){ .pid = p->pid, .layout = true };
		j->layout_state = JVM_LAYOUT_PENDING;
		j->layout_waited = false;
		pthread_cond_signal(&a->cond);
	}
	if (j->layout_state == JVM_LAYOUT_PENDING && !j->layout_waited) {
		j->layout_waited = true;
		arrived = wait_result(a, p->pid, wait_ns);
	}
	pthread_mutex_unlock(&a->lock);
	if (arrived)
		jvm_attacher_poll(a, procs, now_ns);
	return j->code != NULL;
}

bool jvm_map_missed(struct jvm_attacher *a, struct proc *p, uint64_t now_ns,
		    uint64_t wait_ns)
{
	struct jvm_proc *j = &p->jvm;
	/* a JVM whose code cache is read needs no map, nor one whose code
	 * cache is not set up yet: only one without a layout is asked */
	if (!a || j->code || j->layout_state != JVM_LAYOUT_FAILED ||
	    j->refused || (!j->pending && now_ns < j->next_ns) ||
	    !jvm_is_jvm(p))
		return false;
	bool arrived = false;
	pthread_mutex_lock(&a->lock);
	if (!j->pending && a->qlen < QUEUE_LEN) {
		a->queue[(a->qhead + a->qlen++) % QUEUE_LEN] =
			(struct jvm_job){ .pid = p->pid,
				    .ask_flags = j->fp == JVM_FP_UNKNOWN };
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
		arrived = wait_result(a, p->pid, wait_ns);
	}
	pthread_mutex_unlock(&a->lock);
	return arrived;
}

/* A layout read: names at once, the code cache when it is set up, else
 * read again later (a JVM still starting). */
static void apply_layout(struct jvm_attacher *a, struct jvm_proc *j,
			 const struct jvm_result *r, struct budget *budget,
			 uint64_t now_ns)
{
	if (r->l.ok)
		j->interp.layout = r->l;	/* names, at least */
	/* a JVM sampled as it starts may have its libjvm.so mapped but not
	 * yet relocated, its tables unreadable: read again before giving
	 * up on them for its perf map */
	if (r->rc < 0 && ++j->layout_fails >= LAYOUT_TRIES) {
		j->layout_state = JVM_LAYOUT_FAILED;
		return;
	}
	if (r->fp != JVM_FP_UNKNOWN)
		j->fp = r->fp;
	if (r->rc == 0) {
		j->layout_state = JVM_LAYOUT_DONE;
		j->layout_fails = 0;
		if (!j->code) {
			j->code = cpa_calloc(1, sizeof(*j->code));
			j->code->budget = budget;
			j->code->st = &a->code_st;
			j->code->lookups_left = JVM_CODE_LOOKUPS;
		}
		return;
	}
	j->layout_state = JVM_LAYOUT_NONE;
	j->layout_backoff_ms = j->layout_backoff_ms
				       ? j->layout_backoff_ms * 2
				       : FIRST_BACKOFF_MS;
	if (j->layout_backoff_ms > MAX_BACKOFF_MS)
		j->layout_backoff_ms = MAX_BACKOFF_MS;
	j->layout_next_ns = now_ns + (uint64_t)j->layout_backoff_ms * 1000000u;
}

void jvm_proc_free(struct jvm_proc *j)
{
	jvm_code_free(j->code);
	free(j->code);
	jvm_interp_free(&j->interp);
	memset(j, 0, sizeof(*j));
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
		if (res[i].layout) {
			apply_layout(a, j, &res[i], proctab_budget(procs),
				     now_ns);
			continue;
		}
		j->pending = false;
		if (res[i].rc == 0) {
			perfmap_recheck(&p->jit);
			if (res[i].fp != JVM_FP_UNKNOWN)
				j->fp = res[i].fp;
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
	st->code = a->code_st;
}

unsigned jvm_trusted_frames(struct proc *p, const uint64_t *ips, unsigned n,
			    uint64_t now_ns)
{
	if (p->jvm.fp == JVM_FP_NO && p->jvm.code) {
		/* the code cache says which frames are compiled */
		for (unsigned i = 0; i < n; i++) {
			uint64_t pc = i ? ips[i] - 1 : ips[i];
			const struct jvm_blob *b =
				jvm_in_code(p, pc)
					? jvm_blob_at(p->jvm.code,
						      &p->jvm.interp.layout,
						      jvm_memfd(p), pc, now_ns)
					: NULL;
			if (b && b->kind != JVM_BLOB_INTERP)
				return i + 1;
		}
		return n;
	}
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
