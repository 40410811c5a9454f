/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "labels.h"

static const char *const label_names[] = {
	[CPA_LABEL_COMM] = "comm",
	[CPA_LABEL_PID] = "pid",
	[CPA_LABEL_TID] = "tid",
	[CPA_LABEL_THREAD] = "thread",
	[CPA_LABEL_CONTAINER] = "container",
	[CPA_LABEL_ENV] = "env",
	[CPA_LABEL_CPU] = "cpu",
};

void cpa_labels_default(struct cpa_labels *out)
{
	out->n = 1;
	out->order[0] = CPA_LABEL_COMM;
}

int cpa_labels_parse(const char *spec, struct cpa_labels *out, char *err,
		     size_t errlen)
{
	out->n = 0;
	if (!strcmp(spec, "none") || !*spec)
		return 0;
	const char *p = spec;
	while (*p) {
		size_t len = strcspn(p, ",");
		int found = -1;
		for (size_t i = 0; i < sizeof(label_names) / sizeof(*label_names);
		     i++)
			if (strlen(label_names[i]) == len &&
			    !strncmp(p, label_names[i], len))
				found = (int)i;
		if (found < 0 || out->n == CPA_LABELS_MAX) {
			snprintf(err, errlen,
				 found < 0 ? "unknown label '%.*s' (known: comm, "
					     "pid, tid, thread, container, env, "
					     "cpu, or none)"
					   : "too many labels at '%.*s'",
				 (int)len, p);
			return -1;
		}
		out->order[out->n++] = (enum cpa_label)found;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

static void put_label(FILE *f, const char *tag, const char *val, bool *first)
{
	if (!*first)
		fputc_unlocked(';', f);
	*first = false;
	if (tag)
		fprintf(f, "[%s %s]", tag, val);
	else
		fputs_unlocked(val, f);
}

int cpa_folded_write_sample(FILE *f, const struct cpa_labels *labels,
			    const struct cpa_dict *d,
			    const struct cpa_sample *s)
{
	uint32_t n;
	const uint32_t *frames = cpa_dict_stack(d, s->stack_id, &n);
	if (!frames)
		return -1;
	bool first = true;
	char num[32];
	const char *marker = cpa_kind_marker(s->kind);
	if (marker)
		put_label(f, NULL, marker, &first);
	for (unsigned i = 0; i < labels->n; i++) {
		const char *v;
		switch (labels->order[i]) {
		case CPA_LABEL_COMM:
			v = cpa_dict_string(d, s->comm_id, NULL);
			put_label(f, NULL, v && *v ? v : "[unknown]", &first);
			break;
		case CPA_LABEL_PID:
			snprintf(num, sizeof(num), "%" PRIu32, s->pid);
			put_label(f, "pid", num, &first);
			break;
		case CPA_LABEL_TID:
			snprintf(num, sizeof(num), "%" PRIu32, s->tid);
			put_label(f, "tid", num, &first);
			break;
		case CPA_LABEL_THREAD:
			v = cpa_dict_string(d, s->thread_id, NULL);
			if (v && *v)
				put_label(f, "thread", v, &first);
			break;
		case CPA_LABEL_CONTAINER:
			v = cpa_dict_string(d, s->container_id, NULL);
			if (v && *v)
				put_label(f, "container", v, &first);
			break;
		case CPA_LABEL_ENV:
			v = cpa_dict_string(d, s->env_id, NULL);
			if (v && *v)
				put_label(f, "env", v, &first);
			break;
		case CPA_LABEL_CPU:
			snprintf(num, sizeof(num), "%" PRIu32, s->cpu);
			put_label(f, "cpu", num, &first);
			break;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		put_label(f, NULL, cpa_dict_string(d, frames[i], NULL), &first);
	if (first)
		fputs_unlocked("[empty]", f);
	fprintf(f, " %" PRIu64 "\n", s->weight);
	return 0;
}
