/* SPDX-License-Identifier: MIT */
/*
 * Windows are cut by the tools (a store of the job's stream, then
 * cpa-query --split-every, without root labels so a window's frames are
 * the pprof result's own), and made JSON here. Each window file is the
 * whole raw item; the index ("windows/index") lists them newest first,
 * each with the bytes of its profile, which is what the 64 MiB page
 * limit counts. The marker ("published") is written last, atomically.
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

#include "buf.h"
#include "errors.h"
#include "folded.h"
#include "intern.h"
#include "log.h"
#include "results.h"
#include "run.h"
#include "state.h"
#include "windows.h"

#define WINDOWS_DIR "windows"
#define INDEX "windows/index"
#define PUBLISHED "published"
#define MAX_WINDOWS 100000

/* The fixed 9-digit UTC form of the raw items' timestamps. */
static void nine_digits(int64_t ns, char *out, size_t outlen)
{
	time_t t = (time_t)(ns / 1000000000);
	char date[32];
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, outlen, "%s.%09ldZ", date, (long)(ns % 1000000000));
}

static json_object *value_type(struct cpa_strtab *st, const char *type,
			       const char *unit)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_int64(
		cpa_strtab_intern(st, type, strlen(type), NULL)));
	json_object_object_add(o, "unit", json_object_new_int64(
		cpa_strtab_intern(st, unit, strlen(unit), NULL)));
	return o;
}

json_object *windows_profile(const char *folded, size_t len,
			     const struct job_spec *spec, int64_t start_ns,
			     int64_t duration_ns, char *err, size_t errlen)
{
	const struct job_mode *m = &job_modes[spec->mode];
	bool cpu = m->how == HOW_ONCPU;
	int64_t period = cpu ? 1000000000 / (spec->freq ? spec->freq : 1) : 1;
	struct cpa_strtab *st = cpa_strtab_new(), *fn = cpa_strtab_new();
	json_object *p = json_object_new_object(), *types, *samples, *arr;
	const char *line = folded, *end = folded + len;
	uint32_t *ids = NULL;
	size_t cap_ids = 0, lineno = 0;

	/* string 0 is "", as pprof wants */
	json_object *strings = json_object_new_array();

	types = json_object_new_array();
	if (cpu)
		json_object_array_add(types, value_type(st, "samples", "count"));
	json_object_array_add(types, value_type(st, m->sample_type,
						m->sample_unit));
	samples = json_object_new_array();
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = (size_t)((nl ? nl : end) - line);
		struct cpa_folded_line fl;
		const char *fp, *f;
		size_t fl_len, k = 0;
		char why[200];
		int rc;

		lineno++;
		rc = cpa_folded_parse(line, n, &fl, why, sizeof(why));
		line = nl ? nl + 1 : end;
		if (rc == 0)
			continue;
		if (rc < 0) {
			cpa_fail(err, errlen, "line %zu: %s", lineno, why);
			json_object_put(p);
			json_object_put(types);
			json_object_put(samples);
			json_object_put(strings);
			cpa_strtab_free(st);
			cpa_strtab_free(fn);
			free(ids);
			return NULL;
		}
		fp = fl.stack;
		while (cpa_folded_frame(&fp, fl.stack + fl.stack_len, &f,
					&fl_len)) {
			if (!fl_len) {
				f = "[unknown]";
				fl_len = strlen(f);
			}
			CPA_GROW(ids, cap_ids, k + 1);
			ids[k++] = cpa_strtab_intern(fn, f, fl_len, NULL);
			cpa_strtab_intern(st, f, fl_len, NULL);
		}
		json_object *s = json_object_new_object();
		json_object *loc = json_object_new_array();
		json_object *val = json_object_new_array();

		while (k)	/* pprof: leaf first */
			json_object_array_add(loc, json_object_new_int64(
				ids[--k]));
		if (cpu)
			json_object_array_add(val, json_object_new_int64(
				(int64_t)fl.count));
		json_object_array_add(val, json_object_new_int64(
			(int64_t)fl.count * period));
		json_object_object_add(s, "location_id", loc);
		json_object_object_add(s, "value", val);
		json_object_array_add(samples, s);
	}
	free(ids);
	json_object_object_add(p, "sample_type", types);
	json_object_object_add(p, "sample", samples);
	/* a location per function: a frame is a name, not an address */
	json_object *locs = json_object_new_array(), *funcs = json_object_new_array();

	for (uint32_t id = 1; id <= cpa_strtab_count(fn); id++) {
		uint32_t nlen;
		const char *name = cpa_strtab_get(fn, id, &nlen);
		json_object *l = json_object_new_object(), *line_o;
		json_object *fo = json_object_new_object();

		json_object_object_add(l, "id", json_object_new_int64(id));
		arr = json_object_new_array();
		line_o = json_object_new_object();
		json_object_object_add(line_o, "function_id",
				       json_object_new_int64(id));
		json_object_array_add(arr, line_o);
		json_object_object_add(l, "line", arr);
		json_object_array_add(locs, l);
		json_object_object_add(fo, "id", json_object_new_int64(id));
		json_object_object_add(fo, "name", json_object_new_int64(
			cpa_strtab_intern(st, name, nlen, NULL)));
		json_object_array_add(funcs, fo);
	}
	json_object_object_add(p, "location", locs);
	json_object_object_add(p, "function", funcs);
	json_object *pt = value_type(st, cpu ? "cpu" : m->sample_type,
				     cpu ? "nanoseconds" : m->sample_unit);

	json_object_array_add(strings, json_object_new_string(""));
	for (uint32_t id = 1; id <= cpa_strtab_count(st); id++) {
		uint32_t slen;
		const char *s = cpa_strtab_get(st, id, &slen);

		json_object_array_add(strings,
				      json_object_new_string_len(s, (int)slen));
	}
	json_object_object_add(p, "string_table", strings);
	json_object_object_add(p, "time_nanos", json_object_new_int64(start_ns));
	json_object_object_add(p, "duration_nanos",
			       json_object_new_int64(duration_ns));
	json_object_object_add(p, "period_type", pt);
	json_object_object_add(p, "period", json_object_new_int64(period));
	cpa_strtab_free(st);
	cpa_strtab_free(fn);
	return p;
}

int64_t windows_start_of(const char *name)
{
	struct tm tm;
	char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(name, "%Y%m%dT%H%M%SZ", &tm);
	if (!end || strcmp(end, ".folded"))
		return -1;
	return (int64_t)timegm(&tm) * 1000000000;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*b)->d_name, (*a)->d_name);	/* newest first */
}

static char *slurp(const char *path, size_t *len)
{
	struct cpa_buf b = { 0 };
	char chunk[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		cpa_buf_add(&b, chunk, (size_t)n);
	close(fd);
	cpa_buf_add(&b, "", 1);
	*len = b.len - 1;
	return (char *)b.p;
}

/* Cuts the stream into folded windows under split/. */
static int cut(const char *dir, const struct job *j,
	       const struct serve_limits *lim, const char *store,
	       const char *split, char *err, size_t errlen)
{
	char stream[4400], sdir[4500], qdir[4500], every[64], to_split[4500];
	char *sargv[] = { (char *)run_tool("cpa-store"), sdir, "--retain=0",
			  "--max-size=0", NULL };
	char *qargv[] = { (char *)run_tool("cpa-query"), qdir, to_split,
			  every, "--labels=none", NULL };
	struct run_result r;
	int in;

	snprintf(stream, sizeof(stream), "%s/%s", dir, RESULT_STREAM);
	snprintf(sdir, sizeof(sdir), "--dir=%s", store);
	snprintf(qdir, sizeof(qdir), "--dir=%s", store);
	snprintf(to_split, sizeof(to_split), "--split=%s", split);
	snprintf(every, sizeof(every), "--split-every=%llus",
		 (unsigned long long)spec_window_s(&j->spec, lim->window_s));
	in = open(stream, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return cpa_fail_errno(err, errlen, errno, "%s", stream);
	if (run_pipeline(sargv, NULL, in, -1, 4096, &lim->child, &r) < 0) {
		close(in);
		cpa_fail(err, errlen, "windows: %s", r.err);
		run_result_free(&r);
		return -1;
	}
	close(in);
	run_result_free(&r);
	if (run_pipeline(qargv, NULL, -1, -1, 4096, &lim->child, &r) < 0) {
		cpa_fail(err, errlen, "windows: %s", r.err);
		run_result_free(&r);
		return -1;
	}
	run_result_free(&r);
	return 0;
}

json_object *windows_item(const struct job_spec *spec, const char *region,
			  json_object *profile, int64_t start,
			  int64_t uploaded, size_t *profile_bytes)
{
	json_object *o = json_object_new_object();
	char started[48], up[48];

	nine_digits(uploaded, up, sizeof(up));
	nine_digits(start, started, sizeof(started));
	json_object_object_add(o, "hostname",
			       json_object_new_string(spec->hostname));
	json_object_object_add(o, "region", json_object_new_string(
		region ? region : ""));
	json_object_object_add(o, "uploaded_timestamp",
			       json_object_new_string(up));
	json_object_object_add(o, "started_timestamp",
			       json_object_new_string(started));
	if (spec->scope == SCOPE_CONTAINER)
		json_object_object_add(o, "container_id", json_object_new_string(
			spec->container_id));
	json_object_object_add(o, "profile_type", json_object_new_string(
		job_modes[spec->mode].profile_type));
	*profile_bytes = strlen(json_object_to_json_string_ext(profile,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_object_add(o, "profile", profile);
	return o;
}

static int write_item(const char *path, const struct job *j,
		      const struct serve_limits *lim, json_object *profile,
		      int64_t start, int64_t uploaded, size_t *profile_bytes,
		      char *err, size_t errlen)
{
	json_object *o = windows_item(&j->spec, lim->region, profile, start,
				      uploaded, profile_bytes);
	const char *text = json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	int rc = state_write_atomic(path, text, strlen(text), err, errlen);

	json_object_put(o);
	return rc;
}

int windows_publish(const char *dir, const struct job *j,
		    const struct serve_limits *lim, bool empty, char *err,
		    size_t errlen)
{
	char store[4400], split[4400], wdir[4400], path[4800], marker[4400];
	struct cpa_buf index = { 0 };
	struct dirent **names = NULL;
	int64_t now = jobs_now_ns(), window =
		(int64_t)spec_window_s(&j->spec, lim->window_s) * 1000000000;
	int n = 0, rc = -1;

	snprintf(store, sizeof(store), "%s/windows.store", dir);
	snprintf(split, sizeof(split), "%s/windows.split", dir);
	snprintf(wdir, sizeof(wdir), "%s/%s", dir, WINDOWS_DIR);
	state_remove_tree(store);
	state_remove_tree(split);
	state_remove_tree(wdir);
	if (mkdir(wdir, 0750))
		return cpa_fail_errno(err, errlen, errno, "%s", wdir);
	if (!empty && cut(dir, j, lim, store, split, err, errlen))
		goto out;
	n = empty ? 0 : scandir(split, &names, NULL, by_name);
	if (n < 0)
		n = 0;	/* a range without samples: no file */
	for (int i = 0; i < n && i < MAX_WINDOWS; i++) {
		int64_t start = windows_start_of(names[i]->d_name);
		size_t len, bytes;
		json_object *profile;
		char *text, line[128];

		if (start < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", split, names[i]->d_name);
		text = slurp(path, &len);
		if (!text) {
			cpa_fail_errno(err, errlen, errno, "%s", path);
			goto out;
		}
		profile = windows_profile(text, len, &j->spec, start, window,
					  err, errlen);
		free(text);
		if (!profile)
			goto out;
		snprintf(path, sizeof(path), "%s/%06d.json", wdir, i);
		if (write_item(path, j, lim, profile, start, now, &bytes, err,
			       errlen))
			goto out;
		snprintf(line, sizeof(line), "%06d.json %zu\n", i, bytes);
		cpa_buf_add(&index, line, strlen(line));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, INDEX);
	if (state_write_atomic(path, index.p ? (char *)index.p : "", index.len,
			       err, errlen))
		goto out;
	{
		char at[48], text[512];

		jobs_time(now, at, sizeof(at));
		snprintf(text, sizeof(text), "{\"request_id\":\"%s\","
			 "\"published_at\":\"%s\"}\n", j->id, at);
		snprintf(marker, sizeof(marker), "%s/%s", dir, PUBLISHED);
		rc = state_write_atomic(marker, text, strlen(text), err,
					errlen);
	}
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	cpa_buf_free(&index);
	state_remove_tree(store);
	state_remove_tree(split);
	return rc;
}

bool windows_published(const char *dir)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", dir, PUBLISHED);
	return access(path, F_OK) == 0;
}

void raw_page_free(struct raw_page *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->fds[i] >= 0)
			close(p->fds[i]);
	free(p->prefix);
	free(p->suffix);
	memset(p, 0, sizeof(*p));
}

int windows_page(const char *dir, uint64_t limit, uint64_t offset,
		 uint64_t max_bytes, struct raw_page *p, json_object **out)
{
	char path[4400], *index, *line, *save = NULL, tail[160];
	uint64_t at = 0, profiles = 0;
	bool more = false;
	size_t len;

	memset(p, 0, sizeof(*p));
	snprintf(path, sizeof(path), "%s/%s", dir, INDEX);
	index = slurp(path, &len);
	if (!index) {
		*out = api_error("service_unavailable",
				 "Profiling result Store is unavailable");
		return 503;
	}
	for (line = strtok_r(index, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), at++) {
		char name[64];
		unsigned long long bytes;
		struct stat st;
		int fd;

		if (at < offset)
			continue;
		if (at >= offset + limit) {
			more = true;
			break;
		}
		if (sscanf(line, "%63s %llu", name, &bytes) != 2 ||
		    strchr(name, '/'))
			continue;
		profiles += bytes;
		if (profiles > max_bytes) {
			free(index);
			raw_page_free(p);
			*out = api_error("result_too_large", "Profiling result "
					 "response is too large; reduce limit");
			return 413;
		}
		snprintf(path, sizeof(path), "%s/%s/%s", dir, WINDOWS_DIR, name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			if (fd >= 0)
				close(fd);
			free(index);
			raw_page_free(p);
			*out = api_error("service_unavailable",
					 "Profiling result Store is unavailable");
			return 503;
		}
		p->fds[p->n] = fd;
		p->sizes[p->n++] = (uint64_t)st.st_size;
		p->total += (uint64_t)st.st_size + (p->n > 1);
	}
	free(index);
	p->prefix = cpa_strdup("{\"data\":{\"items\":[");
	snprintf(tail, sizeof(tail), "],\"limit\":%llu,\"offset\":%llu,"
		 "\"has_more\":%s}}\n", (unsigned long long)limit,
		 (unsigned long long)offset, more ? "true" : "false");
	p->suffix = cpa_strdup(tail);
	p->total += strlen(p->prefix) + strlen(p->suffix);
	return 200;
}
