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

static char jobs_dir[3072];

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
	snprintf(out, outlen, "%s/%.128s", jobs_dir, id);
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

static void put_str(json_object *o, const char *key, const char *v)
{
	if (v && v[0])
		json_object_object_add(o, key, json_object_new_string(v));
}

static void put_int(json_object *o, const char *key, int64_t v)
{
	json_object_object_add(o, key, json_object_new_int64(v));
}

/* The record: the job's every field, times in ns (the API's views are
 * jobs.c's). */
static json_object *record(const struct job *j)
{
	const struct job_spec *s = &j->spec;
	json_object *o = json_object_new_object();

	put_str(o, "request_id", j->id);
	put_str(o, "kind", j->kind == KIND_JOB ? "job" : "operation");
	put_str(o, "owner", j->owner);
	put_str(o, "type", job_modes[s->mode].type);
	put_str(o, "mode", job_modes[s->mode].mode);
	put_str(o, "language", lang_names[s->lang]);
	put_str(o, "scope", scope_names[s->scope]);
	put_str(o, "container_id", s->container_id);
	put_str(o, "binary_match_path", s->binary_match_path);
	put_str(o, "hostname", s->hostname);
	if (s->scope == SCOPE_PID)
		put_int(o, "pid", s->pid);
	put_int(o, "duration_seconds", (int64_t)s->duration_s);
	if (s->has_freq)
		put_int(o, "freq", s->freq);
	put_str(o, "status", job_status_names[j->status]);
	if (j->outcome)
		put_str(o, "outcome", outcome_names[j->outcome]);
	put_str(o, "reason", j->reason);
	put_str(o, "message", j->message);
	json_object_object_add(o, "stop_asked",
			       json_object_new_boolean(j->stop_asked));
	json_object_object_add(o, "attached",
			       json_object_new_boolean(j->attached));
	json_object_object_add(o, "has_result",
			       json_object_new_boolean(j->has_result));
	json_object_object_add(o, "published",
			       json_object_new_boolean(j->published));
	put_int(o, "created_ns", j->created);
	put_int(o, "updated_ns", j->updated);
	put_int(o, "started_ns", j->started);
	put_int(o, "ended_ns", j->ended);
	if (j->remote.start_sent || j->remote.stop_reason[0]) {
		json_object *r = json_object_new_object();

		json_object_object_add(r, "start_sent", json_object_new_boolean(
			j->remote.start_sent));
		put_int(r, "pending_deadline_ns", j->remote.pending_deadline);
		put_int(r, "exec_deadline_ns", j->remote.exec_deadline);
		put_int(r, "stop_deadline_ns", j->remote.stop_deadline);
		put_str(r, "stop_reason", j->remote.stop_reason);
		json_object_object_add(o, "remote", r);
	}
	return o;
}

static const char *record_text(const struct job *j, json_object **o)
{
	*o = record(j);
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

void state_remove_tree(const char *dir)
{
	char path[4600];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (e->d_type == DT_DIR)
				state_remove_tree(path);
			else
				unlink(path);
		}
		closedir(d);
	}
	if (rmdir(dir) && errno != ENOENT)
		cpa_warn("%s: %s", dir, strerror(errno));
}

void state_remove(const char *id)
{
	char dir[4200];

	if (!spec_id_valid(id))
		return;
	state_job_dir(id, dir, sizeof(dir));
	state_remove_tree(dir);
	sync_dir(jobs_dir);
}

static uint64_t tree_bytes(const char *dir, int depth)
{
	char path[4600];
	struct dirent *e;
	struct stat st;
	uint64_t n = 0;
	int dfd;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	dfd = dirfd(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (S_ISREG(st.st_mode))
			n += (uint64_t)st.st_blocks * 512;
		else if (S_ISDIR(st.st_mode) && depth < 4) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			n += tree_bytes(path, depth + 1);
		}
	}
	closedir(d);
	return n;
}

uint64_t state_job_bytes(const char *id)
{
	char dir[4200];

	state_job_dir(id, dir, sizeof(dir));
	return tree_bytes(dir, 0);
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

static bool get_bool(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) &&
	       json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

static void copy_str(json_object *o, const char *key, char *out, size_t len)
{
	const char *s = get_str(o, key);

	snprintf(out, len, "%s", s ? s : "");
}

static int find_name(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

/* A record back into a job; each field checked as a body's is. */
static int read_record(json_object *o, const char *id, struct job *j)
{
	const char *type = get_str(o, "type"), *mode = get_str(o, "mode");
	const char *s = get_str(o, "request_id"), *kind = get_str(o, "kind");
	struct job_spec *sp = &j->spec;
	int64_t n;
	int i;

	memset(j, 0, sizeof(*j));
	if (!s || strcmp(s, id) || !type || !mode || !kind)
		return -1;
	if (strlen(id) > SPEC_ID_MAX)
		return -1;
	snprintf(j->id, sizeof(j->id), "%.128s", id);
	j->kind = strcmp(kind, "job") ? KIND_OPERATION : KIND_JOB;
	copy_str(o, "owner", j->owner, sizeof(j->owner));
	if ((i = spec_find_mode(type, mode)) < 0)
		return -1;
	sp->mode = (unsigned)i;
	if ((i = spec_find_lang(get_str(o, "language") ?
				get_str(o, "language") : "")) < 0)
		return -1;
	sp->lang = (enum job_lang)i;
	if ((i = spec_find_scope(get_str(o, "scope") ?
				 get_str(o, "scope") : "")) < 0)
		return -1;
	sp->scope = (enum job_scope)i;
	copy_str(o, "container_id", sp->container_id, sizeof(sp->container_id));
	copy_str(o, "binary_match_path", sp->binary_match_path,
		 sizeof(sp->binary_match_path));
	copy_str(o, "hostname", sp->hostname, sizeof(sp->hostname));
	if (sp->scope == SCOPE_PID) {
		if (!get_int(o, "pid", &n) || n < 1 || n > UINT32_MAX)
			return -1;
		sp->pid = (uint32_t)n;
	}
	if (sp->scope == SCOPE_CONTAINER && !sp->container_id[0])
		return -1;
	if (!get_int(o, "duration_seconds", &n) || n < 1 ||
	    n > SPEC_MAX_DURATION)
		return -1;
	sp->duration_s = (uint64_t)n;
	sp->freq = SPEC_DEFAULT_FREQ;
	if (get_int(o, "freq", &n) && n >= 1 && n <= SPEC_MAX_FREQ) {
		sp->freq = (unsigned)n;
		sp->has_freq = true;
	}
	if ((i = find_name(job_status_names, N_JOB_STATUS,
			   get_str(o, "status"))) < 0)
		return -1;
	j->status = (enum job_status)i;
	i = find_name(outcome_names, N_OUTCOMES, get_str(o, "outcome"));
	j->outcome = i > 0 ? (enum job_outcome)i : OUT_NONE;
	if (j->status == JOB_TERMINAL && !j->outcome)
		return -1;
	copy_str(o, "reason", j->reason, sizeof(j->reason));
	copy_str(o, "message", j->message, sizeof(j->message));
	j->stop_asked = get_bool(o, "stop_asked");
	j->attached = get_bool(o, "attached");
	j->has_result = get_bool(o, "has_result");
	j->published = get_bool(o, "published");
	get_int(o, "created_ns", &j->created);
	get_int(o, "updated_ns", &j->updated);
	get_int(o, "started_ns", &j->started);
	get_int(o, "ended_ns", &j->ended);
	{
		json_object *r;

		if (json_object_object_get_ex(o, "remote", &r) &&
		    json_object_is_type(r, json_type_object)) {
			j->remote.start_sent = get_bool(r, "start_sent");
			get_int(r, "pending_deadline_ns",
				&j->remote.pending_deadline);
			get_int(r, "exec_deadline_ns", &j->remote.exec_deadline);
			get_int(r, "stop_deadline_ns", &j->remote.stop_deadline);
			copy_str(r, "stop_reason", j->remote.stop_reason,
				 sizeof(j->remote.stop_reason));
		}
	}
	return j->created > 0 ? 0 : -1;
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

		if (!spec_id_valid(e->d_name))
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
