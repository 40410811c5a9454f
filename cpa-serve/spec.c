/* SPDX-License-Identifier: MIT */
/*
 * A job body is read strictly: a JSON object of known fields, each of its
 * type and range, so that a typo in a field name is an error and not a
 * default silently taken. json-c's strict mode parses it.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "log.h"
#include "spec.h"

const struct job_mode job_modes[] = {
	{ "cpu", "oncpu", { NULL }, false, true },
	{ "cpu", "offcpu", { "--offcpu", "--no-oncpu", NULL }, true, false },
	{ "memory", "virt", { "--mem=virt", "--no-oncpu", NULL }, true, false },
	{ "memory", "phys", { "--mem=phys", "--no-oncpu", NULL }, true, false },
	{ "memory", "usage", { "--mem=usage", "--no-oncpu", NULL }, true, false },
	{ "memory", "malloc", { "--mem=malloc", "--no-oncpu", NULL }, true,
	  false },
};
const size_t n_job_modes = sizeof(job_modes) / sizeof(job_modes[0]);

const char *const scope_names[3] = { "host", "pid", "container" };

/* Languages a job may name; native code is unwound by every mode. */
static const char *const languages[] = { "native" };

#define BODY_MAX_DEPTH 4

int spec_find_mode(const char *type, const char *mode)
{
	for (size_t i = 0; i < n_job_modes; i++)
		if (!strcmp(job_modes[i].type, type) &&
		    !strcmp(job_modes[i].mode, mode))
			return (int)i;
	return -1;
}

int spec_find_scope(const char *name)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(scope_names[i], name))
			return i;
	return -1;
}

void spec_target(const struct job_spec *spec, char *out, size_t outlen)
{
	switch (spec->scope) {
	case SCOPE_PID:
		snprintf(out, outlen, "pid:%u", spec->pid);
		break;
	case SCOPE_CONTAINER:
		snprintf(out, outlen, "container:%s", spec->container_id);
		break;
	default:
		snprintf(out, outlen, "host");
	}
}

struct reading {
	char *err, *field;
	size_t errlen, fieldlen;
};

static int bad(struct reading *r, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct reading *r, const char *field, const char *fmt, ...)
{
	va_list ap;

	snprintf(r->field, r->fieldlen, "%s", field);
	va_start(ap, fmt);
	cpa_vfail(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int get_string(struct reading *r, json_object *v, const char *field,
		      const char **out)
{
	if (!json_object_is_type(v, json_type_string))
		return bad(r, field, "%s: expected a string", field);
	*out = json_object_get_string(v);
	if (strlen(*out) != (size_t)json_object_get_string_len(v))
		return bad(r, field, "%s: NUL in the string", field);
	return 0;
}

static int get_uint(struct reading *r, json_object *v, const char *field,
		    int64_t min, int64_t max, int64_t *out)
{
	if (!json_object_is_type(v, json_type_int))
		return bad(r, field, "%s: expected an integer", field);
	errno = 0;
	*out = json_object_get_int64(v);
	if (errno || *out < min || *out > max)
		return bad(r, field, "%s: %s is out of range %lld..%lld", field,
			   json_object_to_json_string(v), (long long)min,
			   (long long)max);
	return 0;
}

static bool container_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SPEC_CONTAINER_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) ||
		    isupper((unsigned char)s[i]))
			return false;
	return true;
}

static int read_fields(struct reading *r, json_object *obj,
		       struct job_spec *spec)
{
	const char *type = NULL, *mode = NULL, *scope = NULL, *cid = NULL;
	const char *lang = NULL;
	bool have_pid = false, have_freq = false;
	int64_t n;
	int i;

	memset(spec, 0, sizeof(*spec));
	spec->duration_s = SPEC_DEFAULT_DURATION;
	spec->freq = SPEC_DEFAULT_FREQ;
	json_object_object_foreach(obj, key, v) {
		if (!strcmp(key, "type")) {
			if (get_string(r, v, key, &type))
				return -1;
		} else if (!strcmp(key, "mode")) {
			if (get_string(r, v, key, &mode))
				return -1;
		} else if (!strcmp(key, "language")) {
			if (get_string(r, v, key, &lang))
				return -1;
		} else if (!strcmp(key, "scope")) {
			if (get_string(r, v, key, &scope))
				return -1;
		} else if (!strcmp(key, "container_id")) {
			if (get_string(r, v, key, &cid))
				return -1;
		} else if (!strcmp(key, "pid")) {
			if (get_uint(r, v, key, 1, 4194304, &n))
				return -1;
			spec->pid = (uint32_t)n;
			have_pid = true;
		} else if (!strcmp(key, "duration_seconds")) {
			if (get_uint(r, v, key, 1, SPEC_MAX_DURATION, &n))
				return -1;
			spec->duration_s = (unsigned)n;
		} else if (!strcmp(key, "freq")) {
			if (get_uint(r, v, key, 1, SPEC_MAX_FREQ, &n))
				return -1;
			spec->freq = (unsigned)n;
			have_freq = true;
		} else {
			return bad(r, key, "unknown field '%s'", key);
		}
	}
	if (!type)
		return bad(r, "type", "type: missing (cpu or memory)");
	if (!mode)
		return bad(r, "mode", "mode: missing");
	i = spec_find_mode(type, mode);
	if (i < 0) {
		bool type_known = false;

		for (size_t k = 0; k < n_job_modes; k++)
			type_known |= !strcmp(job_modes[k].type, type);
		if (!type_known)
			return bad(r, "type", "type: '%s' is not a job type "
				   "of this host", type);
		return bad(r, "mode", "mode: '%s' is not a mode of type '%s'",
			   mode, type);
	}
	spec->mode = (unsigned)i;
	if (lang) {
		size_t k;

		for (k = 0; k < sizeof(languages) / sizeof(*languages); k++)
			if (!strcmp(languages[k], lang))
				break;
		if (k == sizeof(languages) / sizeof(*languages))
			return bad(r, "language", "language: '%s' is not "
				   "supported", lang);
	}
	if (have_freq && !job_modes[i].has_freq)
		return bad(r, "freq", "freq: mode '%s' does not sample at a "
			   "frequency", mode);
	if (!scope)
		return bad(r, "scope", "scope: missing (host, pid or "
			   "container)");
	i = spec_find_scope(scope);
	if (i < 0)
		return bad(r, "scope", "scope: '%s' is not host, pid or "
			   "container", scope);
	spec->scope = (enum job_scope)i;
	if (spec->scope == SCOPE_PID && !have_pid)
		return bad(r, "pid", "pid: missing for scope pid");
	if (spec->scope != SCOPE_PID && have_pid)
		return bad(r, "pid", "pid: only with scope pid");
	if (spec->scope == SCOPE_CONTAINER && !cid)
		return bad(r, "container_id", "container_id: missing for "
			   "scope container");
	if (spec->scope != SCOPE_CONTAINER && cid)
		return bad(r, "container_id", "container_id: only with scope "
			   "container");
	if (cid) {
		if (!container_id_ok(cid))
			return bad(r, "container_id", "container_id: expected "
				   "1 to 64 lowercase hex digits");
		snprintf(spec->container_id, sizeof(spec->container_id), "%s",
			 cid);
	}
	return 0;
}

int spec_parse(const char *body, size_t len, struct job_spec *spec,
	       char *err, size_t errlen, char *field, size_t fieldlen)
{
	struct reading r = { err, field, errlen, fieldlen };
	struct json_tokener *tok;
	json_object *obj;
	size_t end;
	int rc;

	if (fieldlen)
		field[0] = 0;
	/* An empty body may come as a NULL pointer, which memchr and the
	 * tokener must not see. */
	if (len == 0)
		return bad(&r, "", "byte 0: the JSON body ends early");
	if (memchr(body, 0, len))
		return bad(&r, "", "byte %zu: NUL in the body",
			   (size_t)((const char *)memchr(body, 0, len) - body));
	tok = json_tokener_new_ex(BODY_MAX_DEPTH);
	if (!tok)
		return bad(&r, "", "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, body, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (!obj) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		json_tokener_free(tok);
		if (e == json_tokener_continue)
			return bad(&r, "", "byte %zu: the JSON body ends early",
				   len);
		return bad(&r, "", "byte %zu: bad JSON: %s", end,
			   json_tokener_error_desc(e));
	}
	json_tokener_free(tok);
	while (end < len && isspace((unsigned char)body[end]))
		end++;
	if (end < len)
		rc = bad(&r, "", "byte %zu: data after the JSON object", end);
	else if (!json_object_is_type(obj, json_type_object))
		rc = bad(&r, "", "byte 0: expected a JSON object");
	else
		rc = read_fields(&r, obj, spec);
	json_object_put(obj);
	return rc;
}
