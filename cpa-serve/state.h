/* SPDX-License-Identifier: MIT */
/*
 * Durable job records: STATE_DIR/jobs/ID/job.json, next to the job's
 * stream and results, so a restarted server finds every job as it last
 * was. A record is replaced atomically, and without needing a byte of
 * free space: each job keeps a spare of the record's full size, written
 * when the job was made; a save overwrites the spare in place and swaps
 * the two names (renameat2 RENAME_EXCHANGE), so a full disk cannot keep
 * a job's end from being recorded.
 */
#ifndef CPA_SERVE_STATE_H
#define CPA_SERVE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "jobs.h"

int state_open(const char *state_dir, char *err, size_t errlen);
const char *state_jobs_dir(void);

/* STATE_DIR/jobs/ID */
void state_job_dir(const char *id, char *out, size_t outlen);

/* Makes the job's directory, its first record and the record's spare:
 * all of them, or (-1 with err) none. */
int state_create(const struct job *j, char *err, size_t errlen);
/* Deletes the job's directory and all in it; any directory's. */
void state_remove(const char *id);
void state_remove_tree(const char *dir);
/* Bytes the job's files take on disk. */
uint64_t state_job_bytes(const char *id);

/* Writes the job's record (the whole job; the API's views are jobs.c's). */
int state_save(const struct job *j, char *err, size_t errlen);

/* Calls fn for each record that reads back whole; warns of the rest. */
void state_load(void (*fn)(struct job *j, void *arg), void *arg);

/* Writes len bytes to path through path.tmp, fsync and rename. */
int state_write_atomic(const char *path, const void *data, size_t len,
		       char *err, size_t errlen);

#endif
