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

#include "buf.h"
#include "log.h"
#include "pprof.h"
#include "render.h"

/*
 * What pprof keeps of a stream: the weights apart by kind and labels,
 * keyed by (leaf, kind, the label values' ids in strings, interned here
 * as dictionary ids start over after a RESET); frees apart, taken off at
 * the end; and each leaf's unit, as a stack is in one column.
 */
struct pprof_acc {
	struct cpa_stacktab *keys;	/* NULL until the first sample */
	struct cpa_strtab *strings;
	uint64_t *weight, *freed;	/* by key id */
	size_t cap_weight, cap_freed;
	uint8_t *leaf_unit;		/* node -> unit + 1 */
	size_t cap_leaf_unit;
};

static void *acc_new(const struct render_opts *o)
{
	(void)o;
	return cpa_calloc(1, sizeof(struct pprof_acc));
}

static void acc_free(void *acc)
{
	struct pprof_acc *a = acc;

	if (a->keys)
		cpa_stacktab_free(a->keys);
	if (a->strings)
		cpa_strtab_free(a->strings);
	free(a->weight);
	free(a->freed);
	free(a->leaf_unit);
	free(a);
}

/* The key of a sample's leaf, kind and labels; a stack keeps to one
 * unit, whatever the others hold: -1 with err set on a stack met in two
 * (its first sample of the second). */
static int acc_entry(void *acc, const struct cpa_dict *d,
		     const struct cpa_sample *s, uint32_t leaf, uint32_t *tag,
		     uint64_t offset, char *err, size_t errlen)
{
	struct pprof_acc *a = acc;
	uint32_t key[2 + CPA_PPROF_SAMPLE_LABELS] = { leaf, s->kind };
	enum cpa_unit u = cpa_kind_unit(s->kind);
	bool is_new;

	CPA_GROW_ZERO(a->leaf_unit, a->cap_leaf_unit, (size_t)leaf + 1);
	uint8_t *lu = &a->leaf_unit[leaf];
	if (!*lu)
		*lu = (uint8_t)(u + 1);
	else if (*lu != u + 1)
		return cpa_fail_at(err, errlen, offset, "samples in %s on a "
				   "stack of samples in %s; choose an event "
				   "kind with --kind", cpa_unit_name(u),
				   cpa_unit_name(*lu - 1));
	if (!a->keys) {
		a->keys = cpa_stacktab_new();
		a->strings = cpa_strtab_new();
	}
	cpa_pprof_sample_label_ids(key + 2, a->strings, d, s);
	*tag = cpa_stacktab_intern(a->keys, key, 2 + CPA_PPROF_SAMPLE_LABELS,
				   &is_new);
	CPA_GROW_ZERO(a->weight, a->cap_weight, (size_t)*tag + 1);
	CPA_GROW_ZERO(a->freed, a->cap_freed, (size_t)*tag + 1);
	return 0;
}

static void acc_sample(void *acc, const struct cpa_sample *s, uint32_t leaf,
		       uint32_t key)
{
	struct pprof_acc *a = acc;

	(void)leaf;
	/* the tree's sum did not overflow: neither can these */
	if (s->flags & CPA_FLAG_FREE)
		a->freed[key] += s->weight;
	else
		a->weight[key] += s->weight;
}

/* Frees taken off the allocations of their keys: what is still held. */
static void acc_finish(void *acc, struct profile *p)
{
	struct pprof_acc *a = acc;

	(void)p;
	for (size_t id = 0; id < a->cap_freed && id < a->cap_weight; id++)
		a->weight[id] = a->weight[id] > a->freed[id] ?
				a->weight[id] - a->freed[id] : 0;
}

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
			const struct pprof_acc *a, const struct render_opts *o,
			uint32_t *path, const char **names)
{
	uint32_t count = cpa_stacktab_count(a->keys);
	struct cpa_pprof_label l[CPA_PPROF_SAMPLE_LABELS];

	for (uint32_t id = 1; id <= count; id++) {
		uint32_t nk;
		const uint32_t *k = cpa_stacktab_get(a->keys, id, &nk);

		if (!a->weight[id])
			continue;
		cpa_pprof_labels_of_ids(l, k + 2, a->strings);
		uint32_t n = stack_names(&p->tree, k[0], path, names);
		int type = o->unit >= 0 ? cpa_pprof_unit_type(p->unit)
					: cpa_pprof_kind_type(k[1]);
		cpa_pprof_add(pp, type, names, n, a->weight[id], l,
			      CPA_PPROF_SAMPLE_LABELS);
	}
}

static int pprof_write(int fd, struct profile *p, const struct render_opts *o)
{
	const struct pprof_acc *a = p->acc;
	const struct tree *t = &p->tree;
	/* CPU time only at a frequency the stream or --freq gives */
	uint64_t period = o->period_ns ? o->period_ns : p->period_ns;
	struct cpa_pprof *pp = cpa_pprof_new(period);
	uint32_t *path = cpa_malloc(((size_t)t->max_depth + 1) * sizeof(*path));
	const char **names = cpa_malloc(((size_t)t->max_depth + 1) *
					sizeof(*names));
	char err[256];
	int rc;

	if (a && a->keys) {
		add_labeled(pp, p, a, o, path, names);
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

const struct render_format pprof_format = {
	.name = "pprof", .every_label = true, .units = UNITS_COLUMNS,
	.new = acc_new, .entry = acc_entry, .sample = acc_sample,
	.finish = acc_finish, .free = acc_free, .write_fd = pprof_write,
};
