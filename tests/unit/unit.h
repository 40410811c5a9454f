/* SPDX-License-Identifier: MIT */
/* A minimal unit-test harness: CHECK records a failure and goes on; the
 * program prints "N passed, N failed" and exits non-zero on failure. */
#ifndef CPA_UNIT_H
#define CPA_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_pass, unit_fail;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (cond) {                                                  \
			unit_pass++;                                         \
		} else {                                                     \
			unit_fail++;                                         \
			fprintf(stderr, "%s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                  \
		}                                                            \
	} while (0)

#define CHECK_STR(a, b)                                                      \
	do {                                                                 \
		const char *a_ = (a), *b_ = (b);                             \
		if (a_ && b_ && !strcmp(a_, b_)) {                           \
			unit_pass++;                                         \
		} else {                                                     \
			unit_fail++;                                         \
			fprintf(stderr, "%s:%d: '%s' != '%s'\n", __FILE__,   \
				__LINE__, a_ ? a_ : "(null)",                \
				b_ ? b_ : "(null)");                         \
		}                                                            \
	} while (0)

static inline int unit_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, unit_pass, unit_fail);
	return unit_fail ? 1 : 0;
}

#endif
