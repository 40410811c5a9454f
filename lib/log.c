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

int cpa_fail_at(char *err, unsigned long errlen, unsigned long long offset,
		const char *fmt, ...)
{
	char msg[192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "byte %llu: %s", offset, msg);
	return -1;
}
