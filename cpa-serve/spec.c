/* SPDX-License-Identifier: MIT */
/*
 * A body is read strictly: a JSON object of known fields, each of its
 * type, so that a typo in a field name is an error and not a default
 * silently taken. json-c's strict mode parses it; the checks then run in
 * the order HUATUO's apiserver runs them, so the same bad body gets the
 * same first complaint.
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

const char *const lang_names[N_LANGS] = { "c", "c++", "go", "java", "python" };
const char *const scope_names[N_SCOPES] = { "host", "container", "pid" };

const struct job_mode job_modes[] = {
	{ "cpu", "oncpu", HOW_ONCPU, { NULL }, "cpu", "nanoseconds",
	  "process_cpu:cpu:nanoseconds:cpu:nanoseconds" },
	{ "cpu", "offcpu", HOW_ARGS, { "--offcpu", "--no-oncpu", NULL },
	  "off_cpu", "nanoseconds",
	  "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds" },
	{ "memory", "virtual_alloc", HOW_ARGS, { "--mem=virt", "--no-oncpu" },
	  "virtual_alloc", "bytes",
	  "memory:virtual_alloc:bytes:space:bytes" },
	{ "memory", "physical_alloc", HOW_ARGS, { "--mem=phys", "--no-oncpu" },
	  "physical_alloc", "bytes",
	  "memory:physical_alloc:bytes:space:bytes" },
	{ "memory", "physical_usage", HOW_ARGS, { "--mem=usage", "--no-oncpu" },
	  "physical_usage", "bytes",
	  "memory:physical_usage:bytes:space:bytes" },
	{ "memory", "object_alloc", HOW_JAVA, { "--java-alloc", "--no-oncpu" },
	  "alloc_space", "bytes", "memory:alloc_space:bytes:space:bytes" },
	{ "memory", "object_usage", HOW_JAVA, { "--java-live", "--no-oncpu" },
	  "inuse_space", "bytes", "memory:inuse_space:bytes:space:bytes" },
	/* cpa's extension: sampled heap allocations (malloc uprobes) */
	{ "memory", "malloc", HOW_ARGS, { "--mem=malloc", "--no-oncpu" },
	  "malloc", "bytes", "memory:malloc:bytes:space:bytes" },
};
const size_t n_job_modes = sizeof(job_modes) / sizeof(job_modes[0]);

#define ALL_SCOPES { true, true, true }

/* HUATUO's nine rows, in its order; cpa takes every scope where HUATUO
 * takes containers only, and adds malloc to the native memory modes. */
const struct capability capabilities[] = {
	{ "cpu", LANG_C, { "oncpu", "offcpu" }, false, ALL_SCOPES },
	{ "cpu", LANG_CXX, { "oncpu", "offcpu" }, false, ALL_SCOPES },
	{ "cpu", LANG_GO, { "oncpu", "offcpu" }, false, ALL_SCOPES },
	{ "cpu", LANG_JAVA, { "oncpu" }, true, ALL_SCOPES },
	{ "cpu", LANG_PYTHON, { "oncpu" }, true, ALL_SCOPES },
	{ "memory", LANG_C, { "virtual_alloc", "physical_alloc",
			      "physical_usage", "malloc" }, false, ALL_SCOPES },
	{ "memory", LANG_CXX, { "virtual_alloc", "physical_alloc",
				"physical_usage", "malloc" }, false, ALL_SCOPES },
	{ "memory", LANG_GO, { "virtual_alloc", "physical_alloc",
			       "physical_usage" }, false, ALL_SCOPES },
	{ "memory", LANG_JAVA, { "object_alloc", "object_usage" }, false,
	  ALL_SCOPES },
};
const size_t n_capabilities = sizeof(capabilities) / sizeof(capabilities[0]);

#define BODY_MAX_DEPTH 4

static int find(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

int spec_find_scope(const char *name)
{
	return find(scope_names, N_SCOPES, name);
}

int spec_find_lang(const char *name)
{
	return find(lang_names, N_LANGS, name);
}

int spec_find_mode(const char *type, const char *mode)
{
	for (size_t i = 0; i < n_job_modes; i++)
		if (!strcmp(job_modes[i].type, type) &&
		    !strcmp(job_modes[i].mode, mode))
			return (int)i;
	return -1;
}

bool spec_id_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SPEC_ID_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

uint64_t spec_window_s(const struct job_spec *spec, uint64_t configured)
{
	return spec->lang == LANG_PYTHON || configured > spec->duration_s
	       ? spec->duration_s : configured;
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
	char *err;
	size_t errlen;
};

static int bad(struct reading *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int bad(struct reading *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cpa_vfail(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* A string field: of its type, NUL-free, at most max bytes, and (as
 * the schema's minLength: 1) not empty when nonempty is set. */
static int get_string(struct reading *r, json_object *v, const char *field,
		      size_t max, bool nonempty, const char **out)
{
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return bad(r, "%s: expected a string", field);
	*out = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (strlen(*out) != len)
		return bad(r, "%s: NUL in the string", field);
	if (nonempty && !len)
		return bad(r, "%s: must not be empty", field);
	if (len > max)
		return bad(r, "%s: longer than %zu bytes", field, max);
	return 0;
}

static int get_int(struct reading *r, json_object *v, const char *field,
		   int64_t min, int64_t *out)
{
	if (!json_object_is_type(v, json_type_int))
		return bad(r, "%s: expected an integer", field);
	errno = 0;
	*out = json_object_get_int64(v);
	if (errno == ERANGE)
		return bad(r, "%s: %s is outside the supported range", field,
			   json_object_to_json_string(v));
	if (*out < min)
		return bad(r, "%s: must be at least %lld", field,
			   (long long)min);
	return 0;
}

static int enum_value(struct reading *r, const char *field, const char *v,
		      const char *const *names, int n)
{
	int i = find(names, n, v);

	if (i < 0)
		return bad(r, "%s: \"%s\" is not one of the allowed values",
			   field, v);
	return i;
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

static bool trimmed(const char *s)
{
	size_t n = strlen(s);

	return n && !isspace((unsigned char)s[0]) &&
	       !isspace((unsigned char)s[n - 1]);
}

/* The fields a job spec is made of, wherever they sit in the body. */
struct fields {
	const char *type, *lang, *mode, *scope, *cid, *bin, *host;
	int64_t duration, pid, freq;
	bool have_duration, have_pid, have_freq;
};

static const char *const type_names[] = { "cpu", "memory" };

/* One key of a body or of an operation's spec; 0, 1 for a key that is
 * not a spec field, -1 on a refusal. */
static int spec_field(struct reading *r, const char *key, json_object *v,
		      struct fields *f, bool in_create)
{
	const char *s;
	static const char *const mode_names[] = {
		"oncpu", "offcpu", "virtual_alloc", "physical_alloc",
		"physical_usage", "object_alloc", "object_usage", "malloc",
	};

	if (!strcmp(key, "type")) {
		/* its values are checked with the kind's (tracing has its
		 * own types) */
		if (get_string(r, v, key, 64, true, &s))
			return -1;
		f->type = s;
	} else if (!strcmp(key, "language")) {
		if (get_string(r, v, key, 16, true, &s) ||
		    enum_value(r, key, s, lang_names, N_LANGS) < 0)
			return -1;
		f->lang = s;
	} else if (!strcmp(key, "mode")) {
		if (get_string(r, v, key, 32, true, &s) ||
		    enum_value(r, key, s, mode_names, 8) < 0)
			return -1;
		f->mode = s;
	} else if (!strcmp(key, "binary_match_path")) {
		if (get_string(r, v, key, SPEC_PATH_MAX, true, &f->bin))
			return -1;
	} else if (in_create && !strcmp(key, "freq")) {
		if (get_int(r, v, key, 1, &f->freq))
			return -1;
		f->have_freq = true;
	} else {
		return 1;
	}
	return 0;
}

/* The top-level keys: those of a create body, or of a start request. */
static int top_field(struct reading *r, enum spec_body what, const char *key,
		     json_object *v, struct fields *f, struct spec_request *req,
		     json_object **nested)
{
	const char *s;
	int rc;

	if (what == BODY_CREATE && (rc = spec_field(r, key, v, f, true)) <= 0)
		return rc;
	if (!strcmp(key, "scope")) {
		if (get_string(r, v, key, 16, true, &s) ||
		    enum_value(r, key, s, scope_names, N_SCOPES) < 0)
			return -1;
		f->scope = s;
	} else if (!strcmp(key, "container_id")) {
		if (get_string(r, v, key, 256, true, &f->cid))
			return -1;
	} else if (!strcmp(key, "duration_seconds")) {
		if (get_int(r, v, key, 1, &f->duration))
			return -1;
		f->have_duration = true;
	} else if (!strcmp(key, "pid")) {	/* cpa's extension */
		if (get_int(r, v, key, 1, &f->pid))
			return -1;
		f->have_pid = true;
	} else if (what == BODY_CREATE && !strcmp(key, "hostname")) {
		if (get_string(r, v, key, SPEC_HOSTNAME_MAX, true, &f->host))
			return -1;
	} else if (what == BODY_OPERATION && !strcmp(key, "request_id")) {
		if (get_string(r, v, key, SPEC_ID_MAX, true, &s))
			return -1;
		snprintf(req->request_id, sizeof(req->request_id), "%s", s);
	} else if (what == BODY_OPERATION && !strcmp(key, "kind")) {
		static const char *const kinds[] = { "profiling", "tracing" };

		if (get_string(r, v, key, 16, true, &s) ||
		    enum_value(r, key, s, kinds, 2) < 0)
			return -1;
		snprintf(req->kind, sizeof(req->kind), "%s", s);
	} else if (what == BODY_OPERATION && !strcmp(key, "spec")) {
		if (!json_object_is_type(v, json_type_object))
			return bad(r, "spec: expected an object");
		*nested = v;
	} else {
		return bad(r, "unknown field '%.100s'", key);
	}
	return 0;
}

static int check_spec(struct reading *r, enum spec_body what,
		      struct fields *f, struct job_spec *spec,
		      const struct spec_request *req)
{
	const struct capability *cap = NULL;
	int i;

	/* 1: the schema's required fields */
	if (what == BODY_OPERATION && !req->request_id[0])
		return bad(r, "request_id: missing");
	if (what == BODY_OPERATION && !req->kind[0])
		return bad(r, "kind: missing");
	if (!f->type)
		return bad(r, "type: missing");
	if (what == BODY_OPERATION && !strcmp(req->kind, "tracing"))
		return 0;	/* its spec is {type} alone */
	if (enum_value(r, "type", f->type, type_names, 2) < 0)
		return -1;
	if (!f->lang)
		return bad(r, "language: missing");
	if (!f->mode)
		return bad(r, "mode: missing");
	if (!f->scope)
		return bad(r, "scope: missing");
	if (!f->have_duration)
		return bad(r, "duration_seconds: missing");
	if (what == BODY_CREATE && !f->host)
		return bad(r, "hostname: missing");
	/* 2: hostname and duration */
	if (what == BODY_CREATE && !trimmed(f->host))
		return bad(r, "hostname must be a non-empty trimmed value");
	if (f->duration > SPEC_MAX_DURATION)
		return bad(r, "duration_seconds is outside the supported "
			   "range (1 to %d on cpa-serve)", SPEC_MAX_DURATION);
	/* 3: scope and its target */
	spec->scope = (enum job_scope)spec_find_scope(f->scope);
	if (spec->scope != SCOPE_CONTAINER && f->cid)
		return bad(r, "container id must be empty for %s scope",
			   f->scope);
	if (spec->scope == SCOPE_CONTAINER && !f->cid)
		return bad(r, "container id is required for container scope");
	if (spec->scope == SCOPE_CONTAINER && !container_id_ok(f->cid))
		return bad(r, "container_id: expected 1 to 64 lowercase hex "
			   "digits");
	if (spec->scope != SCOPE_PID && f->have_pid)
		return bad(r, "pid must be empty for %s scope", f->scope);
	if (spec->scope == SCOPE_PID && !f->have_pid)
		return bad(r, "pid is required for pid scope");
	if (f->have_pid && f->pid > 4194304)
		return bad(r, "pid: %lld is not a pid", (long long)f->pid);
	/* 4: type x language x mode, binary match, scope support */
	spec->lang = (enum job_lang)spec_find_lang(f->lang);
	for (size_t k = 0; k < n_capabilities; k++)
		if (!strcmp(capabilities[k].type, f->type) &&
		    capabilities[k].lang == spec->lang)
			cap = &capabilities[k];
	if (!cap)
		return bad(r, "profiling type \"%s\" is not supported for "
			   "language \"%s\"", f->type, f->lang);
	for (i = 0; i < 5 && cap->modes[i]; i++)
		if (!strcmp(cap->modes[i], f->mode))
			break;
	if (i == 5 || !cap->modes[i])
		return bad(r, "profiling mode \"%s\" is not supported for type "
			   "\"%s\" and language \"%s\"", f->mode, f->type,
			   f->lang);
	if (f->bin && !cap->binary_match)
		return bad(r, "binary match path is not supported for type "
			   "\"%s\" and language \"%s\"", f->type, f->lang);
	if (f->bin && f->bin[0] != '/')
		return bad(r, "binary_match_path: expected an absolute path");
	if (!cap->scopes[spec->scope])
		return bad(r, "profiling job does not support scope \"%s\"",
			   f->scope);
	spec->mode = (unsigned)spec_find_mode(f->type, f->mode);
	if (f->have_freq && job_modes[spec->mode].how != HOW_ONCPU)
		return bad(r, "freq: mode \"%s\" does not sample at a "
			   "frequency", f->mode);
	if (f->have_freq && f->freq > SPEC_MAX_FREQ)
		return bad(r, "freq: at most %d", SPEC_MAX_FREQ);
	spec->duration_s = (uint64_t)f->duration;
	spec->pid = (uint32_t)f->pid;
	spec->freq = f->have_freq ? (unsigned)f->freq : SPEC_DEFAULT_FREQ;
	spec->has_freq = f->have_freq;
	if (f->cid)
		snprintf(spec->container_id, sizeof(spec->container_id), "%s",
			 f->cid);
	if (f->bin)
		snprintf(spec->binary_match_path,
			 sizeof(spec->binary_match_path), "%s", f->bin);
	if (f->host)
		snprintf(spec->hostname, sizeof(spec->hostname), "%s", f->host);
	return 0;
}

static int read_fields(struct reading *r, enum spec_body what,
		       json_object *obj, struct job_spec *spec,
		       struct spec_request *req)
{
	struct fields f = { 0 };
	json_object *nested = NULL;

	json_object_object_foreach(obj, key, v)
		if (top_field(r, what, key, v, &f, req, &nested))
			return -1;
	if (nested) {
		json_object_object_foreach(nested, nkey, nv) {
			int rc = spec_field(r, nkey, nv, &f, false);

			if (rc < 0)
				return -1;
			if (rc > 0)
				return bad(r, "unknown field 'spec.%.100s'",
					   nkey);
		}
	} else if (what == BODY_OPERATION) {
		return bad(r, "spec: missing");
	}
	return check_spec(r, what, &f, spec, req);
}

int spec_parse(enum spec_body what, const char *body, size_t len,
	       struct job_spec *spec, struct spec_request *req, char *err,
	       size_t errlen)
{
	struct reading r = { err, errlen };
	struct spec_request unused;
	struct json_tokener *tok;
	json_object *obj;
	size_t end;
	int rc;

	memset(spec, 0, sizeof(*spec));
	if (!req)
		req = &unused;
	memset(req, 0, sizeof(*req));
	/* An empty body may come as a NULL pointer, which memchr and the
	 * tokener must not see. */
	if (len == 0)
		return bad(&r, "byte 0: the JSON body ends early");
	if (memchr(body, 0, len))
		return bad(&r, "byte %zu: NUL in the body",
			   (size_t)((const char *)memchr(body, 0, len) - body));
	tok = json_tokener_new_ex(BODY_MAX_DEPTH);
	if (!tok)
		return bad(&r, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, body, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (!obj) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		json_tokener_free(tok);
		if (e == json_tokener_continue)
			return bad(&r, "byte %zu: the JSON body ends early",
				   len);
		return bad(&r, "byte %zu: bad JSON: %s", end,
			   json_tokener_error_desc(e));
	}
	json_tokener_free(tok);
	while (end < len && isspace((unsigned char)body[end]))
		end++;
	if (end < len)
		rc = bad(&r, "byte %zu: data after the JSON object", end);
	else if (!json_object_is_type(obj, json_type_object))
		rc = bad(&r, "byte 0: expected a JSON object");
	else
		rc = read_fields(&r, what, obj, spec, req);
	json_object_put(obj);
	return rc;
}
