/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Prometheus's text exposition format (version 0.0.4), written once for
 * every exposition cpa makes: cpa-serve's /metrics and cpa monitor's
 * textfile. The conventions are the writer's, not each caller's:
 *
 *   - a family is opened once, with its HELP and TYPE lines, and all its
 *     samples follow it before the next family starts;
 *   - names are cpa_..., counters end in _total, quantities are in base
 *     units (seconds, bytes), never ms or KB: callers convert;
 *   - label values are escaped here (backslash, quote, newline), so any
 *     string (a host name, a comm) can be a label value;
 *   - a histogram's buckets are cumulative, end in le="+Inf", and come
 *     with _sum and _count.
 *
 * A label set is built into a struct cpa_promlabels with cpa_prom_label
 * and handed to the sample writers; NULL means no labels.
 */
#ifndef CPA_PROMTEXT_H
#define CPA_PROMTEXT_H

#include <stdint.h>
#include <stdio.h>

/* The Content-Type of an exposition over HTTP. */
#define CPA_PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct cpa_promlabels {
	char s[512];	/* key="value",... without the braces */
	size_t len;
	int cut;	/* a label did not fit and was left out */
};

/* Empties a label set. */
void cpa_prom_labels_init(struct cpa_promlabels *l);
/* Adds key="value", value escaped. */
void cpa_prom_label(struct cpa_promlabels *l, const char *key,
		    const char *value);

/* "# HELP name help" and "# TYPE name type": type is "counter",
 * "gauge" or "histogram". help is one line (a newline in it is
 * escaped). */
void cpa_prom_family(FILE *f, const char *name, const char *type,
		     const char *help);
/* One sample: name{labels} value. */
void cpa_prom_u64(FILE *f, const char *name, const struct cpa_promlabels *l,
		  uint64_t v);
void cpa_prom_double(FILE *f, const char *name,
		     const struct cpa_promlabels *l, double v);

/* A whole histogram sample of name (already opened as a histogram
 * family): for each of n upper bounds le[i] the count of observations at
 * or below it, counts[i] being those of bucket i alone (the writer sums
 * them), then le="+Inf" holding count, then name_sum and name_count.
 * count is at least the sum of counts (what lies above the last bound). */
void cpa_prom_histogram(FILE *f, const char *name,
			const struct cpa_promlabels *l, const double *le,
			const uint64_t *counts, unsigned n, double sum,
			uint64_t count);

#endif
