/* SPDX-License-Identifier: MIT */
/*
 * The job table: every job this server knows, active or terminal, and
 * the moves between states (HUATUO's: pending, running, stopping, then
 * terminal with an outcome). A job comes from the profiling API (a Job,
 * POST /v1/profiling, owned by its creator) or from an apiserver driving
 * this host as a node (an Operation, POST /v1/operations); both run the
 * same way, and are shown in their API's shape. HTTP threads create,
 * read and stop jobs; the main thread hears from the launcher that a
 * job's pipeline started or ended, and publishes its windows. One mutex
 * guards the table; every change is on disk before it is answered.
 *
 * Each function answering a request returns its HTTP status and sets
 * *out to the whole reply body (errors.h's envelope).
 */
#ifndef CPA_SERVE_JOBS_H
#define CPA_SERVE_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "auth.h"
#include "child.h"
#include "launcher.h"
#include "spec.h"

enum job_status { JOB_PENDING, JOB_RUNNING, JOB_STOPPING, JOB_TERMINAL,
		  N_JOB_STATUS };
extern const char *const job_status_names[N_JOB_STATUS];

enum job_outcome { OUT_NONE, OUT_COMPLETED, OUT_FAILED, OUT_STOPPED,
		   OUT_UNKNOWN, N_OUTCOMES };
extern const char *const outcome_names[N_OUTCOMES];

enum job_kind { KIND_JOB, KIND_OPERATION };

/* What the apiserver (--fleet) keeps of a job it drives on a node. */
struct job_remote {
	bool start_sent;	/* the node was asked to start it */
	int64_t pending_deadline, exec_deadline, stop_deadline;	/* ns */
	char stop_reason[24];	/* user, start_timeout, execution_timeout */
};

struct job {
	char id[SPEC_ID_MAX + 1];
	enum job_kind kind;
	char owner[128];	/* the creating user's ID (jobs) */
	struct job_spec spec;
	enum job_status status;
	enum job_outcome outcome;
	char reason[40];	/* failed: HUATUO's reason code */
	char message[256];	/* failed: the failing stage's last words */
	bool stop_asked;	/* a client asked it to stop */
	bool attached;		/* its capture had started sampling */
	bool has_result;	/* cpa's own formats were rendered */
	bool published;		/* its windows are published (raw) */
	int64_t created, updated, started, ended;	/* ns, 0: not yet */
	uint64_t bytes;		/* its files on disk, once terminal */
	struct job_remote remote;	/* --fleet */
};

static inline bool job_active(const struct job *j)
{
	return j->status != JOB_TERMINAL;
}

struct serve_limits {
	unsigned max_jobs;		/* active jobs on the host */
	unsigned max_jobs_per_target;	/* active jobs on one target */
	struct cpa_limits child;	/* each child a request starts */
	uint64_t retain_s;		/* terminal jobs kept this long */
	uint64_t max_state;		/* bytes of all jobs' files */
	uint64_t max_job;		/* bytes of one job's stream */
	uint64_t window_s;		/* the aggregation interval */
	unsigned grace_s;		/* completion grace past a duration */
	uint64_t max_raw_page;		/* bytes of profiles in a raw page */
	const char *region;		/* stamped on every window */
	const char *dashboard;		/* result_url's base, or NULL */
	const char *hostname;		/* this node's name (--hostname) */
	const char *publish;		/* windows into ClickHouse, or NULL */
	const char *cluster;		/* its tables' cluster, or NULL */
	bool fleet;			/* the apiserver: jobs run on nodes */
	unsigned stop_timeout_s;	/* --fleet: a stop's deadline */
};

/* Loads the records under state_dir/jobs; a job the last server left
 * active is failed as operation_lost, its windows kept. -1 with err
 * when the directory cannot be made or read. */
int jobs_init(const char *state_dir, int launcher_sock,
	      const struct serve_limits *limits, char *err, size_t errlen);
void jobs_free(void);
/* Shutting down: creates are 503 from now on. */
void jobs_close(void);

/* The profiling API (users: who asks; admins see every job). */
int jobs_create(const struct user *u, const struct job_spec *spec,
		json_object **out);
int jobs_list(const struct user *u, uint64_t limit, uint64_t offset,
	      json_object **out);
int jobs_get(const struct user *u, const char *id, json_object **out);
int jobs_stop(const struct user *u, const char *id, json_object **out);
/* GET .../raw: the reply, or 200 with *fds the window files to send
 * (and *prefix, *suffix around them), see windows.h. */
struct raw_page;
int jobs_raw(const struct user *u, const char *id, uint64_t limit,
	     uint64_t offset, struct raw_page *page, json_object **out);

/* The directory of a job with cpa's own results (flamegraph, pprof,
 * speedscope): 200 and the path in dir, or an error status and body. */
int jobs_result_dir(const struct user *u, const char *id, char *dir,
		    size_t dirlen, json_object **out);

/* The node Operation API. */
int ops_start(const struct job_spec *spec, const struct spec_request *req,
	      json_object **out);
int ops_get(const char *id, json_object **out);
int ops_stop(const char *id, json_object **out);

/* The main thread: a launcher message arrived. */
void jobs_on_launcher(const struct launch_msg *m);

/* The main thread, hourly and after each job's end: deletes the ended
 * jobs older than --retain-jobs, then the oldest ended ones while all
 * jobs' files take more than --max-state-size. */
void jobs_sweep(void);

/* For the fleet's supervisors (fleet.c): the table's lock, and what may
 * be done with it held. */
void jobs_lock(void);
void jobs_unlock(void);
struct job *jobs_find_locked(const char *id);
void jobs_save_locked(struct job *j);
void jobs_end_locked(struct job *j, enum job_outcome outcome,
		     const char *reason, const char *message);
/* GET .../raw of a fleet job: 0 when its windows may be read from the
 * fleet's store (its spec in *spec, the page bound in *max_page), else
 * the refusal's status with *out. */
int jobs_raw_check(const struct user *u, const char *id,
		   struct job_spec *spec, uint64_t *max_page,
		   json_object **out);

/* Counts of active jobs (the metrics). */
unsigned jobs_active(void);

/* ns since the epoch, and that time as Go's RFC 3339 with nanoseconds
 * (trailing zeros trimmed: "2026-08-24T10:00:00.5Z"). */
int64_t jobs_now_ns(void);
void jobs_time(int64_t ns, char *out, size_t outlen);

#endif
