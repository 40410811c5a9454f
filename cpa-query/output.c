/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "folded.h"
#include "log.h"
#include "outfile.h"
#include "pprof.h"
#include "timeparse.h"
#include "output.h"

/* ---- folded ---------------------------------------------------------- */

static struct fold_sink *fold_of(struct sink *k)
{
	return (struct fold_sink *)k;
}

static void fold_begin(struct sink *k, const struct cpa_segment_info *si,
		       const struct cpa_store_dict *d)
{
	struct fold_sink *s = fold_of(k);
	qmap_clear(&s->seg);
	s->d = d;
	if (s->proj)
		cpa_stacktab_free(s->proj);
	s->proj = cpa_stacktab_new();
	if (s->rep_n)
		memset(s->rep, 0, s->rep_n * sizeof(*s->rep));
}

/* Labelsets that print the same under --labels (say, the threads of one
 * process when only comm is shown) are merged before formatting: the
 * first labelset of each such group stands for all of it. */
static uint32_t representative(struct fold_sink *s, uint32_t lsid)
{
	if (lsid < s->rep_n && s->rep[lsid])
		return s->rep[lsid];
	const struct cpa_store_labelset *ls = &s->d->labelsets[lsid];
	/* frees print as their allocations do, but are summed apart */
	uint32_t key[CPA_LABELS_MAX + 7] = {
		ls->kind | (ls->flags & CPA_FLAG_FREE ? 1u << 16 : 0)};
	unsigned n = s->labels->n + 1;
	for (unsigned i = 0; i < s->labels->n; i++) {
		switch (s->labels->order[i]) {
		case CPA_LABEL_COMM: key[i + 1] = ls->comm; break;
		case CPA_LABEL_PID: key[i + 1] = ls->pid; break;
		case CPA_LABEL_TID: key[i + 1] = ls->tid; break;
		case CPA_LABEL_THREAD: key[i + 1] = ls->thread; break;
		case CPA_LABEL_CONTAINER:
		case CPA_LABEL_POD:
		case CPA_LABEL_CGROUP: key[i + 1] = ls->container; break;
		case CPA_LABEL_ENV: key[i + 1] = ls->env; break;
		case CPA_LABEL_CPU: key[i + 1] = ls->cpu; break;
		/* made of some of the others: the label set itself */
		case CPA_LABEL_CPA:
		case CPA_LABEL_PROCESS: key[i + 1] = lsid; break;
		}
	}
	if (s->pprof) {	/* every label pprof carries, whichever are shown */
		key[n++] = ls->comm;
		key[n++] = ls->pid;
		key[n++] = ls->tid;
		key[n++] = ls->thread;
		key[n++] = ls->container;
		key[n++] = ls->env;
	}
	bool is_new;
	uint32_t group = cpa_stacktab_intern(s->proj, key, n, &is_new);
	CPA_GROW(s->group_rep, s->group_n, (size_t)group + 1);
	if (is_new)
		s->group_rep[group] = lsid;
	CPA_GROW_ZERO(s->rep, s->rep_n, (size_t)lsid + 1);
	s->rep[lsid] = s->group_rep[group];
	return s->rep[lsid];
}

static void fold_entry(struct sink *k, unsigned column, uint64_t start,
		       uint32_t ls, uint32_t stack, uint64_t weight)
{
	struct fold_sink *s = fold_of(k);
	uint64_t group = s->split_ns ? start - start % s->split_ns : column;
	qmap_add(&s->seg, group,
		 (uint64_t)representative(s, ls) << 32 | stack, weight);
}

/* pprof: the id of a sample's label values, kept across segments. */
static uint32_t pprof_labels(struct fold_sink *s,
			     const struct cpa_store_dict *d,
			     const struct cpa_sample *smp)
{
	uint32_t key[CPA_PPROF_SAMPLE_LABELS];
	bool is_new;

	if (!s->pprof)
		return 0;
	if (!s->pp_labels) {
		s->pp_labels = cpa_stacktab_new();
		s->pp_strings = cpa_strtab_new();
	}
	cpa_pprof_sample_label_ids(key, s->pp_strings, &d->d, smp);
	return cpa_stacktab_intern(s->pp_labels, key, CPA_PPROF_SAMPLE_LABELS,
				   &is_new);
}

/* Formats each distinct (labelset, stack) of the segment once, through
 * lib/format/labels.h, and adds its weights to the line it becomes. */
static void fold_end(struct sink *k, const struct cpa_segment_info *si,
		     const struct cpa_store_dict *d)
{
	struct fold_sink *s = fold_of(k);
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		cpa_die("open_memstream: %s", strerror(errno));
	for (size_t i = 0; i < s->seg.n; i++) {
		const struct qmap_entry *e = &s->seg.e[i];
		const struct cpa_store_labelset *ls =
			&d->labelsets[e->b >> 32];
		struct cpa_sample smp = {
			.cgroup_id = ls->cgroup_id, .pid = ls->pid,
			.tid = ls->tid, .cpu = ls->cpu, .kind = ls->kind,
			.flags = ls->flags, .stack_id = (uint32_t)e->b,
			.comm_id = ls->comm, .thread_id = ls->thread,
			.container_id = ls->container, .env_id = ls->env,
		};
		size_t at = size;	/* as of the last fflush */
		cpa_folded_write_sample(f, s->labels, &d->d, &smp);
		fflush(f);
		/* the line ends in " 0\n": weights are summed here */
		size_t len = size - at;
		len = len >= 3 ? len - 3 : 0;
		bool is_new;
		uint32_t id = cpa_strtab_intern(s->text, buf + at, len,
						&is_new);
		CPA_GROW(s->kind, s->kind_cap, (size_t)id + 1);
		if (is_new)
			s->kind[id] = ls->kind;
		else if (cpa_kind_unit(s->kind[id]) !=
			 cpa_kind_unit(ls->kind) && !s->two_units)
			s->two_units = id;
		if (ls->flags & CPA_FLAG_ESTIMATE)
			s->estimate = true;
		qmap_add(ls->flags & CPA_FLAG_FREE ? &s->freed : &s->lines,
			 e->a, (uint64_t)pprof_labels(s, d, &smp) << 32 | id,
			 e->v);
		if (size > (1u << 20)) {
			fclose(f);
			free(buf);
			buf = NULL;
			size = 0;
			f = open_memstream(&buf, &size);
			if (!f)
				cpa_die("open_memstream: %s", strerror(errno));
		}
	}
	fclose(f);
	free(buf);
}

void fold_sink_init(struct fold_sink *s, const struct cpa_labels *labels,
		    uint64_t split_ns)
{
	memset(s, 0, sizeof(*s));
	s->k = (struct sink){fold_begin, fold_entry, fold_end, NULL, NULL, NULL};
	s->labels = labels;
	s->split_ns = split_ns;
	qmap_init(&s->seg);
	qmap_init(&s->lines);
	qmap_init(&s->freed);
	s->text = cpa_strtab_new();
}

void fold_sink_free(struct fold_sink *s)
{
	if (s->proj)
		cpa_stacktab_free(s->proj);
	free(s->rep);
	free(s->group_rep);
	qmap_free(&s->seg);
	qmap_free(&s->lines);
	qmap_free(&s->freed);
	cpa_strtab_free(s->text);
	free(s->kind);
	if (s->pp_labels)
		cpa_stacktab_free(s->pp_labels);
	if (s->pp_strings)
		cpa_strtab_free(s->pp_strings);
}

struct row {
	const char *text;
	uint64_t v[2];
	uint32_t id;
	uint32_t labels;		/* pprof: label set id, 0 otherwise */
};

/*
 * Frees taken off the allocations of their lines: what a stack still
 * held (mem-usage, heap-inuse). A line whose frees reach its allocations
 * holds nothing and is left out, as are lines of frees alone (their
 * allocations are older than the store, or were filtered out); both are
 * counted for --verbose. Returns the rows kept.
 */
static size_t net_rows(struct fold_sink *s, uint64_t g, bool diff,
		       struct row *rows, size_t n)
{
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		bool had_frees = false, held = false;
		for (unsigned col = 0; col < (diff ? 2u : 1u); col++) {
			uint64_t grp = diff ? (col == 0 ? 1 : 0) : g;
			uint64_t f = qmap_get(&s->freed, grp,
					      (uint64_t)rows[i].labels << 32 |
					      rows[i].id);
			if (f) {
				had_frees = true;
				rows[i].v[col] = rows[i].v[col] > f
						 ? rows[i].v[col] - f : 0;
			}
			if (rows[i].v[col])
				held = true;
		}
		if (had_frees && !held) {
			s->not_held++;
			continue;
		}
		rows[kept++] = rows[i];
	}
	for (size_t i = 0; i < s->freed.n; i++) {
		const struct qmap_entry *e = &s->freed.e[i];
		bool mine = diff ? e->a <= 1 : e->a == g;
		if (mine && !qmap_get(&s->lines, e->a, e->b))
			s->not_held++;
	}
	return kept;
}

/*
 * Rows of group g or, with diff, of groups 1 (baseline, first column) and
 * 0 (the range). Lines keep the order in which they were first met, which
 * is stable for a store and costs no sort: flame graph tools merge lines
 * themselves.
 */
static struct row *collect(struct fold_sink *s, uint64_t g, bool diff,
			   size_t *n)
{
	struct row *rows = NULL;
	size_t cnt = 0, cap = 0;
	/* line id -> row + 1, only needed when two groups meet in a row */
	uint32_t *at = diff ? cpa_calloc(cpa_strtab_count(s->text) + 1,
					 sizeof(*at))
			    : NULL;
	for (size_t i = 0; i < s->lines.n; i++) {
		const struct qmap_entry *e = &s->lines.e[i];
		unsigned col;
		if (diff && e->a <= 1)
			col = e->a == 1 ? 0 : 1;
		else if (!diff && e->a == g)
			col = 0;
		else
			continue;
		size_t r;
		if (at && at[e->b]) {
			r = at[e->b] - 1;
		} else {
			CPA_GROW(rows, cap, cnt + 1);
			r = cnt++;
			rows[r] = (struct row){
				cpa_strtab_get(s->text, (uint32_t)e->b, NULL),
				{0, 0}, (uint32_t)e->b, (uint32_t)(e->b >> 32)};
			if (at)
				at[e->b] = (uint32_t)cnt;
		}
		rows[r].v[col] += e->v;
	}
	free(at);
	*n = cnt;
	if (s->freed.n)
		*n = net_rows(s, g, diff, rows, cnt);
	return rows;
}

int fold_write(struct fold_sink *s, FILE *out, bool diff)
{
	size_t n;
	struct row *rows = collect(s, 0, diff, &n);
	if (s->estimate)
		fputs("# estimate\n", out);
	for (size_t i = 0; i < n; i++) {
		if (diff)
			fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n",
				rows[i].text, rows[i].v[0], rows[i].v[1]);
		else
			fprintf(out, "%s %" PRIu64 "\n", rows[i].text,
				rows[i].v[0]);
	}
	free(rows);
	return fflush(out) ? -1 : 0;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int fold_write_split(struct fold_sink *s, const char *dir)
{
	if (mkdir(dir, 0750) < 0 && errno != EEXIST) {
		cpa_err("%s: %s", dir, strerror(errno));
		return -1;
	}
	/* the distinct groups, in time order */
	uint64_t *groups = NULL;
	size_t ng = 0, gcap = 0;
	struct qmap seen;
	qmap_init(&seen);
	for (size_t i = 0; i < s->lines.n; i++) {
		uint64_t g = s->lines.e[i].a;
		if (qmap_get(&seen, 0, g))
			continue;
		qmap_add(&seen, 0, g, 1);
		CPA_GROW(groups, gcap, ng + 1);
		groups[ng++] = g;
	}
	qmap_free(&seen);
	if (ng)
		qsort(groups, ng, sizeof(*groups), u64_cmp);
	int ret = 0;
	for (size_t i = 0; i < ng && !ret; i++) {
		time_t t = (time_t)(groups[i] / CPA_NSEC_PER_SEC);
		struct tm tm;
		gmtime_r(&t, &tm);
		char name[64], path[4200];
		strftime(name, sizeof(name), "%Y%m%dT%H%M%S", &tm);
		unsigned ms = (unsigned)(groups[i] % CPA_NSEC_PER_SEC /
					 1000000);
		if (s->split_ns % CPA_NSEC_PER_SEC)
			snprintf(path, sizeof(path), "%s/%s.%03uZ.folded", dir,
				 name, ms);
		else
			snprintf(path, sizeof(path), "%s/%sZ.folded", dir,
				 name);
		/* each window's file appears whole or not at all */
		struct cpa_outfile of;
		char err[512];
		FILE *f = NULL;
		if (cpa_outfile_open(&of, path, 0644, err, sizeof(err)) < 0) {
			cpa_err("%s", err);
			ret = -1;
			break;
		}
		if (!(f = fdopen(of.fd, "w"))) {
			cpa_err("%s: %s", path, strerror(errno));
			cpa_outfile_abort(&of);
			ret = -1;
			break;
		}
		size_t n;
		struct row *rows = collect(s, groups[i], false, &n);
		if (s->estimate)
			fputs("# estimate\n", f);
		for (size_t k = 0; k < n; k++)
			fprintf(f, "%s %" PRIu64 "\n", rows[k].text,
				rows[k].v[0]);
		free(rows);
		of.fd = -1;	/* closed with f */
		if (fclose(f)) {
			cpa_err("%s: %s", path, strerror(errno));
			cpa_outfile_abort(&of);
			ret = -1;
		} else if (cpa_outfile_commit(&of, err, sizeof(err)) < 0) {
			cpa_err("%s", err);
			ret = -1;
		}
	}
	free(groups);
	return ret;
}

int fold_write_pprof(struct fold_sink *s, int fd, uint64_t period_ns,
		     uint64_t start_ns, uint64_t end_ns)
{
	/* only on-CPU samples carry no marker: a stack in two units is
	 * one a folded file gave without them, and a profile cannot sum
	 * samples with counts */
	if (s->two_units) {
		cpa_err("pprof: the stack '%s' has weights in two units; "
			"choose an event kind with --kind",
			cpa_strtab_get(s->text, s->two_units, NULL));
		return -1;
	}
	size_t n;
	struct row *rows = collect(s, 0, false, &n);
	struct cpa_pprof *p = cpa_pprof_new(period_ns);
	struct cpa_pprof_label l[CPA_PPROF_SAMPLE_LABELS];
	for (size_t i = 0; i < n; i++) {
		uint32_t nk = 0;
		if (rows[i].labels)
			cpa_pprof_labels_of_ids(l, cpa_stacktab_get(s->pp_labels,
						rows[i].labels, &nk),
						s->pp_strings);
		cpa_pprof_add_folded(p, cpa_pprof_kind_type(s->kind[rows[i].id]),
				     rows[i].text, strlen(rows[i].text),
				     rows[i].v[0], l, nk);
	}
	if (end_ns > start_ns)
		cpa_pprof_set_time(p, start_ns, end_ns - start_ns);
	char err[256];
	int r = cpa_pprof_write(p, fd, err, sizeof(err));
	if (r < 0)
		cpa_err("pprof: %s", err);
	cpa_pprof_free(p);
	free(rows);
	return r;
}

/* ---- stream ---------------------------------------------------------- */

static struct stream_sink *stream_of(struct sink *k)
{
	return (struct stream_sink *)k;
}

static void stream_begin(struct sink *k, const struct cpa_segment_info *si,
			 const struct cpa_store_dict *d)
{
	struct stream_sink *s = stream_of(k);
	s->d = d;
	/* Segment ids start again at 1 in every segment. */
	if (s->str_map)
		memset(s->str_map, 0, s->str_n * sizeof(*s->str_map));
	if (s->stk_map)
		memset(s->stk_map, 0, s->stk_n * sizeof(*s->stk_map));
	if (s->ls_map)
		memset(s->ls_map, 0, s->ls_n * sizeof(*s->ls_map));
	s->stk_ids = NULL;
	s->stk_ids_n = 0;
}

static void stream_stack_ids(struct sink *k, const uint32_t *ids, uint32_t n)
{
	struct stream_sink *s = stream_of(k);
	s->stk_ids = ids;
	s->stk_ids_n = n;
}

static uint32_t *map_slot(uint32_t **m, size_t *n, uint32_t id)
{
	CPA_GROW_ZERO(*m, *n, (size_t)id + 1);
	return &(*m)[id];
}

static uint32_t out_string(struct stream_sink *s, uint32_t id)
{
	if (!id)
		return 0;
	uint32_t *slot = map_slot(&s->str_map, &s->str_n, id);
	if (!*slot) {
		uint32_t len;
		const char *str = cpa_dict_string(&s->d->d, id, &len);
		*slot = cpa_symw_string(&s->w, str, len);
	}
	return *slot;
}

static void cells_settle(struct stream_sink *s);

static void agg_flush(struct stream_sink *s)
{
	struct qmap *q = &s->agg;
	cells_settle(s);
	if (s->prune) {
		prune_group(s);
		q = &s->pruned;
	}
	for (size_t i = 0; i < q->n; i++) {
		const struct qmap_entry *e = &q->e[i];
		uint32_t n;
		const uint32_t *w = cpa_stacktab_get(s->out_ls,
						     (uint32_t)(e->b >> 32), &n);
		struct cpa_sample smp = {
			.time_ns = e->a, .weight = e->v,
			.cgroup_id = (uint64_t)w[LW_CG_HI] << 32 | w[LW_CG_LO],
			.pid = w[LW_PID], .tid = w[LW_TID], .cpu = w[LW_CPU],
			.kind = (uint16_t)w[LW_KIND],
			.flags = (uint16_t)w[LW_FLAGS],
			.stack_id = (uint32_t)e->b, .comm_id = w[LW_COMM],
			.thread_id = w[LW_THREAD],
			.container_id = w[LW_CONTAINER], .env_id = w[LW_ENV],
		};
		cpa_write_sample(&s->w.w, &smp);
	}
	for (size_t i = 0; s->rows && i < s->agg.n; i++) {
		struct agg_row *r = &s->rows[s->agg.e[i].b >> 32];
		uint32_t stack = (uint32_t)s->agg.e[i].b;
		r->v[stack] = 0;
		r->met[stack / 64] &= ~(1ull << stack % 64);
	}
	qmap_clear(&s->agg);
	if (s->prune)
		qmap_clear(&s->pruned);
}

#define KEEP(s, l) ((s)->keep & 1u << (l))

/* The output stack of one side: [kernel]_[k] or [user]. */
static uint32_t side_of(struct stream_sink *s, bool k)
{
	if (!s->side_stk[k]) {
		uint32_t id = cpa_symw_cstr(&s->w, k ? "[kernel]_[k]" : "[user]");
		s->side_stk[k] = cpa_symw_stack(&s->w, &id, 1);
	}
	return s->side_stk[k];
}

/* [kernel]_[k] when the leaf is a kernel frame, else [user]: all the
 * trend needs of a stack. */
static uint32_t side_stack(struct stream_sink *s, uint32_t stack)
{
	uint32_t n, len = 0;
	const uint32_t *f = cpa_dict_stack(&s->d->d, stack, &n);
	const char *leaf = n ? cpa_dict_string(&s->d->d, f[n - 1], &len) : NULL;
	return side_of(s, cpa_frame_is_kernel(leaf, len));
}

static bool kernel_frame(struct stream_sink *s, uint32_t id)
{
	uint32_t len = 0;
	const char *f = cpa_dict_string(&s->d->d, id, &len);
	return cpa_frame_is_kernel(f, len);
}

/* The output label set of a segment's label set, interned once. */
static uint32_t out_labelset(struct stream_sink *s, uint32_t lsid)
{
	uint32_t *slot = map_slot(&s->ls_map, &s->ls_n, lsid);
	if (*slot)
		return *slot;
	const struct cpa_store_labelset *ls = &s->d->labelsets[lsid];
	bool cg = KEEP(s, CPA_LABEL_CONTAINER) || KEEP(s, CPA_LABEL_POD) ||
		  KEEP(s, CPA_LABEL_CGROUP);
	uint32_t w[LW_N] = {
		[LW_CG_LO] = cg ? (uint32_t)ls->cgroup_id : 0,
		[LW_CG_HI] = cg ? (uint32_t)(ls->cgroup_id >> 32) : 0,
		[LW_PID] = KEEP(s, CPA_LABEL_PID) ? ls->pid : 0,
		[LW_TID] = KEEP(s, CPA_LABEL_TID) ? ls->tid : 0,
		[LW_CPU] = KEEP(s, CPA_LABEL_CPU) ? ls->cpu : 0,
		[LW_KIND] = ls->kind,
		[LW_FLAGS] = ls->flags & CPA_SAMPLE_FLAGS,
		[LW_COMM] = KEEP(s, CPA_LABEL_COMM) ? out_string(s, ls->comm) : 0,
		[LW_THREAD] = KEEP(s, CPA_LABEL_THREAD)
			      ? out_string(s, ls->thread) : 0,
		[LW_CONTAINER] = cg ? out_string(s, ls->container) : 0,
		[LW_ENV] = KEEP(s, CPA_LABEL_ENV) ? out_string(s, ls->env) : 0,
	};
	bool is_new;
	*slot = cpa_stacktab_intern(s->out_ls, w, LW_N, &is_new);
	return *slot;
}

static uint64_t group_of(const struct stream_sink *s, uint64_t start)
{
	return start < s->origin ? start
	       : start - (start - s->origin) % s->every_ns;
}

/* The output stack of a segment's stack: as it is, its kernel frames, its
 * side, or with --prune a path written only once it is cut. It depends
 * on the frames' text alone, so a stack id met in an earlier segment
 * gives it without going through the frames. */
static uint32_t out_stack(struct stream_sink *s, uint32_t stack)
{
	uint32_t *slot = map_slot(&s->stk_map, &s->stk_n, stack);
	if (*slot)
		return *slot;
	uint32_t id = stack < s->stk_ids_n ? s->stk_ids[stack] : 0;
	if (id && id < s->id_n && s->id_map[id])
		return *slot = s->id_map[id];
	if (s->side) {
		*slot = side_stack(s, stack);
	} else {
		uint32_t n;
		bool is_new;
		const uint32_t *f = cpa_dict_stack(&s->d->d, stack, &n);
		uint32_t *ids = cpa_malloc((n + 1) * sizeof(*ids)), kept = 0;
		for (uint32_t i = 0; i < n; i++)
			if (!s->kernel || kernel_frame(s, f[i]))
				ids[kept++] = out_string(s, f[i]);
		if (s->kernel && !kept)
			ids[kept++] = cpa_symw_cstr(&s->w, "[user]");
		n = kept;
		*slot = s->prune ? cpa_stacktab_intern(s->paths, ids, n, &is_new)
				 : cpa_symw_stack(&s->w, ids, n);
		free(ids);
	}
	if (id)
		*map_slot(&s->id_map, &s->id_n, id) = *slot;
	return *slot;
}

/* How many adds ahead of the one made the batch hints its entry: about
 * the misses a core keeps in flight. */
#define AGG_AHEAD 8

/* Cells agg_window keeps at most, unless they are under 16 for each
 * pair held: beyond, the pairs are hashed. CPA_QUERY_CELLS_MAX=N sets
 * it, so the tests can watch the cells given up midway. */
#define CELLS_MAX (1u << 22)

static size_t cells_max(void)
{
	static size_t max;
	if (!max) {
		const char *v = getenv("CPA_QUERY_CELLS_MAX");
		max = v && *v ? strtoul(v, NULL, 10) + 1 : CELLS_MAX + 1;
	}
	return max - 1;
}

static void cells_free(struct stream_sink *s)
{
	for (size_t i = 0; s->rows && i < s->nrows; i++) {
		free(s->rows[i].v);
		free(s->rows[i].met);
	}
	free(s->rows);
	s->rows = NULL;
}

/* The sums the cells hold, into their pairs in agg. */
static void cells_settle(struct stream_sink *s)
{
	for (size_t i = 0; s->rows && i < s->agg.n; i++) {
		struct qmap_entry *e = &s->agg.e[i];
		e->v = s->rows[e->b >> 32].v[(uint32_t)e->b];
	}
}

/* The row of label set ls, with a cell for stack; NULL once the pairs
 * are hashed. */
static struct agg_row *cell_of(struct stream_sink *s, uint32_t ls,
			       uint32_t stack)
{
	if (!s->rows)
		return NULL;
	CPA_GROW_ZERO(s->rows, s->nrows, (size_t)ls + 1);
	struct agg_row *r = &s->rows[ls];
	if (stack < r->cap)
		return r;
	size_t was = r->cap;
	CPA_GROW_ZERO(r->v, r->cap, (size_t)stack + 1);
	CPA_GROW_ZERO(r->met, r->met_cap, r->cap / 64 + 1);
	s->ncells += r->cap - was;
	if (s->ncells > cells_max() && s->ncells / 16 > s->agg.n) {
		/* sparse: the ids span far more cells than pairs */
		cells_settle(s);
		cells_free(s);
		qmap_reindex(&s->agg);
		return NULL;
	}
	return r;
}

/* Hints the cell of pair b, where it is already there. */
static void cell_prefetch(const struct stream_sink *s, uint64_t b)
{
	uint32_t ls = (uint32_t)(b >> 32), stack = (uint32_t)b;
	if (ls < s->nrows && stack < s->rows[ls].cap)
		__builtin_prefetch(&s->rows[ls].v[stack]);
}

/*
 * A window's entries summed into their group. A day of a busy host sums
 * into millions of (label set, stack) pairs, a table far larger than the
 * caches, where each add would wait for its misses one after another.
 * With --prune the pairs are found by id: a cell per output label set
 * and stack holds the pair's sum, and a bit whether it was met, so an
 * add touches one cell, whose place is known without a read, so it is
 * fetched while the window's keys are made; a new pair is appended to agg, not hashed, and gets
 * its sum from the cell when the group is written. Cells too sparse for
 * their pairs are given up for the hash. Hashed, the window's keys are
 * hashed and their slots fetched first. Either way
 * the output is what adding entry by entry gives, strings and samples in
 * the same order.
 */
static void agg_window(struct sink *k, unsigned column, uint64_t start,
		       const struct cpa_store_entry *e, uint32_t n)
{
	struct stream_sink *s = stream_of(k);
	uint64_t group = group_of(s, start);
	(void)column;
	CPA_GROW(s->batch, s->batch_cap, n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t stack = e[i].stack < s->stk_n ? s->stk_map[e[i].stack]
						       : 0;
		if (!stack)
			stack = out_stack(s, e[i].stack);
		uint64_t b = (uint64_t)out_labelset(s, e[i].labelset) << 32 |
			     stack;
		/* windows come in time order per store: a group is
		 * written once the next begins */
		if (!i && group != s->group && s->agg.n)
			agg_flush(s);
		s->group = group;
		s->batch[i] = (struct agg_add){ b, qmap_hash(group, b) };
		if (s->rows)
			cell_prefetch(s, b);
		else
			qmap_prefetch_slot(&s->agg, s->batch[i].h);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint64_t b = s->batch[i].b;
		uint32_t stack = (uint32_t)b;
		struct agg_row *r = cell_of(s, (uint32_t)(b >> 32), stack);
		if (!r) {
			if (i + AGG_AHEAD < n)
				qmap_prefetch_entry(&s->agg,
						    s->batch[i + AGG_AHEAD].h);
			qmap_add_hashed(&s->agg, group, b, s->batch[i].h,
					e[i].weight);
			continue;
		}
		uint64_t bit = 1ull << stack % 64;
		if (!(r->met[stack / 64] & bit)) {
			r->met[stack / 64] |= bit;
			qmap_push(&s->agg, group, b);
		}
		r->v[stack] += e[i].weight;
	}
}

/*
 * A window's totals from the store's sums (stream_sink_take_sums): what
 * agg_window makes of the window's entries with no label kept and stacks
 * by side. The totals come in the order their keys first appear among
 * the entries, so the groups, strings and samples written are the same,
 * in the same order.
 */
static void agg_sums(struct sink *k, unsigned column, uint64_t start,
		     const struct cpa_store_sum *t, uint32_t n)
{
	struct stream_sink *s = stream_of(k);
	uint64_t group = group_of(s, start);
	(void)column;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t stack = side_of(s, t[i].kernel);
		uint32_t w[LW_N] = { [LW_KIND] = t[i].kind,
				     [LW_FLAGS] = t[i].flags & CPA_SAMPLE_FLAGS };
		bool is_new;
		uint64_t b = (uint64_t)cpa_stacktab_intern(s->out_ls, w, LW_N,
							   &is_new) << 32 |
			     stack;
		if (!i && group != s->group && s->agg.n)
			agg_flush(s);
		s->group = group;
		qmap_add_hashed(&s->agg, group, b, qmap_hash(group, b),
				t[i].weight);
	}
}

void stream_sink_take_sums(struct stream_sink *s)
{
	if (s->every_ns && s->side && !s->keep && !s->prune && !s->kernel)
		s->k.sums = agg_sums;
}

static void stream_entry(struct sink *k, unsigned column, uint64_t start,
			 uint32_t lsid, uint32_t stack, uint64_t weight)
{
	struct stream_sink *s = stream_of(k);
	if (s->every_ns) {	/* scan_held's entries */
		struct cpa_store_entry one = { lsid, stack, weight };
		agg_window(k, column, start, &one, 1);
		return;
	}
	const struct cpa_store_labelset *ls = &s->d->labelsets[lsid];
	uint32_t id = out_stack(s, stack);
	struct cpa_sample smp = {
		.time_ns = start, .weight = weight,
		.cgroup_id = ls->cgroup_id, .pid = ls->pid, .tid = ls->tid,
		.cpu = ls->cpu, .kind = ls->kind, .flags = ls->flags,
		.stack_id = id,
		.comm_id = out_string(s, ls->comm),
		.thread_id = out_string(s, ls->thread),
		.container_id = out_string(s, ls->container),
		.env_id = out_string(s, ls->env),
	};
	cpa_write_sample(&s->w.w, &smp);
}

static void stream_end(struct sink *k, const struct cpa_segment_info *si,
		       const struct cpa_store_dict *d)
{
}

int stream_sink_init(struct stream_sink *s, int fd,
		     const struct store_set *ss)
{
	memset(s, 0, sizeof(*s));
	s->k = (struct sink){stream_begin, stream_entry, stream_end, NULL, NULL,
			     stream_stack_ids};
	int r = cpa_symw_init(&s->w, fd);
	if (r < 0)
		return r;
	/* The meta of the capture that the store kept (frequency, mode,
	 * versions), from the newest segment, then where this came from. */
	if (ss->n) {
		char *const *kv = ss->segs[ss->n - 1].meta;
		for (size_t i = 0; kv && kv[i]; i += 2)
			if (!strncmp(kv[i], "stream.", 7))
				cpa_write_meta(&s->w.w, kv[i] + 7, kv[i + 1]);
	}
	char v[32];
	snprintf(v, sizeof(v), "%" PRIu64, ss->interval_ns);
	cpa_write_meta(&s->w.w, CPA_META_SOURCE, "cpa-query");
	return cpa_write_meta(&s->w.w, CPA_META_INTERVAL_NS, v);
}

void stream_sink_aggregate(struct stream_sink *s, uint64_t origin,
			   uint64_t every_ns, const struct cpa_labels *labels,
			   bool side)
{
	s->origin = origin;
	s->every_ns = every_ns;
	/* CPA_QUERY_ENTRYWISE=1 adds entry by entry, the answer the batched
	 * adds must give byte for byte (tests/bats/query.bats) */
	const char *one = getenv("CPA_QUERY_ENTRYWISE");
	s->k.window = one && *one && strcmp(one, "0") ? NULL : agg_window;
	s->side = side;
	s->keep = 0;
	for (unsigned i = 0; i < labels->n; i++)
		s->keep |= labels->order[i] == CPA_LABEL_PROCESS
				   ? 1u << CPA_LABEL_COMM | 1u << CPA_LABEL_PID
				   : labels->order[i] == CPA_LABEL_CPA
				   /* CPA's metadata string is made of them */
				   ? 1u << CPA_LABEL_COMM | 1u << CPA_LABEL_THREAD |
				     1u << CPA_LABEL_PID | 1u << CPA_LABEL_CPU |
				     1u << CPA_LABEL_ENV | 1u << CPA_LABEL_CGROUP
				   : 1u << labels->order[i];
	qmap_init(&s->agg);
	s->out_ls = cpa_stacktab_new();
}

int stream_sink_finish(struct stream_sink *s)
{
	if (s->every_ns) {
		agg_flush(s);
		qmap_free(&s->agg);
		cpa_stacktab_free(s->out_ls);
		free(s->batch);
	}
	if (s->prune) {
		qmap_free(&s->pruned);
		cpa_stacktab_free(s->paths);
	}
	cells_free(s);
	int r = cpa_write_end(&s->w.w);
	cpa_symw_free(&s->w);
	free(s->str_map);
	free(s->stk_map);
	free(s->id_map);
	free(s->ls_map);
	return r;
}

/* ---- top ------------------------------------------------------------- */

static struct top_sink *top_of(struct sink *k)
{
	return (struct top_sink *)k;
}

static void top_begin(struct sink *k, const struct cpa_segment_info *si,
		      const struct cpa_store_dict *d)
{
	qmap_clear(&top_of(k)->seg);
	top_of(k)->d = d;
}

static void top_entry(struct sink *k, unsigned column, uint64_t start,
		      uint32_t ls, uint32_t stack, uint64_t weight)
{
	struct top_sink *s = top_of(k);
	const struct cpa_store_labelset *l = &s->d->labelsets[ls];
	unsigned a = !cpa_kind_nets(l->kind) ? 0
		     : l->flags & CPA_FLAG_FREE ? 2 : 1;
	qmap_add(&s->seg, a, stack, weight);
}

static void top_end(struct sink *k, const struct cpa_segment_info *si,
		    const struct cpa_store_dict *d)
{
	struct top_sink *s = top_of(k);
	for (size_t i = 0; i < s->seg.n; i++) {
		uint32_t n;
		const uint32_t *f = cpa_dict_stack(&d->d, (uint32_t)s->seg.e[i].b,
						   &n);
		CPA_GROW(s->path, s->path_cap, (size_t)n + 1);
		for (uint32_t j = 0; j < n; j++) {
			uint32_t len;
			const char *name = cpa_dict_string(&d->d, f[j], &len);
			s->path[j] = cpa_strtab_intern(s->names, name, len, NULL);
		}
		if (!s->seg.e[i].a) {
			cpa_topfuncs_add(&s->top, s->path, n, s->seg.e[i].v);
			continue;
		}
		/* allocations and frees meet across segments by name */
		uint32_t id = cpa_stacktab_intern(s->held, s->path, n, NULL);
		qmap_add(&s->net, s->seg.e[i].a, id, s->seg.e[i].v);
	}
}

void top_sink_init(struct top_sink *s)
{
	memset(s, 0, sizeof(*s));
	s->k = (struct sink){top_begin, top_entry, top_end, NULL, NULL, NULL};
	qmap_init(&s->seg);
	qmap_init(&s->net);
	s->held = cpa_stacktab_new();
	s->names = cpa_strtab_new();
	cpa_topfuncs_init(&s->top);
}

void top_write(struct top_sink *s, FILE *out, unsigned n)
{
	for (size_t i = 0; i < s->net.n; i++) {
		const struct qmap_entry *e = &s->net.e[i];
		uint64_t freed = qmap_get(&s->net, 2, e->b);
		if (e->a != 1 || e->v <= freed)
			continue;
		uint32_t len;
		const uint32_t *path = cpa_stacktab_get(s->held,
							(uint32_t)e->b, &len);
		cpa_topfuncs_add(&s->top, path, len, e->v - freed);
	}
	cpa_topfuncs_write(out, &s->top, s->names, n, CPA_TOP_SELF, NULL,
			   NULL);
}

void top_sink_free(struct top_sink *s)
{
	qmap_free(&s->seg);
	qmap_free(&s->net);
	cpa_stacktab_free(s->held);
	cpa_strtab_free(s->names);
	cpa_topfuncs_free(&s->top);
	free(s->path);
}
