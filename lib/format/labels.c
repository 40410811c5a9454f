/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "labels.h"
#include "owner.h"

static const char *const label_names[] = {
	[CPA_LABEL_COMM] = "comm",
	[CPA_LABEL_PID] = "pid",
	[CPA_LABEL_TID] = "tid",
	[CPA_LABEL_THREAD] = "thread",
	[CPA_LABEL_CONTAINER] = "container",
	[CPA_LABEL_ENV] = "env",
	[CPA_LABEL_CPU] = "cpu",
	[CPA_LABEL_POD] = "pod",
	[CPA_LABEL_CGROUP] = "cgroup",
	[CPA_LABEL_CPA] = "cpa",
	[CPA_LABEL_PROCESS] = "process",
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
	out->kind_at = 0;
	if (!strcmp(spec, "none") || !*spec)
		return 0;
	const char *p = spec;
	while (*p) {
		size_t len = strcspn(p, ",");
		int found = -1;
		if (len == 4 && !strncmp(p, "kind", 4)) {
			out->kind_at = out->n;
			p += len + (p[len] == ',');
			continue;
		}
		for (size_t i = 0; i < sizeof(label_names) / sizeof(*label_names);
		     i++)
			if (strlen(label_names[i]) == len &&
			    !strncmp(p, label_names[i], len))
				found = (int)i;
		if (found < 0 || out->n == CPA_LABELS_MAX) {
			snprintf(err, errlen,
				 found < 0 ? "unknown label '%.*s' (known: comm, "
					     "pid, tid, thread, container, pod, "
					     "cgroup, env, cpu, process, cpa, "
					     "kind, or none)"
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

/* The container-or-cgroup label as the container, pod or cgroup root. */
static void owner_root(enum cpa_label which, const char *v, cpa_root_fn fn,
		       void *ctx)
{
	if (!v || !*v)
		return;
	if (!cpa_label_is_cgroup(v)) {	/* a container name recorded as is */
		if (which == CPA_LABEL_CONTAINER)
			fn("container", v, ctx);
		return;
	}
	if (which == CPA_LABEL_CGROUP) {
		fn("cgroup", v, ctx);
		return;
	}
	struct cpa_owner o;
	cpa_owner_parse(v, &o);
	if (which == CPA_LABEL_CONTAINER && o.container[0])
		fn("container", o.container, ctx);
	else if (which == CPA_LABEL_POD && o.pod[0])
		fn("pod", o.pod, ctx);
}

void cpa_sample_roots(const struct cpa_labels *labels, const struct cpa_dict *d,
		      const struct cpa_sample *s, cpa_root_fn fn, void *ctx)
{
	char num[32];
	const char *v;
	const char *marker = cpa_kind_marker(s->kind);

	for (unsigned i = 0; i <= labels->n; i++) {
		if (i == labels->kind_at && marker)
			fn(NULL, marker, ctx);
		if (i == labels->n)
			break;
		switch (labels->order[i]) {
		case CPA_LABEL_COMM:
			v = cpa_dict_string(d, s->comm_id, NULL);
			fn(NULL, v && *v ? v : "[unknown]", ctx);
			break;
		case CPA_LABEL_PID:
			snprintf(num, sizeof(num), "%" PRIu32, s->pid);
			fn("pid", num, ctx);
			break;
		case CPA_LABEL_TID:
			snprintf(num, sizeof(num), "%" PRIu32, s->tid);
			fn("tid", num, ctx);
			break;
		case CPA_LABEL_THREAD:
			v = cpa_dict_string(d, s->thread_id, NULL);
			if (v && *v)
				fn("thread", v, ctx);
			break;
		case CPA_LABEL_CONTAINER:
		case CPA_LABEL_POD:
		case CPA_LABEL_CGROUP:
			owner_root(labels->order[i],
				   cpa_dict_string(d, s->container_id, NULL), fn,
				   ctx);
			break;
		case CPA_LABEL_ENV:
			v = cpa_dict_string(d, s->env_id, NULL);
			if (v && *v)
				fn("env", v, ctx);
			break;
		case CPA_LABEL_CPU:
			snprintf(num, sizeof(num), "%" PRIu32, s->cpu);
			fn("cpu", num, ctx);
			break;
		case CPA_LABEL_PROCESS: {
			char proc[96];
			v = cpa_dict_string(d, s->comm_id, NULL);
			snprintf(proc, sizeof(proc), "process %" PRIu32 ":%s",
				 s->pid, v && *v ? v : "[unknown]");
			fn(NULL, proc, ctx);
			break;
		}
		case CPA_LABEL_CPA: {
			/* CPA's fixed-width metadata, its env SYSTEM
			 * when no key matched */
			char raw[384];
			const char *th = cpa_dict_string(d, s->thread_id, NULL);
			const char *co = cpa_dict_string(d, s->comm_id, NULL);
			const char *en = cpa_dict_string(d, s->env_id, NULL);
			snprintf(raw, sizeof(raw),
				 "%-15.15s%-15.15s-%" PRIu64 "-%" PRIu32 "-%"
				 PRIu32 "|%s", th ? th : "", co ? co : "",
				 s->cgroup_id, s->cpu, s->pid,
				 en && *en ? en : "SYSTEM");
			fn(NULL, raw, ctx);
			break;
		}
		}
	}
}

struct line_ctx {
	FILE *f;
	bool first;
};

static void put_label(const char *tag, const char *val, void *ctx)
{
	struct line_ctx *c = ctx;

	if (!c->first)
		fputc_unlocked(';', c->f);
	c->first = false;
	if (tag)
		fprintf(c->f, "[%s %s]", tag, val);
	else
		fputs_unlocked(val, c->f);
}

int cpa_folded_write_sample(FILE *f, const struct cpa_labels *labels,
			    const struct cpa_dict *d,
			    const struct cpa_sample *s)
{
	uint32_t n;
	const uint32_t *frames = cpa_dict_stack(d, s->stack_id, &n);
	struct line_ctx c = { f, true };

	if (!frames)
		return -1;
	cpa_sample_roots(labels, d, s, put_label, &c);
	for (uint32_t i = 0; i < n; i++)
		put_label(NULL, cpa_dict_string(d, frames[i], NULL), &c);
	if (c.first)
		fputs_unlocked("[empty]", f);
	fprintf(f, " %" PRIu64 "\n", s->weight);
	return 0;
}
