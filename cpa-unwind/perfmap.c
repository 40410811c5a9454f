// SPDX-License-Identifier: MIT
/* Parsing JIT perf maps (/tmp/perf-PID.map); loading them is
 * perfmap_load.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "perfmap.h"

/* Parses a hex number (optional 0x) at *p, up to end. */
static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	uint64_t r = 0;
	const char *d = s;
	for (; s < end; s++) {
		unsigned c = (unsigned char)*s, x;
		if (c >= '0' && c <= '9')
			x = c - '0';
		else if (c >= 'a' && c <= 'f')
			x = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			x = c - 'A' + 10;
		else
			break;
		if (r >> 60)
			return false;	/* more than 64 bits */
		r = r << 4 | x;
	}
	if (s == d)
		return false;
	*p = s;
	*v = r;
	return true;
}

/* One line [p, eol) into t: false when it is malformed (or t is out of
 * memory). */
static bool parse_line(struct symtab *t, const char *p, const char *eol)
{
	const char *q = p;
	uint64_t start, size;
	bool ok = parse_hex(&q, eol, &start) && q < eol && *q == ' ' &&
		  (q++, parse_hex(&q, eol, &size)) && q < eol && *q == ' ' &&
		  ++q < eol && start + size >= start;
	if (!ok)
		return false;
	size_t nlen = (size_t)(eol - q);
	if (nlen && q[nlen - 1] == '\r')
		nlen--;
	return nlen > 0 && symtab_add(t, start, size, q, nlen) == 0;
}

size_t perfmap_add_lines(struct symtab *t, const char *buf, size_t len,
			 uint64_t limit, uint64_t *bad, bool *cut)
{
	const char *p = buf, *end = buf + len;
	*cut = false;
	while (p < end) {
		if (symtab_bytes(t) >= limit) {
			*cut = true;
			break;
		}
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;	/* the writer may be mid-line */
		if (nl > p && !parse_line(t, p, nl))
			(*bad)++;
		p = nl + 1;
	}
	return (size_t)(p - buf);
}

long perfmap_parse(struct perfmap *m, const char *buf, size_t len, char *err,
		   size_t errlen)
{
	symtab_free(&m->syms);
	m->bad_lines = 0;
	if (err && errlen)
		err[0] = '\0';
	const char *p = buf, *end = buf + len;
	for (unsigned long line = 1; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		if (eol > p && !parse_line(&m->syms, p, eol)) {
			if (m->bad_lines++ == 0 && err && errlen)
				snprintf(err, errlen, "line %lu: expected "
					 "'START SIZE NAME'", line);
		}
		p = nl ? nl + 1 : end;
	}
	symtab_finish_newest(&m->syms);
	return m->syms.n;
}

void perfmap_recheck(struct perfmap *m)
{
	m->reread = true;
	m->cut = false;
}

uint64_t perfmap_bytes(const struct perfmap *m)
{
	return m->bytes;
}

void perfmap_free(struct perfmap *m)
{
	struct budget *b = m->budget;
	perfmap_load_abandon(m);	/* may take the symbols with it */
	symtab_free(&m->syms);
	if (b && m->bytes)
		budget_charge(b, BUDGET_PERFMAP, -(int64_t)m->bytes);
	free(m->cred);
	memset(m, 0, sizeof(*m));
	m->budget = b;
}
