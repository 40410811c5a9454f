/* SPDX-License-Identifier: MIT */
/*
 * Error reporting shared by every tool: one line on stderr, prefixed with
 * the program name, so a failure in a pipeline says which stage failed.
 * Exit codes: 0 success, 1 runtime or input error, 2 usage error.
 */
#ifndef CPA_LOG_H
#define CPA_LOG_H

#include <stdbool.h>

#define CPA_EXIT_FAILURE 1
#define CPA_EXIT_USAGE 2

void cpa_set_progname(const char *argv0);
const char *cpa_progname(void);
/* "prog: message" */
void cpa_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: warning: message" */
void cpa_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "prog: message" only when verbose was set */
void cpa_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cpa_set_verbose(bool on);
bool cpa_verbose(void);
/* cpa_err, then exit(1) */
void cpa_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* cpa_err, then exit(2): a bad option or option value */
void cpa_die_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* Formats "byte OFFSET: message" into err (for decoders that report
 * where input went wrong) and returns -1. */
int cpa_fail_at(char *err, unsigned long errlen, unsigned long long offset,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* malloc family that die on exhaustion with a clear message */
void *cpa_malloc(unsigned long n);
void *cpa_calloc(unsigned long n, unsigned long size);
void *cpa_realloc(void *p, unsigned long n);
char *cpa_strdup(const char *s);
char *cpa_strndup(const char *s, unsigned long n);

#endif
