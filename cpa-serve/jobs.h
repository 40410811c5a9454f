/* SPDX-License-Identifier: MIT */
/*
 * The job table: every job this server knows, finished or not, and the
 * moves between states. HTTP threads create, list and stop jobs; the main
 * thread hears from the launcher that a job's pipeline ended and writes
 * its results. One mutex guards the table.
 */
#ifndef CPA_SERVE_JOBS_H
#define CPA_SERVE_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "child.h"
#include "launcher.h"
#include "spec.h"

enum job_status {
	JOB_PENDING, JOB_RUNNING, JOB_STOPPING, JOB_COMPLETED, JOB_FAILED,
	JOB_STOPPED, N_JOB_STATUS,
};
extern const char *const job_status_names[N_JOB_STATUS];

struct job {
	char id[JOB_ID_LEN + 1];
	struct job_spec spec;
	enum job_status status;
	char reason[32];	/* failed: why, as a code */
	char message[256];	/* failed: the failing stage's last words */
	int64_t created, started, ended;	/* Unix seconds, 0: not yet */
	bool has_result;
	uint64_t bytes;		/* its files on disk, once it has ended */
};

static inline bool job_active(const struct job *j)
{
	return j->status == JOB_PENDING || j->status == JOB_RUNNING ||
	       j->status == JOB_STOPPING;
}

struct serve_limits {
	unsigned max_jobs;		/* active jobs on the host */
	unsigned max_jobs_per_target;	/* active jobs on one target */
	struct cpa_limits child;	/* each child a request starts */
	uint64_t retain_s;		/* ended jobs kept this long */
	uint64_t max_state;		/* bytes of all jobs' files */
	uint64_t max_job;		/* bytes of one job's stream */
};

/* Loads the records under state_dir/jobs; a job the last server left
 * active is failed as operation_lost. -1 with err when the directory
 * cannot be made or read. */
int jobs_init(const char *state_dir, int launcher_sock,
	      const struct serve_limits *limits, char *err, size_t errlen);
void jobs_free(void);

/* HTTP status and, in *out, the response body (a JSON object). */
int jobs_create(const struct job_spec *spec, json_object **out);
int jobs_list(const char *status, json_object **out);
int jobs_get(const char *id, json_object **out);
int jobs_stop(const char *id, json_object **out);

/* The directory of a job with a result, for the result files: 200 and
 * the path in dir, or an error status and body. */
int jobs_result_dir(const char *id, char *dir, size_t dirlen,
		    json_object **out);

/* The main thread: a launcher message arrived. */
void jobs_on_launcher(const struct launch_msg *m);

/* The main thread, hourly and after each job's end: deletes the ended
 * jobs older than --retain-jobs, then the oldest ended ones while all jobs'
 * files take more than --max-state-size. */
void jobs_sweep(void);

/* Counts of active jobs, for capabilities and the load test. */
unsigned jobs_active(void);

json_object *json_error(const char *message, const char *field);

#endif
