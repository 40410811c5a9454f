/* SPDX-License-Identifier: MIT */
/*
 * A pattern's cost is counted as regcomp would build it: an atom is one
 * node, a group the sum of its branches, x* and x? one more than x, x+
 * two copies, x{m,n} n copies (m+1 when open). Counts saturate just past
 * the bound, so no pattern costs more than its own length to measure.
 */
#include <stdbool.h>
#include <string.h>

#include "log.h"
#include "regbound.h"

#define SAT ((long)CPA_REGEX_MAX_NODES + 1)

struct cursor {
	const char *s;
	bool backref;
};

static long sat_add(long a, long b)
{
	return a + b > SAT ? SAT : a + b;
}

static long sat_mul(long a, long b)
{
	if (a == 0 || b == 0)
		return 0;
	return a > SAT / b ? SAT : a * b;
}

static long alternation(struct cursor *c);

static void skip_bracket(struct cursor *c)
{
	const char *s = c->s + 1;

	if (*s == '^')
		s++;
	if (*s == ']')
		s++;
	while (*s && *s != ']') {
		if (*s == '[' && (s[1] == ':' || s[1] == '=' || s[1] == '.')) {
			char end = s[1];

			s += 2;
			while (*s && !(s[0] == end && s[1] == ']'))
				s++;
			if (*s)
				s += 2;
			continue;
		}
		s++;
	}
	c->s = *s ? s + 1 : s;
}

static long atom(struct cursor *c)
{
	long n;

	switch (*c->s) {
	case '(':
		c->s++;
		n = alternation(c);
		if (*c->s == ')')
			c->s++;
		return sat_add(n, 1);
	case '[':
		skip_bracket(c);
		return 1;
	case '\\':
		c->s++;
		if (*c->s >= '1' && *c->s <= '9')
			c->backref = true;
		if (*c->s)
			c->s++;
		return 1;
	default:
		c->s++;
		return 1;
	}
}

static long number(const char **s)
{
	long n = 0;

	while (**s >= '0' && **s <= '9') {
		n = sat_add(sat_mul(n, 10), **s - '0');
		(*s)++;
	}
	return n;
}

static long piece(struct cursor *c)
{
	long n = atom(c);

	for (;;) {
		const char *s = c->s;
		long lo, hi;

		if (*s == '*' || *s == '?') {
			n = sat_add(n, 1);
			c->s++;
		} else if (*s == '+') {
			n = sat_mul(n, 2);
			c->s++;
		} else if (*s == '{' && s[1] >= '0' && s[1] <= '9') {
			s++;
			lo = number(&s);
			hi = lo;
			if (*s == ',') {
				s++;
				hi = *s >= '0' && *s <= '9' ? number(&s) : lo + 1;
			}
			if (*s != '}')
				return n;	/* regcomp will say what is wrong */
			c->s = s + 1;
			n = sat_mul(n, hi > lo ? hi : lo > 0 ? lo : 1);
		} else {
			return n;
		}
	}
}

static long branch(struct cursor *c)
{
	long n = 0;

	while (*c->s && *c->s != '|' && *c->s != ')')
		n = sat_add(n, piece(c));
	return n;
}

static long alternation(struct cursor *c)
{
	long n = branch(c);

	while (*c->s == '|') {
		c->s++;
		n = sat_add(n, branch(c));
	}
	return n;
}

long cpa_regex_cost(const char *pattern)
{
	struct cursor c = { pattern, false };
	long n = 0;

	while (*c.s) {
		n = sat_add(n, alternation(&c));
		if (*c.s == ')')	/* unmatched: an ordinary character */
			c.s++;
	}
	return c.backref ? -1 : n;
}

int cpa_regcomp(regex_t *re, const char *pattern, int cflags, char *err,
		size_t errlen)
{
	size_t len = strlen(pattern);
	long cost;
	int rc;

	if (len > CPA_REGEX_MAX_LEN)
		return cpa_fail(err, errlen, "longer than %d bytes",
				CPA_REGEX_MAX_LEN);
	cost = cpa_regex_cost(pattern);
	if (cost < 0)
		return cpa_fail(err, errlen, "backreferences are not taken");
	if (cost > CPA_REGEX_MAX_NODES)
		return cpa_fail(err, errlen, "too complex: its repetitions "
				"expand past %d nodes", CPA_REGEX_MAX_NODES);
	rc = regcomp(re, pattern, cflags);
	if (rc) {
		char msg[128];

		regerror(rc, re, msg, sizeof(msg));
		return cpa_fail(err, errlen, "%s", msg);
	}
	return 0;
}
