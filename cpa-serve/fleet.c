/* SPDX-License-Identifier: MIT */
/*
 * One thread per active job, detached, on a small stack; a shared
 * condition variable wakes them (a stop, the shutdown). The decision on
 * an answer is decide(), the contract's two tables in its order.
 */
#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <json-c/json.h>

#include "clock.h"
#include "fleet.h"
#include "jobs.h"
#include "log.h"
#include "nodeapi.h"
#include "nodes.h"
#include "results.h"

/* durations in signed ns: a deadline may be in the past */
#define SEC ((int64_t)CPA_NSEC_PER_SEC)

static struct fleet_config cfg;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;	/* on CLOCK_MONOTONIC: fleet_init */
static pthread_cond_t gone = PTHREAD_COND_INITIALIZER;
static unsigned running, generation;
static bool stopping;

void fleet_init(const struct fleet_config *c)
{
	pthread_condattr_t ca;

	cfg = *c;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wake, &ca);
	pthread_condattr_destroy(&ca);
}

const struct fleet_config *fleet_config(void)
{
	return &cfg;
}

void fleet_wake(void)
{
	pthread_mutex_lock(&lock);
	generation++;
	pthread_cond_broadcast(&wake);
	pthread_mutex_unlock(&lock);
}

void fleet_stop(void)
{
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_broadcast(&wake);
	while (running)
		pthread_cond_wait(&gone, &lock);
	pthread_mutex_unlock(&lock);
}

/* Sleeps until ns (monotonic) or a wake; false when shutting down. */
static bool sleep_until(int64_t mono_ns)
{
	struct timespec ts = cpa_timespec((uint64_t)mono_ns);
	unsigned gen;

	pthread_mutex_lock(&lock);
	gen = generation;
	while (!stopping && gen == generation &&
	       pthread_cond_timedwait(&wake, &lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&lock);
	return !stopping;
}

/* The node start request of a job (§13.3). */
static char *start_body(const struct job *j)
{
	const struct job_spec *s = &j->spec;
	json_object *o = json_object_new_object(), *sp = json_object_new_object();
	char *text;

	json_object_object_add(o, "request_id", json_object_new_string(j->id));
	json_object_object_add(o, "duration_seconds",
			       json_object_new_int64((int64_t)s->duration_s));
	json_object_object_add(o, "scope",
			       json_object_new_string(scope_names[s->scope]));
	if (s->scope == SCOPE_CONTAINER)
		json_object_object_add(o, "container_id",
				       json_object_new_string(s->container_id));
	if (s->scope == SCOPE_PID)
		json_object_object_add(o, "pid", json_object_new_int64(s->pid));
	json_object_object_add(o, "kind", json_object_new_string("profiling"));
	json_object_object_add(sp, "type", json_object_new_string(
		job_modes[s->mode].type));
	json_object_object_add(sp, "language",
			       json_object_new_string(lang_names[s->lang]));
	json_object_object_add(sp, "mode", json_object_new_string(
		job_modes[s->mode].mode));
	if (s->binary_match_path[0])
		json_object_object_add(sp, "binary_match_path",
				       json_object_new_string(
					       s->binary_match_path));
	json_object_object_add(o, "spec", sp);
	text = cpa_strdup(json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

/* With the jobs' lock: the job ends failed, in one log line. */
static void fail(struct job *j, const char *reason, const char *message)
{
	cpa_err("job %s on %s: failed: %s: %s", j->id, j->spec.hostname,
		reason, message);
	jobs_end_locked(j, OUT_FAILED, reason, message);
	jobs_save_locked(j);
}

static void to_stopping(struct job *j, const char *why, int64_t now)
{
	j->status = JOB_STOPPING;
	snprintf(j->remote.stop_reason, sizeof(j->remote.stop_reason), "%s",
		 why);
	j->remote.stop_deadline = now + (int64_t)cfg.stop_s * SEC;
	jobs_save_locked(j);
}

static bool past(int64_t deadline, int64_t now)
{
	return deadline && now > deadline;
}

/* A node's failed outcome or error code, as a Job's reason. */
static const char *job_reason(const char *node)
{
	static const char *const start[] = {
		"execution_start_failed", "launch_timeout",
		"execution_environment_unsupported", "service_not_implemented",
		NULL };
	static const char *const exec[] = {
		"execution_failed", "execution_stop_failed",
		"finalization_failed", "finalization_timeout", NULL };

	for (int i = 0; start[i]; i++)
		if (!strcmp(node, start[i]))
			return "execution_start_failed";
	for (int i = 0; exec[i]; i++)
		if (!strcmp(node, exec[i]))
			return "execution_failed";
	return NULL;
}

static void on_terminal(struct job *j, const struct node_answer *a)
{
	const char *r;

	if (!strcmp(a->outcome, "completed")) {
		cpa_debug("job %s on %s: completed", j->id, j->spec.hostname);
		jobs_end_locked(j, OUT_COMPLETED, NULL, NULL);
		j->published = true;	/* the node publishes before it says so */
		jobs_save_locked(j);
	} else if (!strcmp(a->outcome, "failed")) {
		r = a->reason[0] ? job_reason(a->reason) : NULL;
		if (r && (!strcmp(a->reason, "execution_start_failed") ||
			  !strcmp(a->reason, "launch_timeout") ||
			  !strcmp(r, "execution_failed")))
			fail(j, r, a->message[0] ? a->message : a->reason);
		else
			fail(j, "protocol_error", a->reason[0]
			     ? "the node failed the Operation with an unknown "
			       "reason" : "the node failed the Operation "
			       "without a reason");
	} else if (!strcmp(a->outcome, "stopped")) {
		const char *why = j->remote.stop_reason;

		if (!strcmp(why, "user")) {
			jobs_end_locked(j, OUT_STOPPED, NULL, NULL);
			jobs_save_locked(j);
		} else if (!strcmp(why, "start_timeout"))
			fail(j, "start_timeout", "the Operation did not start "
			     "before the pending deadline; it was stopped");
		else if (!strcmp(why, "execution_timeout"))
			fail(j, "execution_timed_out", "the Operation ran past "
			     "its execution deadline; it was stopped");
		else
			fail(j, "execution_failed", "the node stopped the "
			     "Operation unasked");
	} else {
		fail(j, "protocol_error", "an unknown Operation outcome");
	}
}

static void on_snapshot(struct job *j, const struct node_answer *a,
			int64_t now)
{
	const char *s = a->status;

	if (!strcmp(s, "terminal")) {
		on_terminal(j, a);
	} else if (!strcmp(s, "pending")) {
		if (j->status == JOB_RUNNING)
			fail(j, "protocol_error", "the Operation regressed from "
			     "running to pending");
		else if (j->status == JOB_PENDING &&
			 past(j->remote.pending_deadline, now))
			to_stopping(j, "start_timeout", now);
		else if (j->status == JOB_STOPPING &&
			 past(j->remote.stop_deadline, now))
			fail(j, "stop_timeout", "the Operation did not stop "
			     "before the stop deadline");
	} else if (!strcmp(s, "running")) {
		if (j->status == JOB_PENDING) {
			j->status = JOB_RUNNING;
			j->started = jobs_now_ns();
			j->remote.exec_deadline = now + ((int64_t)j->spec.duration_s
						 + cfg.grace_s) * SEC;
			jobs_save_locked(j);
		} else if (j->status == JOB_RUNNING &&
			   past(j->remote.exec_deadline, now)) {
			to_stopping(j, "execution_timeout", now);
		} else if (j->status == JOB_STOPPING &&
			   past(j->remote.stop_deadline, now)) {
			fail(j, "stop_timeout", "the Operation did not stop "
			     "before the stop deadline");
		}
	} else if (!strcmp(s, "stopping")) {
		if (j->status != JOB_STOPPING)
			fail(j, "protocol_error", "the node is stopping an "
			     "Operation the Job did not stop");
		else if (past(j->remote.stop_deadline, now))
			fail(j, "stop_timeout", "the Operation did not stop "
			     "before the stop deadline");
	}
}

/* A node that did not answer well: 0 while within the node-unavailable
 * window. */
static void unavailable(struct job *j, const char *what, int64_t *since,
			int64_t now)
{
	if (!*since) {
		*since = now;
		cpa_debug("job %s on %s: %s", j->id, j->spec.hostname, what);
		return;
	}
	if (now - *since >= (int64_t)cfg.unavailable_s * SEC)
		fail(j, "node_unavailable", what);
}

static void on_error(struct job *j, const struct node_answer *a,
		     int64_t *since, int64_t now)
{
	const char *c = a->code, *r;
	char msg[300];

	if (!strcmp(c, "operation_not_found")) {
		if (j->started)
			fail(j, "operation_lost", "Node no longer has the "
			     "previously observed Operation");
		else {
			cpa_err("job %s on %s: unknown: the node has no such "
				"Operation", j->id, j->spec.hostname);
			jobs_end_locked(j, OUT_UNKNOWN, NULL, NULL);
			jobs_save_locked(j);
		}
	} else if (!strcmp(c, "invalid_request") ||
		   !strcmp(c, "request_id_conflict")) {
		fail(j, "invalid_node_request", a->message);
	} else if (!strcmp(c, "internal_error") ||
		   !strcmp(c, "service_unavailable")) {
		snprintf(msg, sizeof(msg), "%.40s: %.200s", c, a->message);
		unavailable(j, msg, since, now);
	} else if (!strcmp(c, "operation_limit_exceeded")) {
		fail(j, "execution_capacity_exceeded", a->message);
	} else if ((r = job_reason(c))) {
		fail(j, r, a->message);
	} else {
		snprintf(msg, sizeof(msg), "the node answered %.40s: %.200s", c,
			 a->message);
		fail(j, "protocol_error", msg);
	}
}

struct watch_arg {
	char id[SPEC_ID_MAX + 1];
	bool recovered;
};

static void *watch(void *p)
{
	struct watch_arg w = *(struct watch_arg *)p;
	int64_t since = 0;	/* node failing since (monotonic ns) */
	bool acked = false;	/* a snapshot since this supervisor began */
	bool stop_acked = false;	/* the node took the stop */

	free(p);
	if (w.recovered) {
		uint32_t r = 0;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = 0;
		sleep_until((int64_t)cpa_mono_ns() +
			    (int64_t)(r % (cfg.poll_ms ? cfg.poll_ms : 1)) *
				    (int64_t)CPA_NSEC_PER_MSEC);
	}
	while (!__atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
		struct node_answer a;
		struct node_addr addr;
		enum node_call call;
		struct job *j, copy;
		char *body = NULL;
		int64_t now = jobs_now_ns(), next;

		jobs_lock();
		j = jobs_find_locked(w.id);
		if (!j || !job_active(j)) {
			jobs_unlock();
			break;
		}
		if (j->status == JOB_PENDING && !acked) {
			/* persisted before the node is asked */
			if (!j->remote.start_sent) {
				j->remote.start_sent = true;
				j->remote.pending_deadline =
					now + (int64_t)cfg.pending_s * SEC;
				jobs_save_locked(j);
			}
			call = NODE_START;
			body = start_body(j);
		} else {
			/* a stop is sent until the node takes it, and again
			 * while the node shows the Operation running */
			call = j->status == JOB_STOPPING && !stop_acked
			       ? NODE_STOP : NODE_GET;
		}
		copy = *j;
		jobs_unlock();

		if (nodes_find(copy.spec.hostname, &addr)) {
			memset(&a, 0, sizeof(a));
			a.kind = NODE_ERROR;
			snprintf(a.code, sizeof(a.code), "invalid_request");
			snprintf(a.message, sizeof(a.message), "hostname "
				 "\"%.200s\" is not a node of --nodes",
				 copy.spec.hostname);
		} else {
			node_call(&addr, cfg.node_token, call, copy.id, body,
				  (int)cfg.call_ms, &a);
		}
		free(body);

		now = jobs_now_ns();
		jobs_lock();
		j = jobs_find_locked(w.id);
		if (!j || !job_active(j)) {
			jobs_unlock();
			break;
		}
		switch (a.kind) {
		case NODE_SNAPSHOT:
			since = 0;
			acked = true;
			if (call == NODE_STOP)
				stop_acked = true;
			if (!strcmp(a.status, "pending") ||
			    !strcmp(a.status, "running"))
				stop_acked = false;
			on_snapshot(j, &a, now);
			break;
		case NODE_ERROR:
			on_error(j, &a, &since, now);
			break;
		case NODE_PROTOCOL:
			fail(j, "protocol_error", a.message);
			break;
		case NODE_TRANSPORT:
			unavailable(j, a.message, &since, now);
			break;
		}
		/* the next pass: the poll interval, or sooner at the next
		 * deadline (or at once after a move to stopping) */
		next = now + (int64_t)cfg.poll_ms * 1000000;
		if (j->status == JOB_STOPPING && copy.status != JOB_STOPPING)
			next = now;
		{
			int64_t d = j->status == JOB_PENDING
				    ? j->remote.pending_deadline
				    : j->status == JOB_RUNNING
				    ? j->remote.exec_deadline
				    : j->remote.stop_deadline;

			if (d && d + 1000000 < next)
				next = d + 1000000;
		}
		bool active = job_active(j);

		jobs_unlock();
		if (!active)
			break;
		if (next > now &&
		    !sleep_until((int64_t)cpa_mono_ns() + (next - now)))
			break;
	}
	pthread_mutex_lock(&lock);
	running--;
	pthread_cond_broadcast(&gone);
	pthread_mutex_unlock(&lock);
	return NULL;
}

void fleet_watch(const char *id, bool recovered)
{
	struct watch_arg *w = cpa_calloc(1, sizeof(*w));
	pthread_attr_t at;
	pthread_t t;

	snprintf(w->id, sizeof(w->id), "%s", id);
	w->recovered = recovered;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&lock);
	running++;
	pthread_mutex_unlock(&lock);
	if (pthread_create(&t, &at, watch, w)) {
		cpa_err("job %s: cannot start its supervisor: %s", id,
			strerror(errno));
		free(w);
		pthread_mutex_lock(&lock);
		running--;
		pthread_mutex_unlock(&lock);
	}
	pthread_attr_destroy(&at);
}
