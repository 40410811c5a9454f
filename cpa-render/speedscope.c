/* SPDX-License-Identifier: MIT */
/*
 * --format speedscope: speedscope's JSON file format
 * (https://www.speedscope.app/file-format-schema.json), which speedscope
 * opens as is: the frame names once in "shared", then one profile per
 * thread, or per process with --profile-by process.
 *
 * A live stream (cpa-capture | cpa-unwind) has each sample's time, so
 * its profiles per thread are "evented": a sample spans its period (on
 * CPU) or its weight (off CPU: the sample's time is the interval's end),
 * frames open and close on a real time axis, and speedscope's time order
 * view shows when each thing ran. Everything else is "sampled", stacks in
 * time order with their weights: a process's threads overlap in time,
 * which one timeline cannot show; cpa-query's windows sum a second or
 * more, which has no time inside it; memory has no duration; folded text
 * has no time at all and makes one profile.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "hash.h"
#include "htab.h"
#include "log.h"
#include "render.h"
#include "xml.h"

struct speedscope_group {
	uint32_t pid, tid;
	char *name;
};

/* What speedscope keeps of a stream: a profile per process or thread
 * (ids from 1), and each sample's time in its profile. */
struct speedscope_acc {
	bool by_process;
	struct speedscope_group *groups;
	uint32_t ngroups;
	size_t capgroups;
	struct cpa_htab index;		/* (pid, tid) -> group id */
	struct timeline timeline;
};

static void *acc_new(const struct render_opts *o)
{
	struct speedscope_acc *a = cpa_calloc(1, sizeof(*a));

	a->by_process = o->by_process;
	cpa_htab_init(&a->index, 64);
	return a;
}

static void acc_free(void *acc)
{
	struct speedscope_acc *a = acc;

	for (uint32_t id = 1; id <= a->ngroups; id++)
		free(a->groups[id].name);
	free(a->groups);
	cpa_htab_free(&a->index);
	timeline_free(&a->timeline);
	free(a);
}

static const char *string_or(const struct cpa_dict *d, uint32_t id,
			     const char *dflt)
{
	const char *v = cpa_dict_string(d, id, NULL);
	return v && *v ? v : dflt;
}

/* The profile (process or thread) a stream sample goes to. */
static uint32_t group_of(struct speedscope_acc *a, const struct cpa_dict *d,
			 const struct cpa_sample *s)
{
	uint32_t key[2] = { s->pid, a->by_process ? 0 : s->tid };
	struct cpa_htab_probe pr;
	uint32_t id;

	for (id = cpa_htab_first(&a->index, cpa_hash(key, sizeof(key), 0), &pr);
	     id; id = cpa_htab_next(&a->index, &pr))
		if (a->groups[id].pid == key[0] && a->groups[id].tid == key[1])
			return id;

	/* "app (pid 7)"; by thread "app (pid 7) worker (tid 9)", or
	 * "app (pid 7, tid 8)" when the thread has the process's name */
	const char *comm = string_or(d, s->comm_id, "[unknown]");
	const char *thread = string_or(d, s->thread_id, comm);
	size_t len = strlen(comm) + strlen(thread) + 64;
	char *name = cpa_malloc(len);
	if (a->by_process)
		snprintf(name, len, "%s (pid %" PRIu32 ")", comm, s->pid);
	else if (!strcmp(thread, comm))
		snprintf(name, len, "%s (pid %" PRIu32 ", tid %" PRIu32 ")",
			 comm, s->pid, s->tid);
	else
		snprintf(name, len, "%s (pid %" PRIu32 ") %s (tid %" PRIu32 ")",
			 comm, s->pid, thread, s->tid);
	CPA_GROW(a->groups, a->capgroups, (size_t)a->ngroups + 2);
	id = ++a->ngroups;
	a->groups[id] = (struct speedscope_group){ key[0], key[1], name };
	cpa_htab_add(&a->index, &pr, id);
	return id;
}

static int acc_entry(void *acc, const struct cpa_dict *d,
		     const struct cpa_sample *s, uint32_t leaf, uint32_t *group,
		     uint64_t offset, char *err, size_t errlen)
{
	(void)leaf, (void)offset, (void)err, (void)errlen;
	*group = group_of(acc, d, s);
	return 0;
}

/* Allocations only: frees have no time of their own to draw. */
static void acc_sample(void *acc, const struct cpa_sample *s, uint32_t leaf,
		       uint32_t group)
{
	struct speedscope_acc *a = acc;

	if (!(s->flags & CPA_FLAG_FREE))
		timeline_add(&a->timeline, s->time_ns, s->weight, leaf, group);
}

/* What a weight is, in speedscope's units, and the factor to it. */
struct unit {
	const char *name;
	uint64_t scale;
};

static struct unit unit_of(const struct profile *p, uint64_t period)
{
	switch (p->unit) {
	case CPA_UNIT_SAMPLES:
		/* on-CPU time, where the sampling period is known */
		return period ? (struct unit){ "nanoseconds", period }
			      : (struct unit){ "none", 1 };
	case CPA_UNIT_NS: return (struct unit){ "nanoseconds", 1 };
	case CPA_UNIT_BYTES: return (struct unit){ "bytes", 1 };
	default: return (struct unit){ "none", 1 };
	}
}

struct writer {
	FILE *f;
	const struct tree *t;
	uint32_t *path;			/* nodes of one stack */
	uint32_t *open;			/* evented: frames open, root first */
	uint32_t nopen;
	bool first;			/* of the current JSON array */
};

static void sep(struct writer *w)
{
	if (!w->first)
		fputc(',', w->f);
	w->first = false;
}

/* The stack of leaf as frame indexes (tree name id - 1), root first. */
static void put_stack(struct writer *w, uint32_t leaf)
{
	uint32_t n = tree_path(w->t, leaf, w->path);

	fputc('[', w->f);
	for (uint32_t i = 0; i < n; i++)
		fprintf(w->f, "%s%" PRIu32, i ? "," : "",
			w->t->nodes[w->path[i]].name - 1);
	fputc(']', w->f);
}

static void put_header(FILE *f, const char *type, const char *name,
		       const char *unit)
{
	fprintf(f, "{\"type\":\"%s\",\"name\":", type);
	js_string_put(f, name, strlen(name));
	fprintf(f, ",\"unit\":\"%s\",", unit);
}

/* One sampled profile of the leaves and weights lw[0..n-1] (pairs), in
 * order, a run of one leaf merged into one sample. */
static void put_sampled(struct writer *w, const char *name, struct unit u,
			const uint64_t (*lw)[2], size_t n)
{
	uint64_t total = 0;

	put_header(w->f, "sampled", name, u.name);
	fputs("\"samples\":[", w->f);
	w->first = true;
	for (size_t i = 0; i < n; i++) {
		if (i && lw[i][0] == lw[i - 1][0])
			continue;
		sep(w);
		put_stack(w, (uint32_t)lw[i][0]);
	}
	fputs("],\"weights\":[", w->f);
	w->first = true;
	for (size_t i = 0; i < n; i++) {
		uint64_t sum = lw[i][1] * u.scale;
		while (i + 1 < n && lw[i + 1][0] == lw[i][0])
			sum += lw[++i][1] * u.scale;
		sep(w);
		fprintf(w->f, "%" PRIu64, sum);
		total += sum;
	}
	fprintf(w->f, "],\"startValue\":0,\"endValue\":%" PRIu64 "}", total);
}

static void event(struct writer *w, char type, uint32_t node, uint64_t at)
{
	sep(w);
	fprintf(w->f, "{\"type\":\"%c\",\"frame\":%" PRIu32 ",\"at\":%" PRIu64
		"}", type, w->t->nodes[node].name - 1, at);
}

/* Closes the open frames down to depth keep, innermost first. */
static void close_to(struct writer *w, uint32_t keep, uint64_t at)
{
	while (w->nopen > keep)
		event(w, 'C', w->open[--w->nopen], at);
}

struct span {
	uint64_t start, end;	/* ns from the file's first sample */
	uint32_t leaf;
};

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/*
 * One evented profile of a thread's spans: frames its stacks share with
 * the stack before stay open; a gap closes everything; a span that
 * starts before the one before it ended (clocks of two CPUs) starts at
 * that end, so the events stay in order and nested.
 */
static void put_evented(struct writer *w, const char *name, struct span *sp,
			size_t n)
{
	uint64_t end = 0;

	qsort(sp, n, sizeof(*sp), by_start);
	put_header(w->f, "evented", name, "nanoseconds");
	fprintf(w->f, "\"startValue\":%" PRIu64 ",\"events\":[",
		n ? sp[0].start : 0);
	w->first = true;
	w->nopen = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t start = sp[i].start > end ? sp[i].start : end;
		if (sp[i].end <= start)
			continue;
		if (start > end)
			close_to(w, 0, end);
		uint32_t depth = tree_path(w->t, sp[i].leaf, w->path), k = 0;
		while (k < w->nopen && k < depth && w->open[k] == w->path[k])
			k++;
		close_to(w, k, start);
		for (; k < depth; k++) {
			event(w, 'O', w->path[k], start);
			w->open[w->nopen++] = w->path[k];
		}
		end = sp[i].end;
	}
	close_to(w, 0, end);
	fprintf(w->f, "],\"endValue\":%" PRIu64 "}", end);
}

static int by_group_time(const void *a, const void *b)
{
	const struct timed *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return x->leaf < y->leaf ? -1 : x->leaf > y->leaf;
}

static int by_task(const void *a, const void *b, void *ctx)
{
	const struct speedscope_group *g = ctx;
	const struct speedscope_group *x = &g[*(const uint32_t *)a];
	const struct speedscope_group *y = &g[*(const uint32_t *)b];

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Profiles of a stream: one per group, in pid and tid order; how many. */
static uint32_t put_groups(struct writer *w, struct profile *p,
			   struct speedscope_acc *a, struct unit u,
			   bool evented, uint64_t period)
{
	size_t n = a->timeline.n;
	struct timed *tm = a->timeline.t;
	size_t *first = cpa_calloc((size_t)a->ngroups + 2, sizeof(*first));
	uint32_t *order = cpa_malloc(((size_t)a->ngroups + 1) * sizeof(*order));
	uint64_t (*lw)[2] = cpa_malloc((n + 1) * sizeof(*lw));
	struct span *sp = cpa_malloc((n + 1) * sizeof(*sp));
	uint64_t t0 = UINT64_MAX;

	qsort(tm, n, sizeof(*tm), by_group_time);
	for (size_t i = n; i-- > 0;)
		first[tm[i].group] = i;
	first[a->ngroups + 1] = n;
	for (size_t i = 0; i < n; i++) {
		uint64_t d = p->unit == CPA_UNIT_NS ? tm[i].weight
						     : tm[i].weight * period;
		uint64_t s = tm[i].time_ns > d ? tm[i].time_ns - d : 0;
		t0 = s < t0 ? s : t0;
	}
	for (uint32_t g = 0; g < a->ngroups; g++)
		order[g] = g + 1;
	qsort_r(order, a->ngroups, sizeof(*order), by_task, a->groups);

	uint32_t written = 0;
	for (uint32_t k = 0; k < a->ngroups; k++) {
		uint32_t g = order[k];
		size_t lo = first[g], hi = lo;
		while (hi < n && tm[hi].group == g)
			hi++;
		if (lo == hi)
			continue;
		fputs(written++ ? ",\n" : "\n", w->f);
		for (size_t i = lo; i < hi; i++) {
			uint64_t d = p->unit == CPA_UNIT_NS ? tm[i].weight
							     : tm[i].weight * period;
			uint64_t end = tm[i].time_ns - t0;
			sp[i - lo] = (struct span){ end > d ? end - d : 0, end,
						    tm[i].leaf };
			lw[i - lo][0] = tm[i].leaf;
			lw[i - lo][1] = tm[i].weight;
		}
		if (evented)
			put_evented(w, a->groups[g].name, sp, hi - lo);
		else
			put_sampled(w, a->groups[g].name, u, lw, hi - lo);
	}
	free(first);
	free(order);
	free(lw);
	free(sp);
	return written;
}

/* Folded text: one sampled profile of the merged tree's leaves. */
static void put_tree(struct writer *w, const struct profile *p,
		     const char *name, struct unit u)
{
	const struct tree *t = &p->tree;
	uint64_t (*lw)[2] = cpa_malloc(((size_t)t->n + 1) * sizeof(*lw));
	size_t n = 0;

	for (uint32_t id = 1; id < t->n; id++)
		if (t->nodes[id].self) {
			lw[n][0] = id;
			lw[n++][1] = t->nodes[id].self;
		}
	fputc('\n', w->f);
	put_sampled(w, name, u, lw, n);
	free(lw);
}

static int speedscope_write(FILE *f, struct profile *p,
			    const struct render_opts *o)
{
	struct speedscope_acc *a = p->acc;
	uint32_t ngroups = a ? a->ngroups : 0;
	const struct tree *t = &p->tree;
	uint64_t period = o->period_ns ? o->period_ns : p->period_ns;
	struct unit u = unit_of(p, period);
	struct writer w = {
		.f = f, .t = t,
		.path = cpa_malloc(((size_t)t->max_depth + 1) * sizeof(uint32_t)),
		.open = cpa_malloc(((size_t)t->max_depth + 1) * sizeof(uint32_t)),
	};
	const char *name = o->title ? o->title :
			   o->input ? o->input : "cpa";
	uint32_t nnames = cpa_strtab_count(t->names);
	/* times of samples, not of windows, and a duration for each */
	bool evented = ngroups && !o->by_process && !p->interval_ns &&
		       (p->unit == CPA_UNIT_NS ||
			(p->unit == CPA_UNIT_SAMPLES && period));

	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
	      "\n\"exporter\":\"cpa-render\",\"name\":", f);
	js_string_put(f, name, strlen(name));
	fputs(",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[", f);
	for (uint32_t id = 1; id <= nnames; id++) {
		uint32_t len;
		const char *s = tree_name_str(t, id, &len);
		fputs(id > 1 ? (id % 8 ? "," : ",\n") : "", f);
		fputs("{\"name\":", f);
		js_string_put(f, s, len);
		fputc('}', f);
	}
	fputs("]},\n\"profiles\":[", f);
	/* a stream of frees only has no times to draw */
	if (!ngroups || !put_groups(&w, p, a, u, evented, period))
		put_tree(&w, p, name, u);
	fputs("]}\n", f);
	free(w.path);
	free(w.open);
	return 0;
}

const struct render_format speedscope_format = {
	.name = "speedscope", .every_label = true,
	.new = acc_new, .entry = acc_entry, .sample = acc_sample,
	.free = acc_free, .write = speedscope_write,
};
