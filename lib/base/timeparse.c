/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timeparse.h"

/* Reads digits with an optional fraction as a value scaled by 1e9. */
static const char *read_number(const char *s, uint64_t *whole,
			       uint64_t *frac_ns)
{
	if (!isdigit((unsigned char)*s))
		return NULL;
	uint64_t w = 0;
	while (isdigit((unsigned char)*s)) {
		if (w > (UINT64_MAX - 9) / 10)
			return NULL;
		w = w * 10 + (uint64_t)(*s++ - '0');
	}
	uint64_t f = 0, scale = CPA_NSEC_PER_SEC;
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return NULL;
		while (isdigit((unsigned char)*s)) {
			scale /= 10;
			f += (uint64_t)(*s++ - '0') * scale;
		}
	}
	*whole = w;
	*frac_ns = f;
	return s;
}

int cpa_parse_duration_ns(const char *s, uint64_t *ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = {
		{"ns", 1}, {"us", 1000}, {"ms", 1000000},
		{"s", CPA_NSEC_PER_SEC}, {"m", 60 * CPA_NSEC_PER_SEC},
		{"h", 3600 * CPA_NSEC_PER_SEC},
		{"d", 86400 * CPA_NSEC_PER_SEC},
		{"w", 7 * 86400 * CPA_NSEC_PER_SEC},
	};
	if (!s || !*s)
		return -1;
	uint64_t total = 0;
	int parts = 0;
	while (*s) {
		uint64_t whole, frac;
		const char *p = read_number(s, &whole, &frac);
		if (!p)
			return -1;
		uint64_t unit = 0;
		size_t ulen = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t l = strlen(units[i].suffix);
			if (!strncmp(p, units[i].suffix, l) && l > ulen &&
			    !isalpha((unsigned char)p[l])) {
				unit = units[i].ns;
				ulen = l;
			}
		}
		if (!unit) {
			/* A bare number means seconds, and only alone. */
			if (*p || parts)
				return -1;
			unit = CPA_NSEC_PER_SEC;
		}
		if (whole > UINT64_MAX / unit)
			return -1;
		uint64_t v = whole * unit + (uint64_t)((double)frac / 1e9 * (double)unit);
		if (total > UINT64_MAX - v)
			return -1;
		total += v;
		s = p + ulen;
		parts++;
	}
	*ns = total;
	return 0;
}

static int read_fixed(const char **sp, int digits, int *out)
{
	const char *s = *sp;
	int v = 0;
	for (int i = 0; i < digits; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*sp = s + digits;
	*out = v;
	return 0;
}

/* HH:MM[:SS[.frac]] at *sp; fills tm and frac_ns. */
static int read_clock(const char **sp, struct tm *tm, uint64_t *frac_ns)
{
	const char *s = *sp;
	int h, m, sec = 0;
	*frac_ns = 0;
	if (read_fixed(&s, 2, &h) || *s++ != ':' || read_fixed(&s, 2, &m))
		return -1;
	if (*s == ':') {
		s++;
		if (read_fixed(&s, 2, &sec))
			return -1;
		if (*s == '.') {
			s++;
			uint64_t scale = CPA_NSEC_PER_SEC;
			if (!isdigit((unsigned char)*s))
				return -1;
			while (isdigit((unsigned char)*s)) {
				scale /= 10;
				*frac_ns += (uint64_t)(*s++ - '0') * scale;
			}
		}
	}
	if (h > 23 || m > 59 || sec > 60)
		return -1;
	tm->tm_hour = h;
	tm->tm_min = m;
	tm->tm_sec = sec;
	*sp = s;
	return 0;
}

static int to_ns(time_t t, uint64_t frac, uint64_t *out)
{
	if (t < 0)
		return -1;
	*out = (uint64_t)t * CPA_NSEC_PER_SEC + frac;
	return 0;
}

int cpa_parse_time(const char *s, uint64_t now_ns, uint64_t *out_ns)
{
	uint64_t d, whole, frac;
	if (!s || !*s)
		return -1;
	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (*s == '-' || *s == '+') {
		if (cpa_parse_duration_ns(s + 1, &d) < 0)
			return -1;
		if (*s == '-') {
			if (d > now_ns)
				return -1;
			*out_ns = now_ns - d;
		} else {
			*out_ns = now_ns + d;
		}
		return 0;
	}
	if (*s == '@' || (strspn(s, "0123456789") >= 9 &&
			  s[strspn(s, "0123456789")] != '-')) {
		const char *p = read_number(s + (*s == '@'), &whole, &frac);
		if (!p || *p || whole > UINT64_MAX / CPA_NSEC_PER_SEC - 1)
			return -1;
		*out_ns = whole * CPA_NSEC_PER_SEC + frac;
		return 0;
	}

	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *p = s;
	if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
	    p[2] == ':') {
		/* Today, local time. */
		time_t now = (time_t)(now_ns / CPA_NSEC_PER_SEC);
		localtime_r(&now, &tm);
		if (read_clock(&p, &tm, &frac) || *p)
			return -1;
		tm.tm_isdst = -1;
		return to_ns(mktime(&tm), frac, out_ns);
	}

	int y, mo, da;
	if (read_fixed(&p, 4, &y) || *p++ != '-' || read_fixed(&p, 2, &mo) ||
	    *p++ != '-' || read_fixed(&p, 2, &da))
		return -1;
	if (mo < 1 || mo > 12 || da < 1 || da > 31 || y < 1970)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = da;
	frac = 0;
	if (*p == 'T' || *p == ' ') {
		p++;
		if (read_clock(&p, &tm, &frac))
			return -1;
	}
	if (!*p) {
		tm.tm_isdst = -1;
		return to_ns(mktime(&tm), frac, out_ns);
	}
	long off = 0;
	if (*p == 'Z' && !p[1]) {
		off = 0;
	} else if ((*p == '+' || *p == '-')) {
		int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
		if (read_fixed(&p, 2, &oh))
			return -1;
		if (*p == ':')
			p++;
		if (*p && read_fixed(&p, 2, &om))
			return -1;
		if (*p || oh > 23 || om > 59)
			return -1;
		off = sign * (oh * 3600L + om * 60L);
	} else {
		return -1;
	}
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	return to_ns(t - off, frac, out_ns);
}

int cpa_parse_size(const char *s, uint64_t *bytes)
{
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	uint64_t mult = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1ull << 10; end++; break;
	case 'M': mult = 1ull << 20; end++; break;
	case 'G': mult = 1ull << 30; end++; break;
	case 'T': mult = 1ull << 40; end++; break;
	case '\0': break;
	case 'B': break;
	default: return -1;
	}
	if (mult > 1 && *end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > UINT64_MAX / mult)
		return -1;
	*bytes = v * mult;
	return 0;
}

void cpa_format_time(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / CPA_NSEC_PER_SEC);
	struct tm tm;
	localtime_r(&t, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%d %H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03u", base,
		 (unsigned)(ns % CPA_NSEC_PER_SEC / 1000000));
}
