/* SPDX-License-Identifier: MIT */
/*
 * What a client may ask a job to be: the table of job types and modes,
 * and the strict reading of a POST /v1/profiling body into a job_spec.
 */
#ifndef CPA_SERVE_SPEC_H
#define CPA_SERVE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One row per job a client can ask for. A new mode is one row. */
struct job_mode {
	const char *type;		/* "cpu", "memory" */
	const char *mode;		/* "oncpu", "offcpu", ... */
	const char *capture_args[4];	/* cpa-capture options it adds */
	bool needs_bpf;			/* unavailable on the perf backend */
	bool has_freq;			/* takes freq (timer sampling) */
};

extern const struct job_mode job_modes[];
extern const size_t n_job_modes;

enum job_scope { SCOPE_HOST, SCOPE_PID, SCOPE_CONTAINER };
extern const char *const scope_names[3];

#define SPEC_MAX_DURATION 3600
#define SPEC_DEFAULT_DURATION 10
#define SPEC_DEFAULT_FREQ 49
#define SPEC_MAX_FREQ 1000
#define SPEC_CONTAINER_ID_MAX 64

struct job_spec {
	unsigned mode;			/* index in job_modes */
	enum job_scope scope;
	uint32_t pid;			/* SCOPE_PID */
	char container_id[SPEC_CONTAINER_ID_MAX + 1];	/* SCOPE_CONTAINER */
	unsigned duration_s;
	unsigned freq;
};

/*
 * Reads a request body of len bytes. On error returns -1 with a message
 * in err and the offending field's name in field (empty when the body is
 * not JSON, or not an object).
 */
int spec_parse(const char *body, size_t len, struct job_spec *spec,
	       char *err, size_t errlen, char *field, size_t fieldlen);

/* The target a per-target quota counts: "host", "pid:N", "container:ID" */
void spec_target(const struct job_spec *spec, char *out, size_t outlen);

/* Index of (type, mode) in job_modes, or -1. */
int spec_find_mode(const char *type, const char *mode);
int spec_find_scope(const char *name);

#endif
