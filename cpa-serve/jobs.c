/* SPDX-License-Identifier: MIT */
/*
 * Jobs from request to result, HUATUO's way. A job is pending from its
 * creation until the launcher reports its processes started, running
 * then, stopping after a stop request or its deadline, and terminal at
 * last with an outcome: completed (its windows published), stopped (a
 * client stopped it; cpa's own formats keep what it captured, raw does
 * not), failed with a reason (execution_start_failed: its capture could
 * not start; execution_failed: a stage failed, or its results could not
 * be made; execution_timed_out: it ran past its duration's grace;
 * operation_lost: cpa-serve restarted meanwhile, its windows kept).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "errors.h"
#include "fleet.h"
#include "jobs.h"
#include "log.h"
#include "nodes.h"
#include "publish.h"
#include "quotas.h"
#include "results.h"
#include "state.h"
#include "targets.h"
#include "windows.h"

const char *const job_status_names[N_JOB_STATUS] = {
	"pending", "running", "stopping", "terminal",
};
const char *const outcome_names[N_OUTCOMES] = {
	"", "completed", "failed", "stopped", "unknown",
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct job **jobs;
static size_t n_jobs, cap_jobs;
static int launcher = -1;
static bool closing;
static struct serve_limits limits;
static char hostname[256];

int64_t jobs_now_ns(void)
{
	return (int64_t)cpa_now_ns();
}

void jobs_time(int64_t ns, char *out, size_t outlen)
{
	time_t t = (time_t)(ns / 1000000000);
	long frac = (long)(ns % 1000000000);
	char date[32], digits[16];
	struct tm tm;
	int n = 9;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(digits, sizeof(digits), "%09ld", frac);
	while (n > 0 && digits[n - 1] == '0')
		n--;
	if (n)
		snprintf(out, outlen, "%s.%.*sZ", date, n, digits);
	else
		snprintf(out, outlen, "%sZ", date);
}

static void put_time(json_object *o, const char *key, int64_t ns)
{
	char buf[48];

	if (!ns)
		return;		/* omitted, not null */
	jobs_time(ns, buf, sizeof(buf));
	json_object_object_add(o, key, json_object_new_string(buf));
}

static void put_str(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

static json_object *terminal_json(const char *outcome, const char *reason,
				  const char *message)
{
	json_object *t = json_object_new_object();

	put_str(t, "outcome", outcome);
	if (reason && reason[0]) {
		put_str(t, "reason", reason);
		put_str(t, "message", message && message[0] ? message : reason);
	}
	return t;
}

/* A Dashboard link, as HUATUO's apiserver makes it (§4.4 of the
 * contract), or NULL. */
static json_object *result_url(const struct job *j)
{
	static const char *const slugs[2][2][2] = {
		{ { "host-cpu-profiling", "e5aebf-e4b8bb-e69cba-cpu-profiling" },
		  { "host-memory-profiling",
		    "e5aebf-e4b8bb-e69cba-memory-profiling" } },
		{ { "container-cpu-profiling", "e5aeb9-e599a8-cpu-profiling" },
		  { "container-memory-profiling",
		    "e5aeb9-e599a8-memory-profiling" } },
	};
	char from[48], to[48], url[2048];
	bool cont = j->spec.scope == SCOPE_CONTAINER;
	bool mem = !strcmp(job_modes[j->spec.mode].type, "memory");
	size_t base;
	time_t t;
	struct tm tm;

	if (!limits.dashboard || !j->published || !j->ended)
		return NULL;
	for (int k = 0; k < 2; k++) {
		int64_t ns = k ? j->ended : j->created;
		char *out = k ? to : from, date[32];

		t = (time_t)(ns / 1000000000);
		gmtime_r(&t, &tm);
		strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(out, sizeof(from), "%s.%03dZ", date,
			 (int)(ns / 1000000 % 1000));
	}
	base = strlen(limits.dashboard);
	while (base && limits.dashboard[base - 1] == '/')
		base--;
	/* the query's keys in sorted order */
	snprintf(url, sizeof(url), "%.*s/%s/%s?from=%s&orgId=1&timezone=browser"
		 "&to=%s&%s=%s&var-tracer_id=%s", (int)base, limits.dashboard,
		 slugs[cont][mem][0], slugs[cont][mem][1], from, to,
		 cont ? "var-container_id" : "var-hostname",
		 cont ? j->spec.container_id : j->spec.hostname, j->id);
	return json_object_new_string(url);
}

/* The Job, as the profiling API shows it. */
static json_object *job_json(const struct job *j, bool with_url)
{
	const struct job_spec *s = &j->spec;
	json_object *o = json_object_new_object(), *url;

	put_str(o, "request_id", j->id);
	put_str(o, "hostname", s->hostname);
	json_object_object_add(o, "duration_seconds",
			       json_object_new_int64((int64_t)s->duration_s));
	put_str(o, "scope", scope_names[s->scope]);
	if (s->scope == SCOPE_CONTAINER)
		put_str(o, "container_id", s->container_id);
	if (s->scope == SCOPE_PID)	/* cpa's extension */
		json_object_object_add(o, "pid", json_object_new_int64(s->pid));
	put_str(o, "type", job_modes[s->mode].type);
	put_str(o, "language", lang_names[s->lang]);
	put_str(o, "mode", job_modes[s->mode].mode);
	if (s->binary_match_path[0])
		put_str(o, "binary_match_path", s->binary_match_path);
	if (s->has_freq)
		json_object_object_add(o, "freq", json_object_new_int64(s->freq));
	put_str(o, "status", job_status_names[j->status]);
	if (j->status == JOB_TERMINAL)
		json_object_object_add(o, "terminal", terminal_json(
			outcome_names[j->outcome], j->reason, j->message));
	put_time(o, "created_at", j->created);
	put_time(o, "updated_at", j->updated);
	put_time(o, "started_at", j->started);
	put_time(o, "ended_at", j->ended);
	if (with_url && (url = result_url(j)))
		json_object_object_add(o, "result_url", url);
	return o;
}

/* A node's reasons are fewer than a Job's: a deadline or a lost server
 * is an execution that failed. */
static const char *node_reason(const struct job *j)
{
	if (!strcmp(j->reason, "execution_start_failed") ||
	    !strcmp(j->reason, "finalization_failed"))
		return j->reason;
	return "execution_failed";
}

/* The Operation, as the node API shows it. */
static json_object *op_json(const struct job *j)
{
	json_object *o = json_object_new_object();

	put_str(o, "request_id", j->id);
	put_str(o, "kind", "profiling");
	put_str(o, "status", job_status_names[j->status]);
	if (j->status == JOB_TERMINAL) {
		/* a node never says unknown */
		bool failed = j->outcome == OUT_FAILED;

		json_object_object_add(o, "terminal", terminal_json(
			j->outcome == OUT_STOPPED ? "stopped" : failed
			? "failed" : "completed",
			failed ? node_reason(j) : NULL, j->message));
	}
	put_time(o, "created_at", j->created);
	put_time(o, "started_at", j->started);
	put_time(o, "finished_at", j->ended);
	return o;
}

static int reply(json_object **out, json_object *data, int code)
{
	*out = api_data(data);
	return code;
}

static int fail(json_object **out, const char *code, const char *message)
{
	*out = api_error(code, message);
	return api_status(code);
}

static struct job *find(const char *id)
{
	for (size_t i = 0; i < n_jobs; i++)
		if (!strcmp(jobs[i]->id, id))
			return jobs[i];
	return NULL;
}

static void add(struct job *j)
{
	CPA_GROW(jobs, cap_jobs, n_jobs + 1);
	jobs[n_jobs++] = j;
}

/* Every change is a save; a save that fails is logged (the spare makes
 * that a disk error, not a full disk). */
static void save(struct job *j)
{
	char err[300];

	j->updated = jobs_now_ns();
	if (state_save(j, err, sizeof(err)))
		cpa_err("job %s: record not written: %s", j->id, err);
}

static void end(struct job *j, enum job_outcome outcome, const char *reason,
		const char *message)
{
	j->status = JOB_TERMINAL;
	j->outcome = outcome;
	snprintf(j->reason, sizeof(j->reason), "%s", reason ? reason : "");
	snprintf(j->message, sizeof(j->message), "%.255s",
		 message ? message : "");
	j->ended = jobs_now_ns();
}

void jobs_lock(void)
{
	pthread_mutex_lock(&lock);
}

void jobs_unlock(void)
{
	pthread_mutex_unlock(&lock);
}

struct job *jobs_find_locked(const char *id)
{
	return find(id);
}

void jobs_save_locked(struct job *j)
{
	save(j);
}

void jobs_end_locked(struct job *j, enum job_outcome outcome,
		     const char *reason, const char *message)
{
	end(j, outcome, reason, message);
}

/* Whether the pipeline that wrote the job's stream is gone: it holds
 * the lock launch() took, until its last stage exits. The previous
 * server's launcher stops its captures within 5 s of that server's end. */
static bool stream_released(const char *dir)
{
	char path[4400];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, RESULT_STREAM);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	for (int t = 0; t < 150; t++) {
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			close(fd);
			return true;
		}
		usleep(100 * 1000);
	}
	close(fd);
	return false;
}

/* A job the previous server left active lost its pipeline with it; what
 * the pipeline wrote until then is kept for cpa's own formats. */
static void load_one(struct job *loaded, void *arg)
{
	struct job *j = cpa_malloc(sizeof(*j));
	char dir[4300], why[200] = "", msg[512];

	(void)arg;
	*j = *loaded;
	if (job_active(j) && limits.fleet) {
		/* its Operation outlived the apiserver: supervised again */
		j->bytes = state_job_bytes(j->id);
		add(j);
		return;
	}
	if (job_active(j)) {
		state_job_dir(j->id, dir, sizeof(dir));
		if (!stream_released(dir))
			snprintf(why, sizeof(why), "its stream is missing or "
				 "still written");
		else if (results_render(dir, &limits.child, why,
					sizeof(why)) == 0)
			j->has_result = true;
		/* why cut to what the job's message has room for */
		snprintf(msg, sizeof(msg), "cpa-serve restarted while the job "
			 "was %s%s%.150s", job_status_names[loaded->status],
			 j->has_result ? "; the windows captured until then are "
					 "kept" : why[0] ? ": " : "", why);
		end(j, OUT_FAILED, "operation_lost", msg);
		save(j);
	}
	j->bytes = state_job_bytes(j->id);
	add(j);
}

int jobs_init(const char *state_dir, int launcher_sock,
	      const struct serve_limits *lim, char *err, size_t errlen)
{
	if (state_open(state_dir, err, errlen))
		return -1;
	if (lim->hostname)
		snprintf(hostname, sizeof(hostname), "%s", lim->hostname);
	else if (gethostname(hostname, sizeof(hostname) - 1))
		return cpa_fail_errno(err, errlen, errno, "gethostname");
	launcher = launcher_sock;
	limits = *lim;
	state_load(load_one, NULL);
	for (size_t i = 0; limits.fleet && i < n_jobs; i++)
		if (job_active(jobs[i]))
			fleet_watch(jobs[i]->id, true);
	return 0;
}

void jobs_free(void)
{
	for (size_t i = 0; i < n_jobs; i++)
		free(jobs[i]);
	free(jobs);
	jobs = NULL;
	n_jobs = cap_jobs = 0;
}

void jobs_close(void)
{
	pthread_mutex_lock(&lock);
	closing = true;
	pthread_mutex_unlock(&lock);
}

unsigned jobs_active(void)
{
	unsigned n = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_jobs; i++)
		n += job_active(jobs[i]);
	pthread_mutex_unlock(&lock);
	return n;
}

/* "id-" and a random UUID version 4, as HUATUO's apiserver makes them. */
static void new_id(char *id, size_t len)
{
	unsigned char r[16];

	do {
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			cpa_die("getrandom: %s", strerror(errno));
		r[6] = (r[6] & 0x0f) | 0x40;
		r[8] = (r[8] & 0x3f) | 0x80;
		snprintf(id, len, "id-%02x%02x%02x%02x-%02x%02x-%02x%02x-"
			 "%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2],
			 r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
			 r[12], r[13], r[14], r[15]);
	} while (find(id));
}

static int open_in(const char *dir, const char *name, int flags)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, flags | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
}

/* With the lock held, the record written: the job goes to the launcher,
 * and is running once the launcher says its processes are. */
static void launch(struct job *j)
{
	struct launch_msg m;
	char dir[4300];
	int out, log;

	state_job_dir(j->id, dir, sizeof(dir));
	out = open_in(dir, RESULT_STREAM, O_WRONLY);
	log = open_in(dir, RESULT_LOG, O_WRONLY | O_APPEND);
	/* held by the pipeline's stages through the descriptor they share,
	 * so a server started after this one knows when they are done */
	if (out >= 0)
		flock(out, LOCK_EX | LOCK_NB);
	memset(&m, 0, sizeof(m));
	m.op = LAUNCH_START;
	snprintf(m.id, sizeof(m.id), "%s", j->id);
	m.spec = j->spec;
	if (out < 0 || log < 0 || launcher_send(launcher, &m, out, log)) {
		end(j, OUT_FAILED, "execution_start_failed",
		    out < 0 || log < 0 ? "cannot create the job's files"
				       : "the launcher is gone");
		save(j);
	}
	if (out >= 0)
		close(out);
	if (log >= 0)
		close(log);
}

/* Makes, records and launches a job: 0, or the refusal's status. */
static int admit(struct job *j, json_object **out, bool as_op)
{
	char err[300];

	if (closing)
		return fail(out, "service_unavailable", as_op
			    ? "the node is shutting down"
			    : "Job service is shutting down");
	if (quota_check(jobs, n_jobs, &j->spec, &limits, err, sizeof(err)))
		return fail(out, as_op ? "operation_limit_exceeded"
				       : "quota_exceeded", err);
	j->created = j->updated = jobs_now_ns();
	j->status = JOB_PENDING;
	if (state_create(j, err, sizeof(err))) {
		cpa_err("new job: %s", err);
		return fail(out, "internal_error", "internal error");
	}
	add(j);
	if (limits.fleet)
		fleet_watch(j->id, false);
	else
		launch(j);
	return 0;
}

int jobs_create(const struct user *u, const struct job_spec *spec,
		json_object **out)
{
	struct job *j;
	int code;

	if (limits.fleet) {
		struct node_addr a;

		if (nodes_find(spec->hostname, &a)) {
			cpa_err("create: hostname \"%s\" is not a node",
				spec->hostname);
			*out = api_errorf("invalid_request", "hostname \"%s\" "
					  "is not a node (--nodes names the "
					  "fleet's)", spec->hostname);
			return 400;
		}
	} else if (strcmp(spec->hostname, hostname)) {
		*out = api_errorf("invalid_request", "hostname \"%s\" is not "
				  "this host (\"%s\"); jobs for other hosts go "
				  "to the fleet's apiserver", spec->hostname,
				  hostname);
		return 400;
	}
	j = cpa_calloc(1, sizeof(*j));
	j->spec = *spec;
	j->kind = KIND_JOB;
	snprintf(j->owner, sizeof(j->owner), "%s", u->id);
	pthread_mutex_lock(&lock);
	new_id(j->id, sizeof(j->id));
	code = admit(j, out, false);
	if (code) {
		pthread_mutex_unlock(&lock);
		free(j);
		return code;
	}
	code = reply(out, job_json(j, false), 201);
	pthread_mutex_unlock(&lock);
	return code;
}

static int by_creation_desc(const void *a, const void *b)
{
	const struct job *x = *(struct job *const *)a;
	const struct job *y = *(struct job *const *)b;

	if (x->created != y->created)
		return x->created > y->created ? -1 : 1;
	return strcmp(y->id, x->id);
}

int jobs_list(const struct user *u, uint64_t limit, uint64_t offset,
	      json_object **out)
{
	json_object *items = json_object_new_array(), *o;
	struct job **mine;
	size_t n = 0;

	pthread_mutex_lock(&lock);
	mine = cpa_calloc(n_jobs + 1, sizeof(*mine));
	for (size_t i = 0; i < n_jobs; i++)
		if (jobs[i]->kind == KIND_JOB &&
		    (u->admin || !strcmp(jobs[i]->owner, u->id)))
			mine[n++] = jobs[i];
	qsort(mine, n, sizeof(*mine), by_creation_desc);
	for (uint64_t i = offset; i < n && i < offset + limit; i++)
		json_object_array_add(items, job_json(mine[i], false));
	pthread_mutex_unlock(&lock);
	o = json_object_new_object();
	json_object_object_add(o, "items", items);
	json_object_object_add(o, "limit", json_object_new_int64((int64_t)limit));
	json_object_object_add(o, "offset",
			       json_object_new_int64((int64_t)offset));
	json_object_object_add(o, "has_more", json_object_new_boolean(
		offset < n && n - offset > limit));
	free(mine);
	return reply(out, o, 200);
}

/* With the lock held: the job a user may see, or NULL with the reply. */
static struct job *visible(const struct user *u, const char *id,
			   json_object **out, int *code)
{
	struct job *j = find(id);

	if (!j || j->kind != KIND_JOB) {
		*code = fail(out, "job_not_found", "Job not found");
		return NULL;
	}
	if (!u->admin && strcmp(j->owner, u->id)) {
		*code = fail(out, "permission_denied",
			     "Job access is forbidden");
		return NULL;
	}
	return j;
}

int jobs_get(const struct user *u, const char *id, json_object **out)
{
	struct job *j;
	int code = 0;

	pthread_mutex_lock(&lock);
	j = visible(u, id, out, &code);
	if (j)
		code = reply(out, job_json(j, true), 200);
	pthread_mutex_unlock(&lock);
	return code;
}

/* With the lock held: asks the launcher to stop an active job. */
static void ask_stop(struct job *j)
{
	struct launch_msg m;

	memset(&m, 0, sizeof(m));
	m.op = LAUNCH_STOP;
	snprintf(m.id, sizeof(m.id), "%s", j->id);
	launcher_send(launcher, &m, -1, -1);
	j->status = JOB_STOPPING;
	j->stop_asked = true;
	save(j);
}

int jobs_stop(const struct user *u, const char *id, json_object **out)
{
	struct job *j;
	int code = 0;

	pthread_mutex_lock(&lock);
	j = visible(u, id, out, &code);
	if (j && j->status == JOB_TERMINAL)
		code = fail(out, "job_conflict", "Job is already terminal");
	else if (j && limits.fleet) {
		if (j->status == JOB_PENDING && !j->remote.start_sent) {
			/* its node never heard of it */
			end(j, OUT_STOPPED, NULL, NULL);
			j->stop_asked = true;
			save(j);
		} else if (j->status != JOB_STOPPING) {
			j->status = JOB_STOPPING;
			j->stop_asked = true;
			snprintf(j->remote.stop_reason,
				 sizeof(j->remote.stop_reason), "user");
			j->remote.stop_deadline = jobs_now_ns() +
				(int64_t)limits.stop_timeout_s * 1000000000;
			save(j);
			fleet_wake();
		}
		code = reply(out, job_json(j, false), 200);
	} else if (j) {
		if (j->status != JOB_STOPPING)
			ask_stop(j);
		code = reply(out, job_json(j, false), 200);
	}
	pthread_mutex_unlock(&lock);
	return code;
}

/* With the lock held: the job whose raw windows a user may read (§11's
 * steps 1 to 3), or NULL with the refusal. */
static struct job *raw_readable(const struct user *u, const char *id,
				json_object **out, int *code)
{
	struct job *j = visible(u, id, out, code);

	if (!j)
		return NULL;
	if (job_active(j)) {
		*code = fail(out, "result_not_ready",
			     "Profiling result is not ready");
		return NULL;
	}
	if (j->outcome == OUT_FAILED || j->outcome == OUT_STOPPED) {
		*code = fail(out, "result_unavailable", "Job state does not "
			     "provide a complete Profiling result");
		return NULL;
	}
	return j;
}

int jobs_raw(const struct user *u, const char *id, uint64_t limit,
	     uint64_t offset, struct raw_page *page, json_object **out)
{
	char dir[4300];
	struct job *j;
	int code = 0;

	pthread_mutex_lock(&lock);
	j = raw_readable(u, id, out, &code);
	if (j) {
		state_job_dir(id, dir, sizeof(dir));
		/* the marker on disk is the durable truth */
		if (!j->published || !windows_published(dir))
			code = fail(out, "result_not_found",
				    "Profiling result not found");
	}
	pthread_mutex_unlock(&lock);
	if (code)
		return code;
	/* read outside the lock: a job's published windows never change */
	return windows_page(dir, limit, offset, limits.max_raw_page, page,
			    out);
}

int jobs_raw_check(const struct user *u, const char *id,
		   struct job_spec *spec, uint64_t *max_page,
		   json_object **out)
{
	struct job *j;
	int code = 0;

	pthread_mutex_lock(&lock);
	j = raw_readable(u, id, out, &code);
	if (j)
		*spec = j->spec;
	*max_page = limits.max_raw_page;
	pthread_mutex_unlock(&lock);
	return code;
}

int jobs_result_dir(const struct user *u, const char *id, char *dir,
		    size_t dirlen, json_object **out)
{
	struct job *j;
	int code = 0;

	pthread_mutex_lock(&lock);
	j = visible(u, id, out, &code);
	if (!j)
		;
	else if (job_active(j))
		code = fail(out, "result_not_ready",
			    "Profiling result is not ready");
	else if (!j->has_result)
		code = fail(out, "result_not_found", j->message[0]
			    ? j->message : "Profiling result not found");
	else
		state_job_dir(id, dir, dirlen);
	pthread_mutex_unlock(&lock);
	return code ? code : 200;
}

int ops_start(const struct job_spec *spec, const struct spec_request *req,
	      json_object **out)
{
	struct job *j, *old;
	int code;

	if (!spec_id_valid(req->request_id))
		return fail(out, "invalid_request", "request_id: expected 1 to "
			    "128 of A-Z a-z 0-9 . _ - (cpa-serve names the "
			    "job's directory after it)");
	pthread_mutex_lock(&lock);
	old = find(req->request_id);
	if (old) {
		code = old->kind == KIND_OPERATION && !strcmp(req->kind,
							      "profiling")
		       ? reply(out, op_json(old), 200)
		       : fail(out, "request_id_conflict", "request ID belongs "
			      "to another operation kind");
		pthread_mutex_unlock(&lock);
		return code;
	}
	if (!strcmp(req->kind, "tracing")) {
		pthread_mutex_unlock(&lock);
		return fail(out, "service_not_implemented", "cpa-serve has no "
			    "tracing executor");
	}
	/* the node's environment check: its container must run here */
	if (spec->scope == SCOPE_CONTAINER &&
	    !targets_container_exists(spec->container_id)) {
		pthread_mutex_unlock(&lock);
		*out = api_errorf("execution_environment_unsupported", "no "
				  "process of container %s runs on this node",
				  spec->container_id);
		return 422;
	}
	j = cpa_calloc(1, sizeof(*j));
	j->spec = *spec;
	snprintf(j->spec.hostname, sizeof(j->spec.hostname), "%s", hostname);
	j->kind = KIND_OPERATION;
	snprintf(j->id, sizeof(j->id), "%s", req->request_id);
	code = admit(j, out, true);
	if (code) {
		pthread_mutex_unlock(&lock);
		free(j);
		return code;
	}
	code = reply(out, op_json(j), 202);
	pthread_mutex_unlock(&lock);
	return code;
}

static struct job *find_op(const char *id, json_object **out, int *code)
{
	struct job *j = find(id);

	if (!j || j->kind != KIND_OPERATION) {
		*code = fail(out, "operation_not_found",
			     "operation was not found");
		return NULL;
	}
	return j;
}

int ops_get(const char *id, json_object **out)
{
	struct job *j;
	int code = 0;

	pthread_mutex_lock(&lock);
	j = find_op(id, out, &code);
	if (j)
		code = reply(out, op_json(j), 200);
	pthread_mutex_unlock(&lock);
	return code;
}

int ops_stop(const char *id, json_object **out)
{
	struct job *j;
	int code = 0;

	pthread_mutex_lock(&lock);
	j = find_op(id, out, &code);
	if (j && (j->status == JOB_STOPPING || j->status == JOB_TERMINAL)) {
		code = reply(out, op_json(j), 200);
	} else if (j) {
		ask_stop(j);
		code = reply(out, op_json(j), 202);
	}
	pthread_mutex_unlock(&lock);
	return code;
}

/* The last line the failed stage (its lines start "prog: ") wrote in
 * the job's log, as the failure's words; whether the capture said it
 * had started sampling ("backend ..."). */
static bool read_log(const char *dir, const char *prog, char *out,
		     size_t outlen)
{
	char path[4400], line[512];
	bool attached = false;
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, RESULT_LOG);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strstr(line, "backend "))
			attached = true;
		if (prog && !strncmp(line, prog, strlen(prog)) &&
		    line[strlen(prog)] == ':')
			snprintf(out, outlen, "%.255s", line);
	}
	fclose(f);
	return attached;
}

static bool exited_ok(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Why the job's pipeline failed, if it did: reason and message. */
static bool pipeline_failed(const struct launch_msg *m, const char *dir,
			    char *reason, size_t rlen, char *msg, size_t mlen)
{
	bool unstarted = WIFEXITED(m->status[0]) &&
			 WEXITSTATUS(m->status[0]) == 127;
	bool attached;

	if (unstarted || !exited_ok(m->status[0])) {
		attached = read_log(dir, unstarted ? "cpa-serve" : "cpa-capture",
				    msg, mlen);
		snprintf(reason, rlen, "%s", unstarted || !attached
			 ? "execution_start_failed" : "execution_failed");
		return true;
	}
	if (!exited_ok(m->status[1])) {
		snprintf(reason, rlen, "execution_failed");
		if (WIFSIGNALED(m->status[1]) && WTERMSIG(m->status[1]) == SIGXFSZ)
			snprintf(msg, mlen, "cpa-unwind: the job's stream "
				 "reached --max-job-size (%llu bytes)",
				 (unsigned long long)limits.max_job);
		else
			read_log(dir, "cpa-unwind", msg, mlen);
		return true;
	}
	return false;
}

void jobs_on_launcher(const struct launch_msg *m)
{
	char dir[4300], reason[40] = "", msg[256] = "", why[256] = "";
	bool failed, has_result = false, published = false, stopped = false;
	struct job *j;

	pthread_mutex_lock(&lock);
	j = find(m->id);
	if (j && m->op == LAUNCH_STARTED && j->status == JOB_PENDING) {
		j->status = JOB_RUNNING;
		j->started = jobs_now_ns();
		save(j);
	}
	if (j)
		stopped = j->stop_asked;
	pthread_mutex_unlock(&lock);
	if (!j || m->op != LAUNCH_ENDED)
		return;
	state_job_dir(m->id, dir, sizeof(dir));
	failed = pipeline_failed(m, dir, reason, sizeof(reason), msg,
				 sizeof(msg));
	if (m->timed_out) {	/* whatever its stages did then */
		failed = true;
		snprintf(reason, sizeof(reason), "execution_timed_out");
		snprintf(msg, sizeof(msg), "ran %u s past its duration, and "
			 "was stopped", limits.grace_s);
	}
	/* rendered and published outside the lock: polls go on meanwhile.
	 * A job stopped, by a client or at its deadline, keeps what it
	 * captured for cpa's formats; only a whole one is published */
	int rendered = 0;

	if (!failed || m->timed_out || stopped) {
		int rc = results_render(dir, &limits.child, why, sizeof(why));

		rendered = rc;
		has_result = rc == 0;
		if (rc < 0 && !failed) {
			failed = true;
			snprintf(reason, sizeof(reason), "execution_failed");
			snprintf(msg, sizeof(msg), "%s", why);
		}
	}
	if (!failed && !stopped) {
		if (windows_publish(dir, j, &limits, rendered == 1, msg,
				    sizeof(msg))) {
			failed = true;
			snprintf(reason, sizeof(reason), "execution_failed");
		} else if (limits.publish &&
			   publish_job(dir, j, &limits, rendered == 1, msg,
				       sizeof(msg))) {
			/* the fleet's store did not take it: not complete */
			failed = true;
			snprintf(reason, sizeof(reason), "%s",
				 j->kind == KIND_OPERATION
				 ? "finalization_failed" : "execution_failed");
			cpa_err("job %s: %s", j->id, msg);
		} else {
			published = true;
		}
	}
	pthread_mutex_lock(&lock);
	j->has_result = has_result;
	j->published = published;
	j->attached = read_log(dir, NULL, why, sizeof(why));
	/* a client's stop is the outcome, however the stages took their
	 * signal (one stopped before it had started may just die of it) */
	if (j->stop_asked)
		end(j, OUT_STOPPED, NULL, NULL);
	else if (failed)
		end(j, OUT_FAILED, reason, msg);
	else
		end(j, OUT_COMPLETED, NULL, NULL);
	save(j);
	j->bytes = state_job_bytes(j->id);
	pthread_mutex_unlock(&lock);
}

struct sweep_item {
	char id[SPEC_ID_MAX + 1];
	int64_t ended;
	uint64_t bytes;
};

static int by_end(const void *a, const void *b)
{
	const struct sweep_item *x = a, *y = b;

	return x->ended < y->ended ? -1 : x->ended > y->ended;
}

void jobs_sweep(void)
{
	int64_t now = jobs_now_ns(), keep = (int64_t)limits.retain_s * 1000000000;
	struct sweep_item *ended;
	uint64_t total = 0;
	size_t n = 0, gone = 0;

	pthread_mutex_lock(&lock);
	ended = cpa_calloc(n_jobs + 1, sizeof(*ended));
	for (size_t i = 0; i < n_jobs; i++) {
		struct job *j = jobs[i];

		if (job_active(j)) {
			total += state_job_bytes(j->id);
			continue;
		}
		memcpy(ended[n].id, j->id, sizeof(ended[n].id));
		ended[n].ended = j->ended;
		ended[n].bytes = j->bytes;
		total += j->bytes;
		n++;
	}
	qsort(ended, n, sizeof(*ended), by_end);
	/* the oldest first: past their retention, or past the size cap */
	while (gone < n && (ended[gone].ended + keep <= now ||
			    (limits.max_state && total > limits.max_state))) {
		struct job *j = find(ended[gone].id);

		for (size_t i = 0; j && i < n_jobs; i++)
			if (jobs[i] == j) {
				memmove(&jobs[i], &jobs[i + 1],
					(n_jobs - i - 1) * sizeof(*jobs));
				n_jobs--;
				break;
			}
		free(j);
		total -= ended[gone].bytes;
		gone++;
	}
	pthread_mutex_unlock(&lock);
	/* a reader with a result file open keeps reading it */
	for (size_t i = 0; i < gone; i++) {
		state_remove(ended[i].id);
		cpa_debug("job %s deleted (%s)", ended[i].id,
			  ended[i].ended + keep <= now ? "past --retain-jobs"
						       : "past --max-state-size");
	}
	free(ended);
}
