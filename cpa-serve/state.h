/* SPDX-License-Identifier: MIT */
/*
 * Durable job records: STATE_DIR/jobs/ID/job.json, replaced atomically
 * (written beside, synced, renamed), next to the job's stream and
 * results, so a restarted server finds every job as it last was.
 */
#ifndef CPA_SERVE_STATE_H
#define CPA_SERVE_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "jobs.h"

int state_open(const char *state_dir, char *err, size_t errlen);
const char *state_jobs_dir(void);

/* Whether s is a job id: 16 lowercase hex digits, so that an id taken
 * from a URL or a directory name can name nothing else. */
bool state_job_id_valid(const char *s);

/* STATE_DIR/jobs/ID */
void state_job_dir(const char *id, char *out, size_t outlen);
int state_make_job_dir(const char *id, char *err, size_t errlen);

/* The record as the API shows it. */
json_object *state_job_json(const struct job *j);
int state_save(const struct job *j, char *err, size_t errlen);

/* Calls fn for each record that reads back whole; warns of the rest. */
void state_load(void (*fn)(struct job *j, void *arg), void *arg);

/* Writes len bytes to path through path.tmp, fsync and rename. */
int state_write_atomic(const char *path, const void *data, size_t len,
		       char *err, size_t errlen);

#endif
