/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "log.h"

static int fail(char *err, size_t errlen, const char *s, const char *at,
		const char *what)
{
	return cpa_fail(err, errlen, "'%s': %s at character %d", s, what,
			(int)(at - s) + 1);
}

static const char *read_cpu(const char *p, unsigned *cpu)
{
	if (!isdigit((unsigned char)*p))
		return NULL;
	unsigned long v = 0;
	while (isdigit((unsigned char)*p)) {
		v = v * 10 + (unsigned long)(*p++ - '0');
		if (v >= CPA_CPUSET_MAX)
			return NULL;
	}
	*cpu = (unsigned)v;
	return p;
}

int cpa_cpuset_parse(const char *s, struct cpa_cpuset *set, char *err,
		     size_t errlen)
{
	memset(set, 0, sizeof(*set));
	const char *p = s;
	/* The kernel ends its files with a newline; accept one. */
	size_t len = strlen(s);
	if (len && s[len - 1] == '\n')
		len--;
	const char *end = s + len;
	if (p == end)
		return fail(err, errlen, s, p, "empty CPU list");
	while (p < end) {
		unsigned lo, hi;
		const char *q = read_cpu(p, &lo);
		if (!q)
			return fail(err, errlen, s, p, "expected a CPU number "
				    "below 4096");
		hi = lo;
		if (q < end && *q == '-') {
			const char *r = read_cpu(q + 1, &hi);
			if (!r)
				return fail(err, errlen, s, q + 1, "expected a "
					    "CPU number below 4096");
			if (hi < lo)
				return fail(err, errlen, s, q + 1, "range "
					    "ends before it starts");
			q = r;
		}
		for (unsigned c = lo; c <= hi; c++)
			cpa_cpuset_add(set, c);
		if (q < end && *q != ',')
			return fail(err, errlen, s, q, "expected ',' or '-'");
		p = q < end ? q + 1 : q;
		if (q < end && p == end)
			return fail(err, errlen, s, p, "trailing ','");
	}
	return 0;
}

void cpa_cpuset_add(struct cpa_cpuset *set, unsigned cpu)
{
	if (cpu < CPA_CPUSET_MAX)
		set->bits[cpu / 64] |= 1ull << (cpu % 64);
}

unsigned cpa_cpuset_count(const struct cpa_cpuset *set)
{
	unsigned n = 0;
	for (size_t i = 0; i < CPA_CPUSET_MAX / 64; i++)
		n += (unsigned)__builtin_popcountll(set->bits[i]);
	return n;
}

int cpa_cpuset_online(struct cpa_cpuset *set)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return cpa_cpuset_parse(buf, set, NULL, 0);
}
