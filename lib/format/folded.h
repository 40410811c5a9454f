/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * Folded stack text, as flamegraph.pl and the stackcollapse scripts write
 * it: "frame;frame;...;leaf COUNT", or "... COUNT1 COUNT2" for a
 * differential profile. Root first. Counts are non-negative integers.
 */
#ifndef CPA_FOLDED_H
#define CPA_FOLDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct cpa_folded_line {
	const char *stack;	/* "a;b;c", not NUL-terminated */
	size_t stack_len;
	uint64_t count;
	uint64_t count2;	/* second column, when two_counts */
	bool two_counts;
};

/*
 * Parses one line (without its newline; a trailing '\r' is ignored).
 * Returns 1 for a line, 0 for a blank line or '#' comment, -1 with err set
 * to what is wrong when the line is malformed (the caller adds the input
 * name and line number).
 */
int cpa_folded_parse(const char *line, size_t len, struct cpa_folded_line *out,
		     char *err, size_t errlen);

/*
 * The frames of a folded stack, root first, one per call:
 *
 *	const char *p = stack, *f;
 *	size_t len;
 *	while (cpa_folded_frame(&p, stack + stack_len, &f, &len))
 *		...
 *
 * An empty frame (";;") comes out with len 0; flamegraph.pl draws it, and
 * the tools name it "[unknown]". Returns false after the last frame.
 */
static inline bool cpa_folded_frame(const char **p, const char *end,
				    const char **frame, size_t *len)
{
	if (!*p)
		return false;
	const char *semi = memchr(*p, ';', (size_t)(end - *p));
	*frame = *p;
	*len = (size_t)((semi ? semi : end) - *p);
	*p = semi ? semi + 1 : NULL;
	return true;
}

/* Reads lines of any length from f; *buf and *cap as for getline(). The
 * newline is stripped. Returns the length, or -1 at EOF or error. */
long cpa_read_line(FILE *f, char **buf, size_t *cap);

#endif
