/* SPDX-License-Identifier: MIT */
/*
 * --format pprof: every stack of the merged profile, with its weight and
 * sample type, to lib/format/pprof.c, which builds the profile as it does for
 * cpa-query and writes gzipped profile.proto for go tool pprof,
 * Pyroscope and Grafana. From a stream each stack comes once per event
 * kind and label set (pid, tid, comm, ...), so the profile can be sliced
 * by them; folded text has neither.
 */
#include <stdlib.h>

#include "log.h"
#include "pprof.h"
#include "render.h"

/* Root-first frame names of node id into names; their count. */
static uint32_t stack_names(const struct tree *t, uint32_t id, uint32_t *path,
			    const char **names)
{
	uint32_t n = tree_path(t, id, path);

	for (uint32_t i = 0; i < n; i++)
		names[i] = tree_name_str(t, t->nodes[path[i]].name, NULL);
	return n;
}

/* The stream's samples, apart by kind and labels. */
static void add_labeled(struct cpa_pprof *pp, const struct profile *p,
			const struct render_opts *o, uint32_t *path,
			const char **names)
{
	uint32_t count = cpa_stacktab_count(p->pp_keys);
	struct cpa_pprof_label l[CPA_PPROF_SAMPLE_LABELS];

	for (uint32_t id = 1; id <= count; id++) {
		uint32_t nk;
		const uint32_t *k = cpa_stacktab_get(p->pp_keys, id, &nk);

		if (!p->pp_weight[id])
			continue;
		cpa_pprof_labels_of_ids(l, k + 2, p->pp_strings);
		uint32_t n = stack_names(&p->tree, k[0], path, names);
		int type = o->unit >= 0 ? cpa_pprof_unit_type(p->unit)
					: cpa_pprof_kind_type(k[1]);
		cpa_pprof_add(pp, type, names, n, p->pp_weight[id], l,
			      CPA_PPROF_SAMPLE_LABELS);
	}
}

int pprof_write(int fd, struct profile *p, const struct render_opts *o)
{
	const struct tree *t = &p->tree;
	/* CPU time only at a frequency the stream or --freq gives */
	uint64_t period = o->period_ns ? o->period_ns : p->period_ns;
	struct cpa_pprof *pp = cpa_pprof_new(period);
	uint32_t *path = cpa_malloc(((size_t)t->max_depth + 1) * sizeof(*path));
	const char **names = cpa_malloc(((size_t)t->max_depth + 1) *
					sizeof(*names));
	char err[256];
	int rc;

	if (p->pp_keys) {
		add_labeled(pp, p, o, path, names);
	} else {
		int type = cpa_pprof_unit_type(p->unit);
		for (uint32_t id = 1; id < t->n; id++) {
			if (!t->nodes[id].self)
				continue;
			uint32_t n = stack_names(t, id, path, names);
			cpa_pprof_add(pp, type, names, n, t->nodes[id].self,
				      NULL, 0);
		}
	}
	if (p->from_stream && p->start_ns)
		cpa_pprof_set_time(pp, p->start_ns, p->end_ns + p->interval_ns -
					       p->start_ns);
	rc = cpa_pprof_write(pp, fd, err, sizeof(err));
	if (rc < 0)
		cpa_err("%s: %s", o->output ? o->output : "<stdout>", err);
	free(path);
	free(names);
	cpa_pprof_free(pp);
	return rc;
}
