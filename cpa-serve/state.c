/* SPDX-License-Identifier: MIT */
/*
 * Job records on disk. A save writes the spare in place, syncs it and
 * exchanges it with the record, then syncs the directory: a crash leaves
 * the old record or the new one, never half of either, and the old one
 * becomes the next save's spare. The spare is RECORD_SIZE bytes of real
 * data (not fallocated, which would leave extents to convert on a full
 * disk), and a record is padded with spaces to that size, which JSON
 * allows after the object.
 */
#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "log.h"
#include "state.h"

#define RECORD_SIZE 8192
#define RECORD "job.json"
#define SPARE "job.json.spare"

static char jobs_dir[4096];

const char *state_jobs_dir(void)
{
	return jobs_dir;
}

int state_open(const char *state_dir, char *err, size_t errlen)
{
	if (mkdir(state_dir, 0750) && errno != EEXIST)
		return cpa_fail_errno(err, errlen, errno, "%s", state_dir);
	if ((size_t)snprintf(jobs_dir, sizeof(jobs_dir), "%s/jobs",
			     state_dir) >= sizeof(jobs_dir) - 64)
		return cpa_fail(err, errlen, "%s: path too long", state_dir);
	if (mkdir(jobs_dir, 0750) && errno != EEXIST)
		return cpa_fail_errno(err, errlen, errno, "%s", jobs_dir);
	if (access(jobs_dir, W_OK | X_OK))
		return cpa_fail_errno(err, errlen, errno, "%s", jobs_dir);
	return 0;
}

void state_job_dir(const char *id, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%s", jobs_dir, id);
}

static void sync_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
}

/* Writes all of text (padded with spaces to RECORD_SIZE when pad) at
 * offset 0 of fd, and syncs it. */
static int write_record(int fd, const char *text, bool pad)
{
	static const char spaces[512] = { [0 ... 511] = ' ' };
	size_t len = strlen(text), off = len;
	int rc;

	if (pad && len >= RECORD_SIZE) {
		errno = EFBIG;
		return -1;
	}
	rc = cpa_pwrite_full(fd, text, len, 0);
	while (!rc && pad && off < RECORD_SIZE) {
		size_t k = RECORD_SIZE - off < sizeof(spaces)
			   ? RECORD_SIZE - off : sizeof(spaces);

		rc = cpa_pwrite_full(fd, spaces, k, off);
		off += k;
	}
	if (rc) {
		errno = -rc;
		return -1;
	}
	return fdatasync(fd);
}

static const char *record_text(const struct job *j, json_object **o)
{
	*o = state_job_json(j);
	return json_object_to_json_string_ext(*o, JSON_C_TO_STRING_PRETTY |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
}

int state_create(const struct job *j, char *err, size_t errlen)
{
	char dir[4200], path[4300];
	json_object *o;
	int fd = -1, e;

	state_job_dir(j->id, dir, sizeof(dir));
	if (mkdir(dir, 0750))
		return cpa_fail_errno(err, errlen, errno, "%s", dir);
	for (int k = 0; k < 2; k++) {
		snprintf(path, sizeof(path), "%s/%s", dir, k ? RECORD : SPARE);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (fd < 0 || write_record(fd, k ? record_text(j, &o) : "{}",
					   true))
			goto fail;
		if (k)
			json_object_put(o);
		close(fd);
	}
	sync_dir(dir);
	sync_dir(jobs_dir);
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	state_remove(j->id);
	return cpa_fail_errno(err, errlen, e, "%s", path);
}

void state_remove(const char *id)
{
	char dir[4200], path[4600];
	struct dirent *e;
	DIR *d;

	if (!state_job_id_valid(id))
		return;
	state_job_dir(id, dir, sizeof(dir));
	d = opendir(dir);
	if (d) {
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(path, sizeof(path), "%s/%s", dir,
					 e->d_name);
				unlink(path);
			}
		closedir(d);
	}
	if (rmdir(dir) && errno != ENOENT)
		cpa_warn("%s: %s", dir, strerror(errno));
	sync_dir(jobs_dir);
}

uint64_t state_job_bytes(const char *id)
{
	char dir[4200];
	struct dirent *e;
	struct stat st;
	uint64_t n = 0;
	int dfd;
	DIR *d;

	state_job_dir(id, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return 0;
	dfd = dirfd(d);
	while ((e = readdir(d)))
		if (!fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			n += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return n;
}

static void put_time(json_object *o, const char *key, int64_t t)
{
	char buf[32];
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm)) {
		json_object_object_add(o, key, NULL);
		return;
	}
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_object_add(o, key, json_object_new_string(buf));
}

json_object *state_job_json(const struct job *j)
{
	const struct job_mode *m = &job_modes[j->spec.mode];
	json_object *o = json_object_new_object();

	json_object_object_add(o, "id", json_object_new_string(j->id));
	json_object_object_add(o, "type", json_object_new_string(m->type));
	json_object_object_add(o, "mode", json_object_new_string(m->mode));
	json_object_object_add(o, "scope",
			       json_object_new_string(scope_names[j->spec.scope]));
	if (j->spec.scope == SCOPE_PID)
		json_object_object_add(o, "pid",
				       json_object_new_int64(j->spec.pid));
	if (j->spec.scope == SCOPE_CONTAINER)
		json_object_object_add(o, "container_id",
				       json_object_new_string(j->spec.container_id));
	json_object_object_add(o, "duration_seconds",
			       json_object_new_int64(j->spec.duration_s));
	if (m->has_freq)
		json_object_object_add(o, "freq",
				       json_object_new_int64(j->spec.freq));
	json_object_object_add(o, "status",
			       json_object_new_string(job_status_names[j->status]));
	if (j->reason[0])
		json_object_object_add(o, "reason",
				       json_object_new_string(j->reason));
	if (j->message[0])
		json_object_object_add(o, "message",
				       json_object_new_string(j->message));
	json_object_object_add(o, "has_result",
			       json_object_new_boolean(j->has_result));
	put_time(o, "created_at", j->created);
	put_time(o, "started_at", j->started);
	put_time(o, "ended_at", j->ended);
	return o;
}

int state_write_atomic(const char *path, const void *data, size_t len,
		       char *err, size_t errlen)
{
	char tmp[4300], dir[4300], *slash;
	int fd, rc;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0)
		return cpa_fail_errno(err, errlen, errno, "%s", tmp);
	rc = cpa_write_full(fd, data, len);
	if (rc < 0) {
		close(fd);
		unlink(tmp);
		return cpa_fail_errno(err, errlen, -rc, "%s", tmp);
	}
	if (fsync(fd) || close(fd) || rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		return cpa_fail_errno(err, errlen, e, "%s", path);
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	sync_dir(slash ? dir : ".");
	return 0;
}

int state_save(const struct job *j, char *err, size_t errlen)
{
	char dir[4200], rec[4300], spare[4300];
	json_object *o;
	const char *text = record_text(j, &o);
	int fd, rc = 0;

	state_job_dir(j->id, dir, sizeof(dir));
	snprintf(rec, sizeof(rec), "%s/%s", dir, RECORD);
	snprintf(spare, sizeof(spare), "%s/%s", dir, SPARE);
	fd = open(spare, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		/* a record of an older server has no spare: replaced the
		 * plain way, and given one for next time */
		rc = state_write_atomic(rec, text, strlen(text), err, errlen);
		fd = open(spare, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (fd >= 0 && write_record(fd, "{}", true))
			unlink(spare);
		if (fd >= 0)
			close(fd);
		json_object_put(o);
		return rc;
	}
	if (write_record(fd, text, true) ||
	    renameat2(AT_FDCWD, spare, AT_FDCWD, rec, RENAME_EXCHANGE))
		rc = cpa_fail_errno(err, errlen, errno, "%s", rec);
	close(fd);
	if (!rc)
		sync_dir(dir);
	json_object_put(o);
	return rc;
}

static const char *get_str(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool get_int(json_object *o, const char *key, int64_t *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_int64(v);
	return true;
}

static int64_t get_time(json_object *o, const char *key)
{
	const char *s = get_str(o, key);
	struct tm tm;
	char *end;

	memset(&tm, 0, sizeof(tm));
	if (!s || !(end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) || *end)
		return 0;
	return (int64_t)timegm(&tm);
}

/* A record back into a job; its fields checked as a body's are. */
static int read_record(json_object *o, const char *id, struct job *j)
{
	const char *type = get_str(o, "type"), *mode = get_str(o, "mode");
	const char *scope = get_str(o, "scope"), *status = get_str(o, "status");
	const char *s;
	json_object *v;
	int64_t n;
	int i;

	memset(j, 0, sizeof(*j));
	s = get_str(o, "id");
	if (!s || strcmp(s, id) || strlen(id) != JOB_ID_LEN || !type ||
	    !mode || !scope || !status)
		return -1;
	memcpy(j->id, id, JOB_ID_LEN + 1);
	if ((i = spec_find_mode(type, mode)) < 0)
		return -1;
	j->spec.mode = (unsigned)i;
	if ((i = spec_find_scope(scope)) < 0)
		return -1;
	j->spec.scope = (enum job_scope)i;
	if (j->spec.scope == SCOPE_PID) {
		if (!get_int(o, "pid", &n) || n < 1 || n > UINT32_MAX)
			return -1;
		j->spec.pid = (uint32_t)n;
	}
	if (j->spec.scope == SCOPE_CONTAINER) {
		s = get_str(o, "container_id");
		if (!s || strlen(s) > SPEC_CONTAINER_ID_MAX)
			return -1;
		snprintf(j->spec.container_id, sizeof(j->spec.container_id),
			 "%s", s);
	}
	if (!get_int(o, "duration_seconds", &n) || n < 1 ||
	    n > SPEC_MAX_DURATION)
		return -1;
	j->spec.duration_s = (unsigned)n;
	j->spec.freq = SPEC_DEFAULT_FREQ;
	if (get_int(o, "freq", &n) && n >= 1 && n <= SPEC_MAX_FREQ)
		j->spec.freq = (unsigned)n;
	for (i = 0; i < N_JOB_STATUS; i++)
		if (!strcmp(job_status_names[i], status))
			break;
	if (i == N_JOB_STATUS)
		return -1;
	j->status = (enum job_status)i;
	if ((s = get_str(o, "reason")))
		snprintf(j->reason, sizeof(j->reason), "%s", s);
	if ((s = get_str(o, "message")))
		snprintf(j->message, sizeof(j->message), "%s", s);
	j->has_result = json_object_object_get_ex(o, "has_result", &v) &&
			json_object_get_boolean(v);
	j->created = get_time(o, "created_at");
	j->started = get_time(o, "started_at");
	j->ended = get_time(o, "ended_at");
	return 0;
}

bool state_job_id_valid(const char *s)
{
	size_t n = strlen(s);

	if (n != JOB_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

void state_load(void (*fn)(struct job *j, void *arg), void *arg)
{
	DIR *d = opendir(jobs_dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[4400];
		json_object *o;
		struct job j;

		if (!state_job_id_valid(e->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/" RECORD, jobs_dir,
			 e->d_name);
		o = json_object_from_file(path);
		if (!o || read_record(o, e->d_name, &j)) {
			cpa_warn("%s: not a job record; job %s skipped", path,
				 e->d_name);
			json_object_put(o);
			continue;
		}
		json_object_put(o);
		fn(&j, arg);
	}
	closedir(d);
}
