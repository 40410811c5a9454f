/* SPDX-License-Identifier: MIT */
/*
 * pprof profile.proto, encoded by hand. The message is small and fixed,
 * so a few varint and length-delimited writers are all it takes; see
 * https://github.com/google/pprof/blob/main/proto/profile.proto for the
 * field numbers used below.
 *
 * Strings, functions, stacks and label sets are interned as they are
 * added (frame name -> string id -> function id = location id; a sample
 * is a stack and a label set), so a profile of a million samples over a
 * thousand stacks of ten threads holds ten thousand samples.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "buf.h"
#include "folded.h"
#include "intern.h"
#include "io.h"
#include "log.h"
#include "pprof.h"

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3,
	MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
};

#define WIRE_VARINT 0
#define WIRE_LEN 2
/* Fake address space per module of a "module+0xoffset" frame. */
#define MAPPING_SPAN (1ull << 40)

struct loc {
	uint32_t name;		/* string id of the frame */
	uint32_t mapping;	/* 0 none */
	uint64_t address;
};

/*
 * The sample types, in column order. Go names heap profiles
 * alloc_space and inuse_space; the other memory kinds are named after
 * the kind, so -sample_index=mem_usage finds what --kind mem-usage
 * asked for.
 */
enum {
	T_SAMPLES, T_OFF_CPU, T_IRQ_OFF, T_EVENTS, T_MEM_VIRT, T_MEM_PHYS,
	T_MEM_USAGE, T_ALLOC_SPACE, T_INUSE_SPACE, T_SPACE, T_PAGES, NTYPES
};

static const struct {
	const char *type, *unit;
	enum cpa_unit cpa_unit;
} types[NTYPES] = {
	[T_SAMPLES] = { "samples", "count", CPA_UNIT_SAMPLES },
	[T_OFF_CPU] = { "off_cpu", "nanoseconds", CPA_UNIT_NS },
	[T_IRQ_OFF] = { "irq_off", "nanoseconds", CPA_UNIT_NS },
	[T_EVENTS] = { "events", "count", CPA_UNIT_COUNT },
	[T_MEM_VIRT] = { "mem_virt", "bytes", CPA_UNIT_BYTES },
	[T_MEM_PHYS] = { "mem_phys", "bytes", CPA_UNIT_BYTES },
	[T_MEM_USAGE] = { "mem_usage", "bytes", CPA_UNIT_BYTES },
	[T_ALLOC_SPACE] = { "alloc_space", "bytes", CPA_UNIT_BYTES },
	[T_INUSE_SPACE] = { "inuse_space", "bytes", CPA_UNIT_BYTES },
	[T_SPACE] = { "space", "bytes", CPA_UNIT_BYTES },
	[T_PAGES] = { "pages", "count", CPA_UNIT_PAGES },
};

/* By kind name, so the table reads the same whatever the kinds' numbers. */
static const struct {
	const char *kind;
	int type;
} kind_types[] = {
	{ "oncpu", T_SAMPLES },
	{ "offcpu-blocked", T_OFF_CPU },
	{ "offcpu-preempted", T_OFF_CPU },
	{ "offcpu-yielded", T_OFF_CPU },
	{ "offcpu-delay", T_OFF_CPU },
	{ "irqoff", T_IRQ_OFF },
	{ "probe", T_EVENTS },
	{ "mem-virt", T_MEM_VIRT },
	{ "mem-phys", T_MEM_PHYS },
	{ "mem-usage", T_MEM_USAGE },
	{ "mem-rss", T_MEM_USAGE },
	{ "heap-alloc", T_ALLOC_SPACE },
	{ "heap-inuse", T_INUSE_SPACE },
	{ "java-alloc", T_ALLOC_SPACE },
	{ "java-live", T_INUSE_SPACE },
};

int cpa_pprof_unit_type(enum cpa_unit unit)
{
	switch (unit) {
	case CPA_UNIT_SAMPLES: return T_SAMPLES;
	case CPA_UNIT_NS: return T_OFF_CPU;
	case CPA_UNIT_BYTES: return T_SPACE;
	case CPA_UNIT_PAGES: return T_PAGES;
	default: return T_EVENTS;
	}
}

int cpa_pprof_kind_type(unsigned kind)
{
	const char *name = cpa_kind_name(kind);
	enum cpa_unit unit = cpa_kind_unit(kind);

	for (size_t i = 0; name && i < sizeof(kind_types) / sizeof(*kind_types);
	     i++)
		/* a kind whose unit is not its type's (memory in pages)
		 * falls back to the unit's type rather than lie about it */
		if (!strcmp(name, kind_types[i].kind) &&
		    types[kind_types[i].type].cpa_unit == unit)
			return kind_types[i].type;
	return cpa_pprof_unit_type(unit);
}

struct cpa_pprof {
	uint64_t period;
	unsigned types_used;		/* bit per sample type added */
	uint64_t start_ns, duration_ns;
	struct cpa_strtab *strings;	/* ids are string_table indexes */
	struct cpa_stacktab *stacks;	/* location ids, leaf first */
	struct cpa_stacktab *labelsets;	/* key, value string ids */
	struct cpa_stacktab *samples;	/* stack id, label set id (0 none) */
	uint64_t (*values)[NTYPES];	/* per sample id, per type */
	uint32_t nvalues;
	uint32_t *label_buf;
	uint32_t label_cap;
	uint32_t *loc_of_name;		/* string id -> location id */
	uint32_t cap_loc_of_name;
	struct loc *locs;		/* location id - 1 */
	uint32_t nlocs, caplocs;
	uint32_t *mappings;		/* mapping id - 1 -> filename string */
	uint32_t nmappings;
	uint32_t *frame_buf;
	uint32_t frame_cap;
};

static void put_key(struct cpa_buf *b, unsigned field, unsigned wire)
{
	cpa_buf_uleb128(b, (uint64_t)field << 3 | wire);
}

/* An int64 field; zero is the default and is left out. */
static void put_int(struct cpa_buf *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	put_key(b, field, WIRE_VARINT);
	cpa_buf_uleb128(b, v);
}

static void put_bytes(struct cpa_buf *b, unsigned field, const void *p, size_t n)
{
	put_key(b, field, WIRE_LEN);
	cpa_buf_uleb128(b, n);
	cpa_buf_add(b, p, n);
}

/* A nested message: msg's bytes under field; msg is emptied for reuse. */
static void put_msg(struct cpa_buf *b, unsigned field, struct cpa_buf *msg)
{
	put_bytes(b, field, msg->p, msg->len);
	msg->len = 0;
}

static uint32_t str_id(struct cpa_pprof *p, const char *s, size_t len)
{
	bool is_new;

	if (len == 0)
		return 0;	/* string_table[0] is "" */
	return cpa_strtab_intern(p->strings, s, len, &is_new);
}

struct cpa_pprof *cpa_pprof_new(uint64_t period)
{
	struct cpa_pprof *p = cpa_calloc(1, sizeof(*p));

	p->period = period;
	p->strings = cpa_strtab_new();
	p->stacks = cpa_stacktab_new();
	p->labelsets = cpa_stacktab_new();
	p->samples = cpa_stacktab_new();
	return p;
}

void cpa_pprof_free(struct cpa_pprof *p)
{
	if (!p)
		return;
	cpa_strtab_free(p->strings);
	cpa_stacktab_free(p->stacks);
	cpa_stacktab_free(p->labelsets);
	cpa_stacktab_free(p->samples);
	free(p->label_buf);
	free(p->values);
	free(p->loc_of_name);
	free(p->locs);
	free(p->mappings);
	free(p->frame_buf);
	free(p);
}

void cpa_pprof_set_time(struct cpa_pprof *p, uint64_t start_ns,
			uint64_t duration_ns)
{
	p->start_ns = start_ns;
	p->duration_ns = duration_ns;
}

/* "libfoo.so+0x1a2b": module length and offset, or 0 when not that form. */
static size_t module_offset(const char *s, size_t len, uint64_t *off)
{
	const char *plus = NULL;

	for (size_t i = len; i-- > 0;)
		if (s[i] == '+') {
			plus = s + i;
			break;
		}
	if (!plus || plus == s || (size_t)(s + len - plus) < 4 ||
	    plus[1] != '0' || plus[2] != 'x')
		return 0;
	uint64_t v = 0;
	for (const char *q = plus + 3; q < s + len; q++) {
		int d = *q >= '0' && *q <= '9' ? *q - '0' :
			*q >= 'a' && *q <= 'f' ? *q - 'a' + 10 :
			*q >= 'A' && *q <= 'F' ? *q - 'A' + 10 : -1;
		if (d < 0 || v >> 60)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	if (v >= MAPPING_SPAN)
		return 0;
	*off = v;
	return (size_t)(plus - s);
}

static uint32_t location_of(struct cpa_pprof *p, const char *frame,
			    size_t len)
{
	uint32_t name = str_id(p, frame, len);

	CPA_GROW_ZERO(p->loc_of_name, p->cap_loc_of_name, (size_t)name + 1);
	if (p->loc_of_name[name])
		return p->loc_of_name[name];

	CPA_GROW(p->locs, p->caplocs, (size_t)p->nlocs + 1);
	struct loc *l = &p->locs[p->nlocs++];
	uint64_t off;
	size_t mlen = module_offset(frame, len, &off);

	l->name = name;
	l->mapping = 0;
	l->address = 0;
	if (mlen) {
		uint32_t file = str_id(p, frame, mlen);
		uint32_t m = 0;
		for (uint32_t i = 0; i < p->nmappings; i++)
			if (p->mappings[i] == file)
				m = i + 1;
		if (!m) {
			p->mappings = cpa_realloc(p->mappings,
				(size_t)(p->nmappings + 1) * sizeof(uint32_t));
			p->mappings[p->nmappings++] = file;
			m = p->nmappings;
		}
		l->mapping = m;
		l->address = (uint64_t)m * MAPPING_SPAN + off;
	}
	p->loc_of_name[name] = p->nlocs;
	return p->nlocs;
}

const char *const cpa_pprof_label_keys[CPA_PPROF_SAMPLE_LABELS] = {
	"pid", "tid", "comm", "thread", "container", "pod", "cgroup", "env",
};

static void set_label(struct cpa_pprof_label *l, const char *v)
{
	l->value = v ? v : "";
	l->len = strlen(l->value);
}

void cpa_pprof_sample_labels(struct cpa_pprof_sample_labels *out,
			     const struct cpa_dict *d,
			     const struct cpa_sample *s)
{
	const char *owner = cpa_dict_string(d, s->container_id, NULL);

	snprintf(out->pid, sizeof(out->pid), "%" PRIu32, s->pid);
	snprintf(out->tid, sizeof(out->tid), "%" PRIu32, s->tid);
	memset(&out->owner, 0, sizeof(out->owner));
	for (unsigned i = 0; i < CPA_PPROF_SAMPLE_LABELS; i++)
		out->l[i].key = cpa_pprof_label_keys[i];
	set_label(&out->l[0], out->pid);
	set_label(&out->l[1], out->tid);
	set_label(&out->l[2], cpa_dict_string(d, s->comm_id, NULL));
	set_label(&out->l[3], cpa_dict_string(d, s->thread_id, NULL));
	set_label(&out->l[4], NULL);
	set_label(&out->l[5], NULL);
	set_label(&out->l[6], NULL);
	/* the label is a cgroup path, or a container name recorded as is */
	if (owner && cpa_label_is_cgroup(owner)) {
		cpa_owner_parse(owner, &out->owner);
		set_label(&out->l[4], out->owner.container);
		set_label(&out->l[5], out->owner.pod);
		set_label(&out->l[6], owner);
	} else {
		set_label(&out->l[4], owner);
	}
	set_label(&out->l[7], cpa_dict_string(d, s->env_id, NULL));
}

void cpa_pprof_sample_label_ids(uint32_t ids[CPA_PPROF_SAMPLE_LABELS],
				struct cpa_strtab *strings,
				const struct cpa_dict *d,
				const struct cpa_sample *s)
{
	struct cpa_pprof_sample_labels sl;
	bool is_new;

	cpa_pprof_sample_labels(&sl, d, s);
	for (unsigned i = 0; i < CPA_PPROF_SAMPLE_LABELS; i++)
		ids[i] = sl.l[i].len ? cpa_strtab_intern(strings, sl.l[i].value,
							 sl.l[i].len, &is_new)
				     : 0;
}

void cpa_pprof_labels_of_ids(struct cpa_pprof_label l[CPA_PPROF_SAMPLE_LABELS],
			     const uint32_t ids[CPA_PPROF_SAMPLE_LABELS],
			     const struct cpa_strtab *strings)
{
	for (unsigned i = 0; i < CPA_PPROF_SAMPLE_LABELS; i++) {
		uint32_t len = 0;
		l[i].key = cpa_pprof_label_keys[i];
		l[i].value = ids[i] ? cpa_strtab_get(strings, ids[i], &len) : "";
		l[i].len = len;
	}
}

/* The label set's id, 0 for none. */
static uint32_t labelset_of(struct cpa_pprof *p,
			    const struct cpa_pprof_label *labels,
			    unsigned nlabels)
{
	uint32_t n = 0;
	bool is_new;

	CPA_GROW(p->label_buf, p->label_cap, 2 * (size_t)nlabels);
	for (unsigned i = 0; i < nlabels; i++) {
		if (!labels[i].len)
			continue;
		p->label_buf[n++] = str_id(p, labels[i].key,
					   strlen(labels[i].key));
		p->label_buf[n++] = str_id(p, labels[i].value, labels[i].len);
	}
	return n ? cpa_stacktab_intern(p->labelsets, p->label_buf, n, &is_new)
		 : 0;
}

/* The stack in frame_buf[0..n-1], root first, with the labels, gets value
 * in type's column. */
static void add_stack(struct cpa_pprof *p, int type, uint32_t n,
		      uint64_t value, const struct cpa_pprof_label *labels,
		      unsigned nlabels)
{
	bool is_new;

	if (type < 0 || type >= NTYPES)
		type = T_EVENTS;
	/* pprof lists a sample's locations leaf first */
	for (uint32_t i = 0; i < n / 2; i++) {
		uint32_t t = p->frame_buf[i];
		p->frame_buf[i] = p->frame_buf[n - 1 - i];
		p->frame_buf[n - 1 - i] = t;
	}
	uint32_t key[2] = {
		cpa_stacktab_intern(p->stacks, p->frame_buf, n, &is_new),
		labelset_of(p, labels, nlabels),
	};
	uint32_t id = cpa_stacktab_intern(p->samples, key, 2, &is_new);
	CPA_GROW_ZERO(p->values, p->nvalues, (size_t)id + 1);
	/* a sum past INT64_MAX is refused when written */
	uint64_t *v = &p->values[id][type];
	*v = *v + value < *v ? UINT64_MAX : *v + value;
	p->types_used |= 1u << type;
}

void cpa_pprof_add(struct cpa_pprof *p, int type, const char *const *frames,
		   uint32_t n, uint64_t value,
		   const struct cpa_pprof_label *labels, unsigned nlabels)
{
	CPA_GROW(p->frame_buf, p->frame_cap, n);
	for (uint32_t i = 0; i < n; i++)
		p->frame_buf[i] = location_of(p, frames[i], strlen(frames[i]));
	add_stack(p, type, n, value, labels, nlabels);
}

void cpa_pprof_add_folded(struct cpa_pprof *p, int type, const char *stack,
			  size_t len, uint64_t value,
			  const struct cpa_pprof_label *labels,
			  unsigned nlabels)
{
	const char *at = stack, *f;
	size_t flen;
	uint32_t n = 0;

	/* frames split as cpa-render splits a folded line */
	while (cpa_folded_frame(&at, stack + len, &f, &flen)) {
		CPA_GROW(p->frame_buf, p->frame_cap, (size_t)n + 1);
		p->frame_buf[n++] = flen ? location_of(p, f, flen)
					 : location_of(p, "[unknown]", 9);
	}
	add_stack(p, type, n, value, labels, nlabels);
}

static void put_value_type(struct cpa_buf *b, unsigned field, uint32_t type,
			   uint32_t unit, struct cpa_buf *tmp)
{
	put_int(tmp, VALUE_TYPE_TYPE, type);
	put_int(tmp, VALUE_TYPE_UNIT, unit);
	put_msg(b, field, tmp);
}

/*
 * Locations, mappings and samples are written in name order, not in the
 * order they were added: the same stacks make the same profile whichever
 * tool adds them, in whichever order (cpa-query by folded line,
 * cpa-render by tree node).
 */
struct order {
	const struct cpa_pprof *p;
	const uint32_t *loc_rank;	/* location id - 1 -> new id */
};

static int str_cmp(const struct cpa_pprof *p, uint32_t a, uint32_t b)
{
	uint32_t la, lb;
	const char *sa = a ? cpa_strtab_get(p->strings, a, &la) : "";
	const char *sb = b ? cpa_strtab_get(p->strings, b, &lb) : "";

	if (!a)
		la = 0;
	if (!b)
		lb = 0;
	int c = memcmp(sa, sb, la < lb ? la : lb);
	return c ? c : (la > lb) - (la < lb);
}

static int by_loc_name(const void *x, const void *y, void *ctx)
{
	const struct cpa_pprof *p = ((const struct order *)ctx)->p;
	return str_cmp(p, p->locs[*(const uint32_t *)x].name,
		       p->locs[*(const uint32_t *)y].name);
}

static int by_mapping_name(const void *x, const void *y, void *ctx)
{
	const struct cpa_pprof *p = ((const struct order *)ctx)->p;
	return str_cmp(p, p->mappings[*(const uint32_t *)x],
		       p->mappings[*(const uint32_t *)y]);
}

/* Label sets by their keys and values, as text. */
static int by_labels(const struct cpa_pprof *p, uint32_t x, uint32_t y)
{
	uint32_t na = 0, nb = 0;
	const uint32_t *a = x ? cpa_stacktab_get(p->labelsets, x, &na) : NULL;
	const uint32_t *b = y ? cpa_stacktab_get(p->labelsets, y, &nb) : NULL;

	for (uint32_t i = 0; i < na && i < nb; i++) {
		int c = str_cmp(p, a[i], b[i]);
		if (c)
			return c;
	}
	return (na > nb) - (na < nb);
}

/* Samples by their stack's frames' new ids, root first, then labels. */
static int by_sample(const void *x, const void *y, void *ctx)
{
	const struct order *o = ctx;
	uint32_t na, nb, n;
	const uint32_t *ka = cpa_stacktab_get(o->p->samples,
					      *(const uint32_t *)x, &n);
	const uint32_t *kb = cpa_stacktab_get(o->p->samples,
					      *(const uint32_t *)y, &n);
	const uint32_t *a = cpa_stacktab_get(o->p->stacks, ka[0], &na);
	const uint32_t *b = cpa_stacktab_get(o->p->stacks, kb[0], &nb);

	for (uint32_t i = 1; i <= na && i <= nb; i++) {
		uint32_t ra = o->loc_rank[a[na - i] - 1];
		uint32_t rb = o->loc_rank[b[nb - i] - 1];
		if (ra != rb)
			return ra < rb ? -1 : 1;
	}
	if (na != nb)
		return (na > nb) - (na < nb);
	return by_labels(o->p, ka[1], kb[1]);
}

/* perm[0..n-1] = 0..n-1 sorted by cmp; rank[perm[i]] = i + 1. */
static uint32_t *sorted(uint32_t n, uint32_t *rank,
			int (*cmp)(const void *, const void *, void *),
			struct order *o)
{
	uint32_t *perm = cpa_malloc(((size_t)n + 1) * sizeof(*perm));

	for (uint32_t i = 0; i < n; i++)
		perm[i] = i;
	qsort_r(perm, n, sizeof(*perm), cmp, o);
	for (uint32_t i = 0; i < n; i++)
		rank[perm[i]] = i + 1;
	return perm;
}

/*
 * One column per sample type present, in table order, and after
 * samples/count cpu/nanoseconds when the period is known; a sample has a
 * value in each column, zero in those of other types. The default column
 * is CPU time, else the first.
 */
static void encode(struct cpa_pprof *p, struct cpa_buf *b)
{
	struct cpa_buf m = { 0 }, packed = { 0 }, label = { 0 };
	uint32_t ncols = 0, type[NTYPES + 1], unit[NTYPES + 1];
	int col_of[NTYPES], cpu_col = -1;
	unsigned used = p->types_used ? p->types_used : 1u << T_SAMPLES;

	for (unsigned u = 0; u < NTYPES; u++) {
		col_of[u] = -1;
		if (!(used & 1u << u))
			continue;
		col_of[u] = (int)ncols;
		type[ncols] = str_id(p, types[u].type, strlen(types[u].type));
		unit[ncols] = str_id(p, types[u].unit, strlen(types[u].unit));
		ncols++;
		if (u == T_SAMPLES && p->period) {
			cpu_col = (int)ncols;
			type[ncols] = str_id(p, "cpu", 3);
			unit[ncols] = str_id(p, "nanoseconds", 11);
			ncols++;
		}
	}
	for (uint32_t c = 0; c < ncols; c++)
		put_value_type(b, PROFILE_SAMPLE_TYPE, type[c], unit[c], &m);

	struct order o = { .p = p };
	uint32_t *loc_rank = cpa_malloc(((size_t)p->nlocs + 1) * sizeof(uint32_t));
	uint32_t *map_rank = cpa_malloc(((size_t)p->nmappings + 1) *
					sizeof(uint32_t));
	uint32_t *loc_perm = sorted(p->nlocs, loc_rank, by_loc_name, &o);
	uint32_t *map_perm = sorted(p->nmappings, map_rank, by_mapping_name,
				    &o);
	o.loc_rank = loc_rank;

	/* the samples that have a value, in order */
	uint32_t nsamples = cpa_stacktab_count(p->samples), nkept = 0;
	uint32_t *samples = cpa_malloc(((size_t)nsamples + 1) *
				       sizeof(uint32_t));
	for (uint32_t id = 1; id <= nsamples && id < p->nvalues; id++)
		for (unsigned u = 0; u < NTYPES; u++)
			if (p->values[id][u]) {
				samples[nkept++] = id;
				break;
			}
	qsort_r(samples, nkept, sizeof(*samples), by_sample, &o);

	for (uint32_t k = 0; k < nkept; k++) {
		uint32_t n, nl = 0;
		const uint32_t *key = cpa_stacktab_get(p->samples, samples[k], &n);
		const uint32_t *locs = cpa_stacktab_get(p->stacks, key[0], &n);
		const uint32_t *ls = key[1] ? cpa_stacktab_get(p->labelsets,
							       key[1], &nl)
					    : NULL;
		const uint64_t *v = p->values[samples[k]];

		for (uint32_t i = 0; i < n; i++)
			cpa_buf_uleb128(&packed, loc_rank[locs[i] - 1]);
		put_msg(&m, SAMPLE_LOCATION_ID, &packed);	/* packed ids */
		for (unsigned u = 0; u < NTYPES; u++) {
			if (col_of[u] < 0)
				continue;
			cpa_buf_uleb128(&packed, v[u]);
			if (u == T_SAMPLES && cpu_col >= 0)
				/* wraps like the int64 it encodes, never UB */
				cpa_buf_uleb128(&packed, v[u] * p->period);
		}
		put_bytes(&m, SAMPLE_VALUE, packed.p, packed.len);
		packed.len = 0;
		for (uint32_t i = 0; i + 1 < nl; i += 2) {
			put_int(&label, LABEL_KEY, ls[i]);
			put_int(&label, LABEL_STR, ls[i + 1]);
			put_msg(&m, SAMPLE_LABEL, &label);
		}
		put_msg(b, PROFILE_SAMPLE, &m);
	}

	for (uint32_t i = 0; i < p->nmappings; i++) {
		put_int(&m, MAPPING_ID, i + 1);
		put_int(&m, MAPPING_START, (uint64_t)(i + 1) * MAPPING_SPAN);
		put_int(&m, MAPPING_LIMIT, (uint64_t)(i + 2) * MAPPING_SPAN);
		put_int(&m, MAPPING_FILENAME, p->mappings[map_perm[i]]);
		put_int(&m, MAPPING_HAS_FUNCTIONS, 1);
		put_msg(b, PROFILE_MAPPING, &m);
	}

	/* one function per distinct frame, sharing the location's id */
	for (uint32_t i = 0; i < p->nlocs; i++) {
		const struct loc *l = &p->locs[loc_perm[i]];
		uint32_t mid = l->mapping ? map_rank[l->mapping - 1] : 0;
		put_int(&m, LOCATION_ID, i + 1);
		put_int(&m, LOCATION_MAPPING_ID, mid);
		if (mid)	/* the same offset in the mapping's new place */
			put_int(&m, LOCATION_ADDRESS, (uint64_t)mid * MAPPING_SPAN +
				l->address % MAPPING_SPAN);
		put_int(&packed, LINE_FUNCTION_ID, i + 1);
		put_msg(&m, LOCATION_LINE, &packed);
		put_msg(b, PROFILE_LOCATION, &m);
	}
	for (uint32_t i = 0; i < p->nlocs; i++) {
		put_int(&m, FUNCTION_ID, i + 1);
		put_int(&m, FUNCTION_NAME, p->locs[loc_perm[i]].name);
		put_int(&m, FUNCTION_SYSTEM_NAME, p->locs[loc_perm[i]].name);
		put_msg(b, PROFILE_FUNCTION, &m);
	}
	free(samples);
	free(loc_rank);
	free(map_rank);
	free(loc_perm);
	free(map_perm);

	put_bytes(b, PROFILE_STRING_TABLE, "", 0);
	uint32_t nstr = cpa_strtab_count(p->strings);
	for (uint32_t id = 1; id <= nstr; id++) {
		uint32_t len;
		const char *s = cpa_strtab_get(p->strings, id, &len);
		put_bytes(b, PROFILE_STRING_TABLE, s, len);
	}

	put_int(b, PROFILE_TIME_NANOS, p->start_ns);
	put_int(b, PROFILE_DURATION_NANOS, p->duration_ns);
	uint32_t dflt = cpu_col >= 0 ? (uint32_t)cpu_col : 0;
	put_value_type(b, PROFILE_PERIOD_TYPE, type[dflt], unit[dflt], &m);
	put_int(b, PROFILE_PERIOD, cpu_col >= 0 ? p->period : 1);
	if (ncols > 1)
		put_int(b, PROFILE_DEFAULT_SAMPLE_TYPE, type[dflt]);
	free(m.p);
	free(packed.p);
	free(label.p);
}

static int write_all(int fd, const uint8_t *p, size_t n, char *err,
		     size_t errlen)
{
	int rc = cpa_write_full(fd, p, n);

	if (rc < 0) {
		snprintf(err, errlen, "write: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

int cpa_pprof_write(struct cpa_pprof *p, int fd, char *err, size_t errlen)
{
	struct cpa_buf raw = { 0 };
	z_stream z;
	uint8_t out[1 << 16];
	int rc = 0, zrc;

	for (uint32_t id = 1; id < p->nvalues; id++)
		for (unsigned u = 0; u < NTYPES; u++)
			if (p->values[id][u] > INT64_MAX) {
				snprintf(err, errlen, "a weight of %llu %s does "
					 "not fit pprof's int64",
					 (unsigned long long)p->values[id][u],
					 cpa_unit_name(types[u].cpa_unit));
				return -1;
			}
	encode(p, &raw);
	if (raw.len > UINT32_MAX) {
		snprintf(err, errlen, "profile too large (%zu bytes)", raw.len);
		free(raw.p);
		return -1;
	}

	memset(&z, 0, sizeof(z));
	/* 15 window bits + 16: a gzip wrapper, which pprof expects */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		snprintf(err, errlen, "zlib: cannot initialise deflate");
		free(raw.p);
		return -1;
	}
	z.next_in = raw.p;
	z.avail_in = (uInt)raw.len;
	do {
		z.next_out = out;
		z.avail_out = sizeof(out);
		zrc = deflate(&z, Z_FINISH);
		if (zrc == Z_STREAM_ERROR) {
			snprintf(err, errlen, "zlib: deflate failed");
			rc = -1;
			break;
		}
		if (write_all(fd, out, sizeof(out) - z.avail_out, err,
			      errlen) < 0) {
			rc = -1;
			break;
		}
	} while (zrc != Z_STREAM_END);
	deflateEnd(&z);
	free(raw.p);
	return rc;
}
