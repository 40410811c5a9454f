/* SPDX-License-Identifier: MIT */
/*
 * What a client may ask a job to be, in HUATUO's terms: the modes (one
 * row each: what cpa-capture does for it and the pprof sample type it
 * makes), the capability table (type x language: modes, scopes, binary
 * match), and the strict reading of a create body (POST /v1/profiling)
 * or a node start request (POST /v1/operations) into a job_spec, in the
 * contract's validation order. A new mode or language is a row.
 */
#ifndef CPA_SERVE_SPEC_H
#define CPA_SERVE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum job_lang { LANG_C, LANG_CXX, LANG_GO, LANG_JAVA, LANG_PYTHON, N_LANGS };
extern const char *const lang_names[N_LANGS];

enum job_scope { SCOPE_HOST, SCOPE_CONTAINER, SCOPE_PID, N_SCOPES };
extern const char *const scope_names[N_SCOPES];

/* How a mode asks cpa-capture for its events. */
enum mode_how { HOW_ONCPU, HOW_ARGS, HOW_JAVA };

struct job_mode {
	const char *type;		/* "cpu", "memory" */
	const char *mode;		/* HUATUO's name, or cpa's extension */
	enum mode_how how;
	const char *capture_args[3];	/* HOW_ARGS: the options it adds;
					 * HOW_JAVA: the option taking pids */
	/* the pprof sample type, and Pyroscope's profile type id */
	const char *sample_type, *sample_unit;
	const char *profile_type;
};

extern const struct job_mode job_modes[];
extern const size_t n_job_modes;

/* One row of GET /v1/profiling/capabilities. */
struct capability {
	const char *type;
	enum job_lang lang;
	const char *modes[5];
	bool binary_match;
	bool scopes[N_SCOPES];
};

extern const struct capability capabilities[];
extern const size_t n_capabilities;

#define SPEC_MAX_DURATION (7 * 86400)
#define SPEC_DEFAULT_FREQ 49
#define SPEC_MAX_FREQ 1000
#define SPEC_CONTAINER_ID_MAX 64
#define SPEC_HOSTNAME_MAX 255
#define SPEC_PATH_MAX 1024
#define SPEC_ID_MAX 128

struct job_spec {
	unsigned mode;			/* index in job_modes */
	enum job_lang lang;
	enum job_scope scope;
	uint32_t pid;			/* SCOPE_PID */
	char container_id[SPEC_CONTAINER_ID_MAX + 1];	/* SCOPE_CONTAINER */
	char binary_match_path[SPEC_PATH_MAX + 1];	/* "" when unused */
	char hostname[SPEC_HOSTNAME_MAX + 1];
	uint64_t duration_s;
	unsigned freq;
	bool has_freq;			/* asked for (oncpu only) */
};

/* What spec_parse reads: a create body, or a node start request (whose
 * request_id, kind and nested spec it also reads). */
enum spec_body { BODY_CREATE, BODY_OPERATION };

struct spec_request {
	char request_id[SPEC_ID_MAX + 1];	/* BODY_OPERATION */
	char kind[16];				/* BODY_OPERATION */
};

/*
 * Reads a request body of len bytes in the contract's order (JSON and
 * schema, then hostname and duration, scope and container, then type x
 * language x mode, binary match and scope support). -1 with the message
 * in err on any refusal (all are invalid_request); the hostname is not
 * compared with this host's here.
 */
int spec_parse(enum spec_body what, const char *body, size_t len,
	       struct job_spec *spec, struct spec_request *req, char *err,
	       size_t errlen);

/* The target a per-target quota counts: "host", "pid:N", "container:ID" */
void spec_target(const struct job_spec *spec, char *out, size_t outlen);

/* Index of a name in its table, or -1. */
int spec_find_mode(const char *type, const char *mode);
int spec_find_scope(const char *name);
int spec_find_lang(const char *name);

/* Whether s is a request id cpa-serve takes: 1 to SPEC_ID_MAX of
 * [A-Za-z0-9._-], not starting with '.', so that it can name the job's
 * directory. */
bool spec_id_valid(const char *s);

/* The aggregation window of a job: the configured one, or its whole
 * duration for Python (as HUATUO's profiler has it). */
uint64_t spec_window_s(const struct job_spec *spec, uint64_t configured);

#endif
