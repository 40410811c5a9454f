/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Error reporting shared by every tool: one line on stderr, prefixed with
 * the program name, so a failure in a pipeline says which stage failed.
 * Exit codes: 0 success, 1 runtime or input error, 2 usage error.
 */
#ifndef CPA_LOG_H
#define CPA_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

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

/*
 * Errors a function hands back to its caller: the message goes into
 * err (errlen bytes, may be NULL) and the function returns -1, so a
 * decoder says `return cpa_fail(err, errlen, "...")`. The tool then
 * prints it with cpa_err as "prog: INPUT: byte N: message".
 */
int cpa_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cpa_vfail(char *err, size_t errlen, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
/* "byte OFFSET: message" */
int cpa_fail_at(char *err, size_t errlen, unsigned long long offset,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* "INPUT: byte OFFSET: message" */
int cpa_fail_in(char *err, size_t errlen, const char *input,
		unsigned long long offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int cpa_vfail_in(char *err, size_t errlen, const char *input,
		 unsigned long long offset, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
/* "message: strerror(e)", returning -e */
int cpa_fail_errno(char *err, size_t errlen, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Prints "prog: INPUT: byte OFFSET: message" now. */
void cpa_err_at(const char *input, unsigned long long offset,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* malloc family that die on exhaustion with a clear message */
void *cpa_malloc(unsigned long n);
void *cpa_calloc(unsigned long n, unsigned long size);
void *cpa_realloc(void *p, unsigned long n);
char *cpa_strdup(const char *s);
char *cpa_strndup(const char *s, unsigned long n);

#endif
