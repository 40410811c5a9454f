/* SPDX-License-Identifier: MIT */
/*
 * --format pprof: every stack of the merged profile, with its weight and
 * unit, to lib/pprof.c, which builds the profile as it does for
 * cpa-query and writes gzipped profile.proto for go tool pprof,
 * Pyroscope and Grafana.
 */
#include <stdlib.h>

#include "log.h"
#include "pprof.h"
#include "render.h"

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

	for (uint32_t id = 1; id < t->n; id++) {
		const struct node *nd = &t->nodes[id];
		enum cpa_unit unit = p->unit;

		if (!nd->self)
			continue;
		if (o->unit < 0 && id < p->cap_leaf_unit && p->leaf_unit[id])
			unit = (enum cpa_unit)(p->leaf_unit[id] - 1);
		uint32_t n = tree_path(t, id, path);
		for (uint32_t i = 0; i < n; i++)
			names[i] = tree_name_str(t, t->nodes[path[i]].name, NULL);
		cpa_pprof_add(pp, unit, names, n, nd->self);
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
