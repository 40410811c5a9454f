/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Regular expressions from untrusted hands (a query's --grep, an HTTP
 * client's grep=). glibc's regcomp copies a bounded repetition's subtree
 * once per count, so ((a{1,200}){1,200}){1,200} asks for eight million
 * nodes and gigabytes; a backreference makes matching exponential. A
 * pattern is therefore measured before it is compiled: its size with
 * every repetition expanded, its length, no backreferences.
 */
#ifndef CPA_REGBOUND_H
#define CPA_REGBOUND_H

#include <regex.h>
#include <stddef.h>

#define CPA_REGEX_MAX_LEN 1024		/* bytes of pattern */
#define CPA_REGEX_MAX_NODES 20000	/* atoms once repetitions expand */

/*
 * regcomp(re, pattern, cflags) for an extended (REG_EXTENDED) pattern
 * within the bounds above: 0, or -1 with the reason in err (a bound
 * passed, or regcomp's own message); re is compiled only on 0.
 */
int cpa_regcomp(regex_t *re, const char *pattern, int cflags, char *err,
		size_t errlen);

/* The pattern's size with repetitions expanded, saturated just past
 * CPA_REGEX_MAX_NODES; -1 for a backreference. */
long cpa_regex_cost(const char *pattern);

#endif
