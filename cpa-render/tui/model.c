/* SPDX-License-Identifier: MIT */
/*
 * What the terminal UI draws, computed from the samples it holds: the
 * filters of the ':' prompt, the flame graph of the window under the
 * chosen root labels and direction, and the trend of the chart's range.
 * Everything is rebuilt from the samples on each change: a window of
 * minutes is tens of thousands of samples, a few milliseconds of work,
 * and a leaf is cached per (label set, stack) so a long window costs one
 * probe per sample.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hash.h"
#include "htab.h"
#include "log.h"
#include "options.h"
#include "stackpath.h"
#include "tui.h"

static const char *const field_names[F_N] = {
	[F_PID] = "pid", [F_COMM] = "comm", [F_CPU] = "cpu",
	[F_CONTAINER] = "container", [F_ENV] = "env",
};

static void filter_unset(struct tui_filter *f, int i)
{
	f->set[i] = f->negate[i] = false;
	free(f->text[i]);
	f->text[i] = NULL;
	if (i == F_PID) {
		free(f->pids);
		f->pids = NULL;
		f->npids = 0;
	}
}

void tui_filter_free(struct tui_filter *f)
{
	for (int i = 0; i < F_N; i++)
		filter_unset(f, i);
}

static int field_of(const char *w, size_t len, bool *negate)
{
	*negate = len > 1 && w[len - 1] == 'v';
	for (int i = 0; i < F_N; i++) {
		size_t n = strlen(field_names[i]);
		if ((len == n || (*negate && len == n + 1)) &&
		    !strncmp(w, field_names[i], n))
			return i;
	}
	/* CPA's names */
	if ((len == 3 || len == 4) && !strncmp(w, "pod", 3))
		return F_CONTAINER;
	if ((len == 4 || len == 5) && !strncmp(w, "cgid", 4))
		return F_CONTAINER;
	return -1;
}

static int parse_pids(struct tui_filter *f, const char *v, char *err,
		      size_t errlen)
{
	uint32_t *pids = NULL;
	size_t n = 0;
	const char *p = v;

	while (*p) {
		char *end;
		unsigned long x = strtoul(p, &end, 10);
		if (end == p || x > UINT32_MAX || (*end && *end != ',')) {
			free(pids);
			return cpa_fail(err, errlen, "pid: '%s' is not a list "
					"of process ids", v);
		}
		pids = cpa_realloc(pids, (n + 1) * sizeof(*pids));
		pids[n++] = (uint32_t)x;
		p = *end ? end + 1 : end;
	}
	f->pids = pids;
	f->npids = n;
	return 0;
}

int tui_filter_command(struct tui_filter *f, const char *cmd, char *err,
		       size_t errlen)
{
	while (*cmd == ' ')
		cmd++;
	size_t wlen = strcspn(cmd, " ");
	const char *v = cmd + wlen;
	while (*v == ' ')
		v++;
	char *val = cpa_strdup(v);
	for (size_t n = strlen(val); n && val[n - 1] == ' ';)
		val[--n] = '\0';
	int rc = 0;
	bool neg;

	if (wlen == 5 && !strncmp(cmd, "unset", 5)) {
		if (!*val) {
			tui_filter_free(f);
		} else {
			int i = field_of(val, strlen(val), &neg);
			if (i < 0)
				rc = cpa_fail(err, errlen, "unset: no filter "
					      "'%s'", val);
			else
				filter_unset(f, i);
		}
		free(val);
		return rc;
	}
	int i = field_of(cmd, wlen, &neg);
	if (i < 0) {
		rc = cpa_fail(err, errlen, "unknown command '%.*s': pid, comm, "
			      "cpu, container, env (a 'v' after one negates "
			      "it), kind or unset", (int)wlen, cmd);
	} else if (!*val) {
		rc = cpa_fail(err, errlen, "%s: a value is needed",
			      field_names[i]);
	} else {
		struct tui_filter nf = *f;
		char e[128];
		if (i == F_PID) {
			rc = parse_pids(&nf, val, err, errlen);
		} else if (i == F_CPU &&
			   cpa_cpuset_parse(val, &nf.cpus, e, sizeof(e)) < 0) {
			rc = cpa_fail(err, errlen, "cpu: %s", e);
		}
		if (rc == 0) {
			if (i == F_PID)
				free(f->pids);
			free(f->text[i]);
			*f = nf;
			f->set[i] = true;
			f->negate[i] = neg;
			f->text[i] = val;
			return 0;
		}
	}
	free(val);
	return rc;
}

void tui_filter_describe(const struct tui_filter *f, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < F_N && o < len; i++)
		if (f->set[i])
			o += (size_t)snprintf(buf + o, len - o, "%s%s%s %s",
					      o ? " " : "", field_names[i],
					      f->negate[i] ? "v" : "",
					      f->text[i]);
	if (o >= len && len > 4)
		strcpy(buf + len - 4, "...");
}

static bool field_match(const struct tui_filter *f, int i,
			const struct tui_data *d, const uint32_t *ls)
{
	const char *s;
	switch (i) {
	case F_PID:
		for (size_t k = 0; k < f->npids; k++)
			if (f->pids[k] == ls[LS_PID])
				return true;
		return false;
	case F_CPU:
		return cpa_cpuset_has(&f->cpus, ls[LS_CPU]);
	case F_COMM:
		s = cpa_dict_string(&d->dict, ls[LS_COMM], NULL);
		return s && !strcmp(s, f->text[i]);
	case F_CONTAINER:
		/* a container id, or any part of the cgroup path */
		s = cpa_dict_string(&d->dict, ls[LS_CONTAINER], NULL);
		return s && *s && strstr(s, f->text[i]);
	case F_ENV:
		s = cpa_dict_string(&d->dict, ls[LS_ENV], NULL);
		return s && !strcmp(s, f->text[i]);
	}
	return false;
}

static bool filter_pass(const struct tui_filter *f, const struct tui_data *d,
			const uint32_t *ls)
{
	for (int i = 0; i < F_N; i++)
		if (f->set[i] && field_match(f, i, d, ls) == f->negate[i])
			return false;
	return true;
}

/* ---- the flame graph ---------------------------------------------------- */

/*
 * Kinds that carry frees (mem-usage, heap-inuse) are shown as what grew:
 * a free lands on the node of its allocation's stack and takes from its
 * weight, down to nothing, and the trend is the net change per second.
 */

struct builder {
	struct tui_data *d;
	const struct tui_view *v;
	struct tree *t;
	uint32_t *tname;		/* our string id -> tree name, 0 unset */
	size_t cap_tname;
	struct stack_path path;		/* root labels, then frames */
	struct cpa_buf name;		/* "module+<...>" */
	struct cpa_labels labels;
	/* leaf cache: (label set, stack) -> node */
	struct cpa_htab leaves;
	struct leaf { uint32_t ls, stack, node; } *ent;
	size_t nent, cap_ent;
};

/* The length of "module+" in "module+0x1a2b", an address that no
 * symbol named, else 0. */
static uint32_t addr_module(const char *s, uint32_t len)
{
	uint32_t i = len;
	while (i > 0 && isxdigit((unsigned char)s[i - 1]))
		i--;
	if (i == len || i < 4 || memcmp(s + i - 3, "+0x", 3))
		return 0;
	return i - 2;
}

static uint32_t frame_name(struct builder *b, uint32_t id)
{
	CPA_GROW_ZERO(b->tname, b->cap_tname, (size_t)id + 1);
	if (!b->tname[id]) {
		uint32_t len, m;
		const char *s = cpa_strtab_get(b->d->strs, id, &len);
		if (!len) {
			b->tname[id] = tree_name(b->t, "[unknown]", 9);
		} else if (b->v->addr_merged && (m = addr_module(s, len))) {
			/* CPA's X: a module's unnamed code as one frame */
			b->name.len = 0;
			cpa_buf_add(&b->name, s, m);
			cpa_buf_add(&b->name, "<...>", 5);
			b->tname[id] = tree_name(b->t, (const char *)b->name.p,
						 b->name.len);
		} else {
			b->tname[id] = tree_name(b->t, s, len);
		}
	}
	return b->tname[id];
}

static bool is_kernel(const char *s, uint32_t len)
{
	return len >= 4 && !memcmp(s + len - 4, "_[k]", 4);
}

static uint32_t leaf_of(struct builder *b, uint32_t ls, uint32_t stack)
{
	struct cpa_htab_probe pr;
	uint64_t h = cpa_hash_u64((uint64_t)ls << 32 | stack);
	for (uint32_t id = cpa_htab_first(&b->leaves, h, &pr); id;
	     id = cpa_htab_next(&b->leaves, &pr))
		if (b->ent[id].ls == ls && b->ent[id].stack == stack)
			return b->ent[id].node;

	const uint32_t *w = tui_data_labelset(b->d, ls);
	struct cpa_sample s = {
		.kind = (uint16_t)w[LS_KIND], .pid = w[LS_PID],
		.tid = w[LS_TID], .cpu = w[LS_CPU], .comm_id = w[LS_COMM],
		.thread_id = w[LS_THREAD], .container_id = w[LS_CONTAINER],
		.env_id = w[LS_ENV],
	};
	stack_path_clear(&b->path);
	stack_path_roots(&b->path, &b->labels, &b->d->dict, &s);
	uint32_t nroots = (uint32_t)b->path.n, n;
	const uint32_t *fr = cpa_stacktab_get(b->d->stacks, stack, &n);
	for (uint32_t i = 0; i < n; i++) {
		if (b->v->kernel_only) {
			uint32_t len;
			const char *str = cpa_strtab_get(b->d->strs, fr[i], &len);
			if (!is_kernel(str, len))
				continue;
		}
		stack_path_push(&b->path, frame_name(b, fr[i]));
	}
	if (b->path.n == nroots)
		stack_path_push(&b->path, b->v->kernel_only
				? tree_name(b->t, "[user]", 6)
				: tree_name(b->t, "[empty]", 7));
	uint32_t node = stack_path_leaf(&b->path, b->v->inverted);

	CPA_GROW(b->ent, b->cap_ent, b->nent + 2);
	uint32_t id = (uint32_t)++b->nent;
	b->ent[id] = (struct leaf){ ls, stack, node };
	cpa_htab_add(&b->leaves, &pr, id);
	return node;
}

static void labels_of(const struct tui_view *v, struct cpa_labels *l)
{
	/* root labels in the order cpa-render --labels would put them */
	static const enum cpa_label order[] = {
		CPA_LABEL_COMM, CPA_LABEL_PID, CPA_LABEL_THREAD,
		CPA_LABEL_CONTAINER, CPA_LABEL_ENV, CPA_LABEL_CPU,
	};
	l->n = 0;
	for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++)
		if (v->label[order[i]] ||
		    (order[i] == CPA_LABEL_CPU && tui_irq_per_cpu(v)))
			l->order[l->n++] = order[i];
}

bool tui_irq_per_cpu(const struct tui_view *v)
{
	/* an IRQ-off gap belongs to a CPU: parted by it, as CPA's IRQOFF
	 * frames are, unless U merged them */
	return v->kind == CPA_KIND_IRQOFF && !v->irq_cpu_merged;
}

/* which label sets pass: the kind shown and the filters */
static void judge(struct tui_model *m, const struct tui_data *d,
		  const struct tui_view *v)
{
	uint32_t nls = cpa_stacktab_count(d->labelsets);
	CPA_GROW_ZERO(m->verdict, m->cap_verdict, (size_t)nls + 1);
	for (uint32_t ls = 1; ls <= nls; ls++) {
		const uint32_t *w = tui_data_labelset(d, ls);
		m->verdict[ls] = (int)w[LS_KIND] != v->kind ? 0
				 : filter_pass(&v->filter, d, w) ? 2 : 1;
	}
}

/* The first sample at or after t: samples are in time order. */
static size_t first_at(const struct tui_data *d, uint64_t t)
{
	size_t a = 0, z = d->n;
	while (a < z) {
		size_t mid = a + (z - a) / 2;
		if (d->s[mid].time_ns < t)
			a = mid + 1;
		else
			z = mid;
	}
	return a;
}

static void add_to_tree(struct tui_model *m, struct builder *b,
			const struct tui_sample *s, uint8_t vd, bool freed)
{
	m->total = freed ? (m->total > s->weight ? m->total - s->weight : 0)
			 : m->total + s->weight;
	uint32_t leaf = vd == 2 ? leaf_of(b, s->ls, s->stack) : TREE_NONE;
	if (leaf != TREE_NONE && freed) {
		CPA_GROW_ZERO(m->freed, m->cap_freed, (size_t)leaf + 1);
		m->freed[leaf] += s->weight;
	} else if (leaf != TREE_NONE) {
		tree_add(&m->tree, leaf, s->weight, 0);
	}
}

static void add_to_trend(struct tui_model *m, struct tui_data *d,
			 const struct tui_sample *s, bool freed,
			 double per_col)
{
	unsigned c = (unsigned)((s->time_ns - m->chart_from) / per_col);
	if (c >= m->ncols)
		c = m->ncols - 1;
	double w = freed ? -(double)s->weight : (double)s->weight;
	if (tui_data_kernel_leaf(d, s->stack))
		m->sys[c] += w;
	else
		m->user[c] += w;
}

void tui_model_build(struct tui_model *m, struct tui_data *d,
		     struct tui_data *trend, const struct tui_view *v,
		     uint64_t chart_from, uint64_t chart_to, unsigned ncols)
{
	judge(m, d, v);

	uint32_t last_n = m->have_tree ? m->tree.n : 0;
	if (m->have_tree)
		tree_free(&m->tree);
	tree_init(&m->tree, false);
	tree_reserve(&m->tree, last_n + last_n / 4);
	m->have_tree = true;
	struct builder b = { .d = d, .v = v, .t = &m->tree };
	stack_path_init(&b.path, &m->tree);
	labels_of(v, &b.labels);
	cpa_htab_init(&b.leaves, 1024);

	free(m->user);
	free(m->sys);
	m->ncols = ncols ? ncols : 1;
	m->user = cpa_calloc(m->ncols, sizeof(*m->user));
	m->sys = cpa_calloc(m->ncols, sizeof(*m->sys));
	m->chart_from = chart_from;
	m->chart_to = chart_to > chart_from ? chart_to : chart_from + 1;
	double per_col = (double)(m->chart_to - m->chart_from) / m->ncols;

	uint64_t wfrom = v->win_from, wto = v->win_from + v->win_span;
	m->total = 0;
	if (trend == d) {
		/* only the chart's and window's samples */
		uint64_t lo = wfrom < m->chart_from ? wfrom : m->chart_from;
		uint64_t hi = wto > m->chart_to ? wto : m->chart_to;
		for (size_t i = first_at(d, lo); i < d->n &&
		     d->s[i].time_ns < hi; i++) {
			const struct tui_sample *s = &d->s[i];
			uint8_t vd = m->verdict[s->ls];
			if (!vd)
				continue;
			bool freed = tui_data_labelset(d, s->ls)[LS_FREE];
			if (s->time_ns >= wfrom && s->time_ns < wto)
				add_to_tree(m, &b, s, vd, freed);
			if (vd == 2 && s->time_ns >= m->chart_from &&
			    s->time_ns < m->chart_to)
				add_to_trend(m, d, s, freed, per_col);
		}
	} else {
		/* sums: d is the window's, stamped at their group's start */
		for (size_t i = 0; i < d->n; i++) {
			const struct tui_sample *s = &d->s[i];
			uint8_t vd = m->verdict[s->ls];
			if (vd)
				add_to_tree(m, &b, s, vd,
					    tui_data_labelset(d, s->ls)[LS_FREE]);
		}
		judge(m, trend, v);
		for (size_t i = first_at(trend, m->chart_from); i < trend->n &&
		     trend->s[i].time_ns < m->chart_to; i++) {
			const struct tui_sample *s = &trend->s[i];
			if (m->verdict[s->ls] == 2)
				add_to_trend(m, trend, s,
					     tui_data_labelset(trend, s->ls)[LS_FREE],
					     per_col);
		}
	}
	for (size_t i = 0; i < m->cap_freed && i < m->tree.n; i++) {
		struct node *nd = &m->tree.nodes[i];
		nd->self = nd->self > m->freed[i] ? nd->self - m->freed[i] : 0;
		m->freed[i] = 0;
	}
	tree_finish(&m->tree);
	cpa_htab_free(&b.leaves);
	free(b.ent);
	free(b.tname);
	stack_path_free(&b.path);
	cpa_buf_free(&b.name);
}

void tui_model_free(struct tui_model *m)
{
	if (m->have_tree)
		tree_free(&m->tree);
	free(m->verdict);
	free(m->freed);
	free(m->user);
	free(m->sys);
	memset(m, 0, sizeof(*m));
}
