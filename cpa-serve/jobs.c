/* SPDX-License-Identifier: MIT */
/*
 * Jobs from request to result. A job is pending while its directory and
 * record are made, running once the launcher has its pipeline, stopping
 * after a stop request, and ends completed (its duration ran out),
 * stopped (a client stopped it; the result holds what was captured) or
 * failed (with a reason code: launch_failed, capture_failed,
 * unwind_failed, render_failed, operation_lost). Every change is written
 * to the job's record before it is answered.
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
#include "jobs.h"
#include "log.h"
#include "quotas.h"
#include "results.h"
#include "state.h"

const char *const job_status_names[N_JOB_STATUS] = {
	"pending", "running", "stopping", "completed", "failed", "stopped",
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct job **jobs;
static size_t n_jobs, cap_jobs;
static int launcher = -1;
static struct serve_limits limits;

json_object *json_error(const char *message, const char *field)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "error", json_object_new_string(message));
	if (field && field[0])
		json_object_object_add(o, "field",
				       json_object_new_string(field));
	return o;
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

static void save(const struct job *j)
{
	char err[300];

	if (state_save(j, err, sizeof(err)))
		cpa_err("job %s: record not written: %s", j->id, err);
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
 * the pipeline wrote until then is kept, as a stopped job's is. */
static void load_one(struct job *loaded, void *arg)
{
	struct job *j = cpa_malloc(sizeof(*j));
	char dir[4300], why[200] = "";

	*j = *loaded;
	if (job_active(j)) {
		j->status = JOB_FAILED;
		snprintf(j->reason, sizeof(j->reason), "operation_lost");
		state_job_dir(j->id, dir, sizeof(dir));
		if (!stream_released(dir))
			snprintf(why, sizeof(why), "its stream is missing or "
				 "still written");
		else if (results_render(dir, &limits.child, why,
					sizeof(why)) == 0)
			j->has_result = true;
		snprintf(j->message, sizeof(j->message), "cpa-serve "
			 "restarted while the job was %s%s%s",
			 job_status_names[loaded->status],
			 j->has_result ? "; the windows captured until then are "
					 "kept" : why[0] ? ": " : "", why);
		j->ended = time(NULL);
		save(j);
	}
	if (!job_active(j))
		j->bytes = state_job_bytes(j->id);
	add(j);
}

static int by_creation(const void *a, const void *b)
{
	const struct job *x = *(struct job *const *)a;
	const struct job *y = *(struct job *const *)b;

	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	return strcmp(x->id, y->id);
}

int jobs_init(const char *state_dir, int launcher_sock,
	      const struct serve_limits *lim, char *err, size_t errlen)
{
	if (state_open(state_dir, err, errlen))
		return -1;
	launcher = launcher_sock;
	limits = *lim;
	state_load(load_one, NULL);
	if (n_jobs)
		qsort(jobs, n_jobs, sizeof(*jobs), by_creation);
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

unsigned jobs_active(void)
{
	unsigned n = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_jobs; i++)
		n += job_active(jobs[i]);
	pthread_mutex_unlock(&lock);
	return n;
}

static void new_id(char *id)
{
	unsigned char r[JOB_ID_LEN / 2];

	do {
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			cpa_die("getrandom: %s", strerror(errno));
		for (size_t i = 0; i < sizeof(r); i++)
			sprintf(id + 2 * i, "%02x", r[i]);
	} while (find(id));
}

static int open_in(const char *dir, const char *name, int flags)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, flags | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
}

/* Called with the lock held; the record is written, the job started. */
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
	memcpy(m.id, j->id, sizeof(m.id));
	m.spec = j->spec;
	if (out < 0 || log < 0 || launcher_send(launcher, &m, out, log)) {
		j->status = JOB_FAILED;
		snprintf(j->reason, sizeof(j->reason), "launch_failed");
		snprintf(j->message, sizeof(j->message), "%s",
			 out < 0 || log < 0 ? "cannot create the job's files"
					    : "the launcher is gone");
		j->ended = time(NULL);
	} else {
		j->status = JOB_RUNNING;
		j->started = time(NULL);
	}
	if (out >= 0)
		close(out);
	if (log >= 0)
		close(log);
	save(j);
}

int jobs_create(const struct job_spec *spec, json_object **out)
{
	char err[300];
	struct job *j;

	pthread_mutex_lock(&lock);
	if (quota_check(jobs, n_jobs, spec, &limits, err, sizeof(err))) {
		pthread_mutex_unlock(&lock);
		*out = json_error(err, NULL);
		return 429;
	}
	j = cpa_calloc(1, sizeof(*j));
	new_id(j->id);
	j->spec = *spec;
	j->status = JOB_PENDING;
	j->created = time(NULL);
	if (state_create(j, err, sizeof(err))) {
		pthread_mutex_unlock(&lock);
		free(j);
		cpa_err("new job: %s", err);
		*out = json_error("cannot write the job's record", NULL);
		return 500;
	}
	add(j);
	launch(j);
	*out = state_job_json(j);
	pthread_mutex_unlock(&lock);
	return 201;
}

int jobs_list(const char *status, json_object **out)
{
	json_object *list;
	int want = -1;

	if (status) {
		for (int i = 0; i < N_JOB_STATUS; i++)
			if (!strcmp(job_status_names[i], status))
				want = i;
		if (want < 0) {
			*out = json_error("status: not one of pending, running, "
					  "stopping, completed, failed, stopped",
					  "status");
			return 400;
		}
	}
	list = json_object_new_array();
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n_jobs; i++)
		if (want < 0 || (int)jobs[i]->status == want)
			json_object_array_add(list, state_job_json(jobs[i]));
	pthread_mutex_unlock(&lock);
	*out = json_object_new_object();
	json_object_object_add(*out, "jobs", list);
	return 200;
}

static int not_found(json_object **out)
{
	*out = json_error("no such job", NULL);
	return 404;
}

int jobs_get(const char *id, json_object **out)
{
	struct job *j;

	pthread_mutex_lock(&lock);
	j = find(id);
	if (j)
		*out = state_job_json(j);
	pthread_mutex_unlock(&lock);
	return j ? 200 : not_found(out);
}

int jobs_stop(const char *id, json_object **out)
{
	struct launch_msg m;
	struct job *j;
	int code = 200;

	pthread_mutex_lock(&lock);
	j = find(id);
	if (!j) {
		pthread_mutex_unlock(&lock);
		return not_found(out);
	}
	if (j->status == JOB_RUNNING) {
		memset(&m, 0, sizeof(m));
		m.op = LAUNCH_STOP;
		memcpy(m.id, j->id, sizeof(m.id));
		launcher_send(launcher, &m, -1, -1);
		j->status = JOB_STOPPING;
		save(j);
		code = 202;
	} else if (job_active(j)) {
		code = 202;	/* already stopping: asked again, same answer */
	}
	*out = state_job_json(j);
	pthread_mutex_unlock(&lock);
	return code;
}

int jobs_result_dir(const char *id, char *dir, size_t dirlen,
		    json_object **out)
{
	struct job *j;
	int code = 200;

	pthread_mutex_lock(&lock);
	j = find(id);
	if (!j) {
		code = not_found(out);
	} else if (job_active(j)) {
		*out = json_error("the job has not ended", NULL);
		code = 409;
	} else if (!j->has_result) {
		*out = json_error("the job has no result", NULL);
		code = 404;
	} else {
		state_job_dir(id, dir, dirlen);
	}
	pthread_mutex_unlock(&lock);
	return code;
}

/* The last line the failed stage (its lines start "prog: ") wrote in
 * the job's log, as the failure's words. */
static void last_log_line(const char *dir, const char *prog, char *out,
			  size_t outlen)
{
	char path[4400], line[512];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, RESULT_LOG);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, prog, strlen(prog)) &&
		    line[strlen(prog)] == ':') {
			size_t n = strlen(line);

			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, line, n);
			out[n] = 0;
		}
	}
	fclose(f);
}

static bool exited_ok(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

void jobs_on_launcher(const struct launch_msg *m)
{
	char dir[4300], reason[32] = "", message[256] = "";
	bool ok, has_result = false;
	struct job *j;

	if (m->op != LAUNCH_ENDED)
		return;
	pthread_mutex_lock(&lock);
	j = find(m->id);
	pthread_mutex_unlock(&lock);
	if (!j)
		return;
	state_job_dir(m->id, dir, sizeof(dir));
	if (WIFEXITED(m->status[0]) && WEXITSTATUS(m->status[0]) == 127)
		snprintf(reason, sizeof(reason), "launch_failed");
	else if (!exited_ok(m->status[0]))
		snprintf(reason, sizeof(reason), "capture_failed");
	else if (!exited_ok(m->status[1]))
		snprintf(reason, sizeof(reason), "unwind_failed");
	if (WIFSIGNALED(m->status[1]) && WTERMSIG(m->status[1]) == SIGXFSZ)
		snprintf(message, sizeof(message), "cpa-unwind: the job's "
			 "stream reached --max-job-size (%llu bytes)",
			 (unsigned long long)limits.max_job);
	else if (reason[0])
		last_log_line(dir, !strcmp(reason, "unwind_failed")
					   ? "cpa-unwind"
					   : !strcmp(reason, "launch_failed")
					   ? "cpa-serve" : "cpa-capture",
			      message, sizeof(message));
	ok = !reason[0];
	/* rendered outside the lock: polls go on meanwhile. A job stopped
	 * at its deadline keeps what it captured, as a stopped one does */
	if (ok) {
		int rc = results_render(dir, &limits.child, message,
					sizeof(message));

		if (rc < 0)
			snprintf(reason, sizeof(reason), "render_failed");
		ok = rc >= 0;
		has_result = rc == 0;
	}
	if (ok && m->timed_out) {
		ok = false;
		snprintf(reason, sizeof(reason), "execution_timed_out");
		snprintf(message, sizeof(message), "ran %d s past its "
			 "duration, and was stopped", LAUNCH_GRACE_S);
	}
	pthread_mutex_lock(&lock);
	j->ended = time(NULL);
	j->has_result = has_result;
	j->bytes = state_job_bytes(j->id);
	if (ok) {
		/* an empty result says why it is empty */
		snprintf(j->message, sizeof(j->message), "%s", message);
		/* a stop that came while it ended still made it stop */
		j->status = j->status == JOB_STOPPING ? JOB_STOPPED
						      : JOB_COMPLETED;
	} else {
		j->status = JOB_FAILED;
		snprintf(j->reason, sizeof(j->reason), "%s", reason);
		snprintf(j->message, sizeof(j->message), "%s", message);
	}
	save(j);
	pthread_mutex_unlock(&lock);
}

struct sweep_item {
	char id[JOB_ID_LEN + 1];
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
	int64_t now = time(NULL);
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
	while (gone < n && (ended[gone].ended + (int64_t)limits.retain_s <= now ||
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
			  ended[i].ended + (int64_t)limits.retain_s <= now
			  ? "past --retain-jobs" : "past --max-state-size");
	}
	free(ended);
}
