/* SPDX-License-Identifier: MIT */
/*
 * --format pprof: every stack of the merged profile, with its weight, to
 * lib/pprof.c, which writes gzipped profile.proto for go tool pprof,
 * Pyroscope and Grafana.
 */
#include <stdlib.h>

#include "log.h"
#include "pprof.h"
#include "render.h"

/* cpa-capture's default frequency, for CPU time when nothing says */
#define DEFAULT_PERIOD_NS (1000000000ull / 49)

int pprof_write(int fd, struct profile *p, const struct render_opts *o)
{
	const struct tree *t = &p->tree;
	uint64_t period = o->period_ns ? o->period_ns :
			  p->period_ns ? p->period_ns : DEFAULT_PERIOD_NS;
	struct cpa_pprof *pp = cpa_pprof_new(p->unit, period);
	uint32_t *path = cpa_malloc(((size_t)t->max_depth + 1) * sizeof(*path));
	const char **names = cpa_malloc(((size_t)t->max_depth + 1) *
					sizeof(*names));
	char err[256];
	int rc;

	for (uint32_t id = 1; id < t->n; id++) {
		const struct node *nd = &t->nodes[id];
		if (!nd->self)
			continue;
		if (nd->self > INT64_MAX) {
			cpa_err("pprof: a weight of %llu does not fit pprof's "
				"int64", (unsigned long long)nd->self);
			rc = -1;
			goto out;
		}
		uint32_t n = tree_path(t, id, path);
		for (uint32_t i = 0; i < n; i++)
			names[i] = tree_name_str(t, t->nodes[path[i]].name, NULL);
		cpa_pprof_add(pp, names, n, (int64_t)nd->self);
	}
	if (p->from_stream && p->start_ns)
		cpa_pprof_set_time(pp, p->start_ns, p->end_ns - p->start_ns);
	rc = cpa_pprof_write(pp, fd, err, sizeof(err));
	if (rc < 0)
		cpa_err("%s: %s", o->output ? o->output : "<stdout>", err);
out:
	free(path);
	free(names);
	cpa_pprof_free(pp);
	return rc;
}
