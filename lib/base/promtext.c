/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "promtext.h"

void cpa_prom_labels_init(struct cpa_promlabels *l)
{
	l->s[0] = 0;
	l->len = 0;
	l->cut = 0;
}

void cpa_prom_label(struct cpa_promlabels *l, const char *key,
		    const char *value)
{
	char tmp[sizeof(l->s)];
	size_t n = (size_t)snprintf(tmp, sizeof(tmp), "%s%s=\"",
				    l->len ? "," : "", key);
	const char *p = value;

	for (; *p && n + 3 < sizeof(tmp); p++) {
		if (*p == '\\' || *p == '"' || *p == '\n')
			tmp[n++] = '\\';
		tmp[n++] = *p == '\n' ? 'n' : *p;
	}
	/* all of it or nothing: a value cut short would name another
	 * series */
	if (*p || l->len + n + 2 > sizeof(l->s)) {
		l->cut = 1;
		return;
	}
	tmp[n++] = '"';
	memcpy(l->s + l->len, tmp, n);
	l->len += n;
	l->s[l->len] = 0;
}

void cpa_prom_family(FILE *f, const char *name, const char *type,
		     const char *help)
{
	fprintf(f, "# HELP %s ", name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			fputs("\\\\", f);
		else if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	fprintf(f, "\n# TYPE %s %s\n", name, type);
}

static void put_name(FILE *f, const char *name, const struct cpa_promlabels *l,
		     const char *extra)
{
	fputs(name, f);
	if ((l && l->len) || extra) {
		fputc('{', f);
		if (l && l->len)
			fputs(l->s, f);
		if (extra)
			fprintf(f, "%s%s", l && l->len ? "," : "", extra);
		fputc('}', f);
	}
	fputc(' ', f);
}

void cpa_prom_u64(FILE *f, const char *name, const struct cpa_promlabels *l,
		  uint64_t v)
{
	put_name(f, name, l, NULL);
	fprintf(f, "%" PRIu64 "\n", v);
}

static void put_double(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else
		fprintf(f, "%.10g", v);
}

void cpa_prom_double(FILE *f, const char *name,
		     const struct cpa_promlabels *l, double v)
{
	put_name(f, name, l, NULL);
	put_double(f, v);
	fputc('\n', f);
}

void cpa_prom_histogram(FILE *f, const char *name,
			const struct cpa_promlabels *l, const double *le,
			const uint64_t *counts, unsigned n, double sum,
			uint64_t count)
{
	char series[200], bound[64];
	uint64_t cum = 0;

	snprintf(series, sizeof(series), "%s_bucket", name);
	for (unsigned i = 0; i < n; i++) {
		cum += counts[i];
		snprintf(bound, sizeof(bound), "le=\"%.10g\"", le[i]);
		put_name(f, series, l, bound);
		fprintf(f, "%" PRIu64 "\n", cum);
	}
	if (count < cum)
		count = cum;
	put_name(f, series, l, "le=\"+Inf\"");
	fprintf(f, "%" PRIu64 "\n", count);
	snprintf(series, sizeof(series), "%s_sum", name);
	cpa_prom_double(f, series, l, sum);
	snprintf(series, sizeof(series), "%s_count", name);
	cpa_prom_u64(f, series, l, count);
}
