/* SPDX-License-Identifier: MIT */
/*
 * A minimal unit-test harness that speaks TAP, as the bats suites do, so
 * that automake's TAP driver counts each check on its own: CHECK prints
 * "ok N - FILE:LINE: CONDITION" or "not ok N - ..." and goes on; unit_done
 * prints the plan and exits non-zero on any failure. A failure's details
 * follow it as "# " lines.
 */
#ifndef CPA_UNIT_H
#define CPA_UNIT_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int unit_n, unit_fail;

/* One check's result: ok, where, and what it checked (printf format). */
static inline void __attribute__((format(printf, 4, 5)))
unit_report(int ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	const char *in_tree = strstr(file, "tests/unit/");

	unit_n++;
	if (!ok)
		unit_fail++;
	printf("%sok %d - %s:%d: ", ok ? "" : "not ", unit_n,
	       in_tree ? in_tree : file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* A failure's details, after its "not ok" line. */
static inline void __attribute__((format(printf, 1, 2)))
unit_diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

#define CHECK(cond) unit_report(!!(cond), __FILE__, __LINE__, "%s", #cond)

#define CHECK_STR(a, b)                                                      \
	do {                                                                 \
		const char *a_ = (a), *b_ = (b);                             \
		int ok_ = a_ && b_ && !strcmp(a_, b_);                       \
		unit_report(ok_, __FILE__, __LINE__, "%s == %s", #a, #b);    \
		if (!ok_)                                                    \
			unit_diag("'%s' != '%s'", a_ ? a_ : "(null)",        \
				  b_ ? b_ : "(null)");                       \
	} while (0)

static inline int unit_done(const char *name)
{
	printf("1..%d\n# %s: %d passed, %d failed\n", unit_n, name,
	       unit_n - unit_fail, unit_fail);
	return unit_fail ? 1 : 0;
}

#endif
