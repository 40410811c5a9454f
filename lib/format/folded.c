/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "folded.h"

/* Parses the unsigned integer ending at line[end-1]; returns its start or
 * NULL. A count needs a space before it, as flamegraph.pl requires. */
static const char *count_before(const char *line, size_t end, uint64_t *v,
				char *err, size_t errlen, int *overflow)
{
	size_t i = end;
	while (i > 0 && line[i - 1] >= '0' && line[i - 1] <= '9')
		i--;
	if (i == end || i == 0 || (line[i - 1] != ' ' && line[i - 1] != '\t'))
		return NULL;
	if (end - i > 19) {
		*overflow = 1;
		snprintf(err, errlen, "count '%.*s' too large", (int)(end - i),
			 line + i);
		return NULL;
	}
	uint64_t x = 0;
	for (size_t k = i; k < end; k++)
		x = x * 10 + (uint64_t)(line[k] - '0');
	*v = x;
	return line + i;
}

int cpa_folded_parse(const char *line, size_t len, struct cpa_folded_line *out,
		     char *err, size_t errlen)
{
	if (len && line[len - 1] == '\r')
		len--;
	size_t lead = 0;
	while (lead < len && (line[lead] == ' ' || line[lead] == '\t'))
		lead++;
	if (lead == len || line[lead] == '#')
		return 0;
	while (len > lead && (line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;

	int overflow = 0;
	uint64_t c1;
	const char *p = count_before(line, len, &c1, err, errlen, &overflow);
	if (!p) {
		if (!overflow)
			snprintf(err, errlen, "no count at the end of the line");
		return -1;
	}
	size_t stack_end = (size_t)(p - line);
	while (stack_end > 0 &&
	       (line[stack_end - 1] == ' ' || line[stack_end - 1] == '\t'))
		stack_end--;
	out->two_counts = false;
	out->count = c1;
	out->count2 = 0;
	uint64_t c0;
	const char *q = count_before(line, stack_end, &c0, err, errlen,
				     &overflow);
	if (overflow)
		return -1;
	if (q) {
		/* "stack COUNT1 COUNT2": a differential line. */
		out->two_counts = true;
		out->count = c0;
		out->count2 = c1;
		stack_end = (size_t)(q - line);
		while (stack_end > 0 && (line[stack_end - 1] == ' ' ||
					 line[stack_end - 1] == '\t'))
			stack_end--;
	}
	if (stack_end <= lead) {
		snprintf(err, errlen, "empty stack before the count");
		return -1;
	}
	out->stack = line + lead;
	out->stack_len = stack_end - lead;
	return 1;
}

long cpa_read_line(FILE *f, char **buf, size_t *cap)
{
	ssize_t n = getline(buf, cap, f);
	if (n < 0)
		return -1;
	if (n > 0 && (*buf)[n - 1] == '\n')
		(*buf)[--n] = '\0';
	return (long)n;
}
