/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char *progname = "cpa";
static bool verbose;

void cpa_set_progname(const char *argv0)
{
	const char *slash = argv0 ? strrchr(argv0, '/') : NULL;
	if (argv0)
		progname = slash ? slash + 1 : argv0;
}

const char *cpa_progname(void)
{
	return progname;
}

void cpa_set_verbose(bool on)
{
	verbose = on;
}

bool cpa_verbose(void)
{
	return verbose;
}

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	/* One write per line keeps lines of concurrent stages unmixed. */
	char line[1024];
	int n = snprintf(line, sizeof(line), "%s: %s", progname, prefix);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	/* A message is one line, whatever a path or name in it holds: no
	 * forged log lines, no terminal escapes (names themselves are
	 * made clean by lib/base/name.h; paths and raw text are not names). */
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	fprintf(stderr, "%s\n", line);
}

void cpa_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
}

void cpa_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void cpa_debug(const char *fmt, ...)
{
	if (!verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
}

void cpa_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
	exit(CPA_EXIT_FAILURE);
}

void cpa_die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("", fmt, ap);
	va_end(ap);
	exit(CPA_EXIT_USAGE);
}

static void *check(void *p, unsigned long n)
{
	if (!p && n)
		cpa_die("out of memory (allocating %lu bytes)", n);
	return p;
}

void *cpa_malloc(unsigned long n)
{
	return check(malloc(n ? n : 1), n ? n : 1);
}

void *cpa_calloc(unsigned long n, unsigned long size)
{
	if (size && n > (unsigned long)-1 / size)
		cpa_die("out of memory (allocating %lu x %lu bytes)", n, size);
	return check(calloc(n ? n : 1, size ? size : 1), n * size + 1);
}

void *cpa_realloc(void *p, unsigned long n)
{
	return check(realloc(p, n ? n : 1), n ? n : 1);
}

char *cpa_strdup(const char *s)
{
	return check(strdup(s), strlen(s) + 1);
}

char *cpa_strndup(const char *s, unsigned long n)
{
	return check(strndup(s, n), n + 1);
}

int cpa_vfail(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err && errlen)
		vsnprintf(err, errlen, fmt, ap);
	return -1;
}

int cpa_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cpa_vfail(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* "INPUT: byte N: " (INPUT only when given), then the message. */
int cpa_vfail_in(char *err, size_t errlen, const char *input,
		 unsigned long long offset, const char *fmt, va_list ap)
{
	if (!err || !errlen)
		return -1;
	int n = input ? snprintf(err, errlen, "%s: byte %llu: ", input, offset)
		      : snprintf(err, errlen, "byte %llu: ", offset);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	return -1;
}

int cpa_fail_at(char *err, size_t errlen, unsigned long long offset,
		const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cpa_vfail_in(err, errlen, NULL, offset, fmt, ap);
	va_end(ap);
	return -1;
}

int cpa_fail_in(char *err, size_t errlen, const char *input,
		unsigned long long offset, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cpa_vfail_in(err, errlen, input, offset, fmt, ap);
	va_end(ap);
	return -1;
}

int cpa_fail_errno(char *err, size_t errlen, int e, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cpa_fail(err, errlen, "%s: %s", msg, strerror(e));
	return -e;
}

void cpa_err_at(const char *input, unsigned long long offset,
		const char *fmt, ...)
{
	char line[768];
	va_list ap;
	va_start(ap, fmt);
	cpa_vfail_in(line, sizeof(line), input, offset, fmt, ap);
	va_end(ap);
	cpa_err("%s", line);
}
