/* SPDX-License-Identifier: MIT */
/*
 * Fleet queries. Two statements per range: the rows, summed by what the
 * output shows (kind and flags always; comm, cgroup path, env, host and a
 * time group when asked for), and the frames of the stacks they name,
 * read with the same conditions. The conditions use what the table is
 * ordered and partitioned by (kind, comm, host, time; day), so a query
 * of one comm over the fleet reads that comm's parts of those days.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"
#include "htab.h"
#include "intern.h"
#include "log.h"
#include "stream.h"
#include "timeparse.h"

#include "fleet.h"
#include "list.h"
#include "filter.h"

#define NSEC_PER_DAY (86400ull * CPA_NSEC_PER_SEC)
/* Windows start at most this long before a range they overlap: the
 * partitions of the day before are read only when the range begins
 * within this much of midnight. */
#define WINDOW_MAX (3600ull * CPA_NSEC_PER_SEC)

void fleet_open(struct fleet *f, const struct query_opts *o)
{
	char err[640];
	memset(f, 0, sizeof(*f));
	f->o = o;
	if (cpa_ch_init(&f->ch, o->clickhouse, err, sizeof(err)) < 0)
		cpa_die_usage("invalid --clickhouse: %s", err);
	f->ch.timeout_ms = 300000;
}

void fleet_close(struct fleet *f)
{
	cpa_ch_free(&f->ch);
}

/* toDate('YYYY-MM-DD') of a UTC time */
static void day_sql(struct cpa_buf *q, uint64_t ns)
{
	time_t t = (time_t)(ns / CPA_NSEC_PER_SEC);
	struct tm tm;
	char d[16];
	gmtime_r(&t, &tm);
	strftime(d, sizeof(d), "%Y-%m-%d", &tm);
	cpa_ch_addf(q, "toDate('%s')", d);
}

/* The kinds that net frees against allocations, as an SQL list. */
static void nets_sql(struct cpa_buf *q)
{
	const char *sep = "(";
	for (unsigned k = 0; k < CPA_KIND_COUNT; k++)
		if (cpa_kind_nets(k)) {
			cpa_ch_add(q, sep);
			cpa_ch_quote_str(q, cpa_kind_name(k));
			sep = ", ";
		}
	cpa_ch_add(q, ")");
}

/* A shell glob as an anchored regular expression (re2, as match()). */
static void glob_sql(struct cpa_buf *q, const char *glob)
{
	struct cpa_buf re = {0};
	cpa_ch_add(&re, "^");
	for (const char *p = glob; *p; p++) {
		if (*p == '*') {
			cpa_ch_add(&re, ".*");
		} else if (*p == '?') {
			cpa_ch_add(&re, ".");
		} else if (*p == '[' && strchr(p + 1, ']')) {
			const char *end = strchr(p + 2, ']');
			if (!end)
				end = strchr(p + 1, ']');
			cpa_ch_add(&re, "[");
			p++;
			if (*p == '!') {
				cpa_ch_add(&re, "^");
				p++;
			}
			for (; p < end; p++) {
				if (*p == '\\' || *p == '[')
					cpa_ch_add(&re, "\\");
				cpa_buf_add(&re, p, 1);
			}
			cpa_ch_add(&re, "]");
		} else {
			if (strchr("\\.+()|{}^$[]", *p))
				cpa_ch_add(&re, "\\");
			cpa_buf_add(&re, p, 1);
		}
	}
	cpa_ch_add(&re, "$");
	cpa_ch_quote(q, (const char *)re.p, re.len);
	cpa_buf_free(&re);
}

/* "host = 'NAME'" or "host LIKE 'PATTERN'" for a glob of * and ? only
 * (LIKE's % and _; a pattern with a literal prefix is read through the
 * primary key); false for one LIKE cannot say ([...], \\). */
static bool glob_like(struct cpa_buf *q, const char *glob)
{
	if (strpbrk(glob, "[\\"))
		return false;
	if (!strpbrk(glob, "*?")) {
		cpa_ch_add(q, "host = ");
		cpa_ch_quote_str(q, glob);
		return true;
	}
	struct cpa_buf p = {0};
	for (const char *c = glob; *c; c++) {
		if (*c == '%' || *c == '_')
			cpa_ch_add(&p, "\\");
		if (*c == '*')
			cpa_ch_add(&p, "%");
		else if (*c == '?')
			cpa_ch_add(&p, "_");
		else
			cpa_buf_add(&p, c, 1);
	}
	cpa_ch_add(q, "host LIKE ");
	cpa_ch_quote(q, (const char *)p.p, p.len);
	cpa_buf_free(&p);
	return true;
}

/* "host LIKE 'PREFIX%' AND " for a glob's literal prefix: the primary
 * key (kind, comm, host, time) skips the granules of other hosts with it,
 * which it cannot with match(). */
static void like_prefix(struct cpa_buf *q, const char *glob)
{
	size_t n = strcspn(glob, "*?[\\");
	if (!n)
		return;
	struct cpa_buf p = {0};
	for (size_t i = 0; i < n; i++) {
		if (glob[i] == '%' || glob[i] == '_')
			cpa_ch_add(&p, "\\");
		cpa_buf_add(&p, glob + i, 1);
	}
	cpa_ch_add(&p, "%");
	cpa_ch_add(q, "host LIKE ");
	cpa_ch_quote(q, (const char *)p.p, p.len);
	cpa_ch_add(q, " AND ");
	cpa_buf_free(&p);
}

/* " AND (x OR y ...)" of one filter kind, each term by fn. */
static void any_of(struct cpa_buf *q, const char *const *v, size_t n,
		   const char *column, bool prefix)
{
	if (!n)
		return;
	cpa_ch_add(q, " AND (");
	for (size_t i = 0; i < n; i++) {
		if (i)
			cpa_ch_add(q, " OR ");
		if (prefix)
			cpa_ch_addf(q, "substring(%s, 1, %zu) = ", column,
				    strlen(v[i]));
		else
			cpa_ch_addf(q, "%s = ", column);
		cpa_ch_quote_str(q, v[i]);
	}
	cpa_ch_add(q, ")");
}

/* The conditions of a range: its windows (and with held the older ones
 * of the netting kinds), the days they are in, the label filters. */
static void where_sql(struct fleet *f, struct cpa_buf *q, uint64_t from,
		      uint64_t to, bool held)
{
	const struct query_opts *o = f->o;
	const struct filter *flt = &o->filter;
	/* a job's windows, or the continuous history (job ''): never both,
	 * which would count a job's samples twice on a host that pushes */
	cpa_ch_add(q, " WHERE job = ");
	cpa_ch_quote_str(q, o->job ? o->job : "");
	if (to != UINT64_MAX) {
		cpa_ch_addf(q, " AND time < %" PRIu64 " AND day <= ", to);
		day_sql(q, to - 1);
	}
	if (from) {
		cpa_ch_addf(q, " AND ((time + duration > %" PRIu64 " AND day "
			    ">= ", from);
		day_sql(q, from > WINDOW_MAX ? from - WINDOW_MAX : 0);
		cpa_ch_add(q, ")");
		if (held) {
			cpa_ch_add(q, " OR kind IN ");
			nets_sql(q);
		}
		cpa_ch_add(q, ")");
	}
	if (flt->kinds) {
		const char *sep = " AND kind IN (";
		for (unsigned k = 0; k < CPA_KIND_COUNT; k++)
			if (flt->kinds & 1u << k) {
				cpa_ch_add(q, sep);
				cpa_ch_quote_str(q, cpa_kind_name(k));
				sep = ", ";
			}
		cpa_ch_add(q, ")");
	}
	if (flt->n_comms) {
		cpa_ch_add(q, " AND (");
		for (size_t i = 0; i < flt->n_comms; i++) {
			const struct comm_match *c = &flt->comms[i];
			if (i)
				cpa_ch_add(q, " OR ");
			/* the name itself, or the whole comm matching it as a
			 * pattern: a plain name is only the equality, which
			 * the primary key (kind, comm, ...) reads directly */
			cpa_ch_add(q, "comm = ");
			cpa_ch_quote_str(q, c->name);
			if (c->is_re && strpbrk(c->name, ".[]()*+?{}|^$\\")) {
				struct cpa_buf re = {0};
				cpa_ch_addf(&re, "^(?:%s)$", c->name);
				cpa_ch_add(q, " OR match(comm, ");
				cpa_ch_quote(q, (const char *)re.p, re.len);
				cpa_ch_add(q, ")");
				cpa_buf_free(&re);
			}
		}
		cpa_ch_add(q, ")");
	}
	any_of(q, flt->containers, flt->n_containers, "container", true);
	any_of(q, flt->pods, flt->n_pods, "pod", true);
	any_of(q, flt->envs, flt->n_envs, "env", false);
	if (flt->n_cgroups) {	/* a path, and those below it */
		cpa_ch_add(q, " AND (");
		for (size_t i = 0; i < flt->n_cgroups; i++) {
			const char *p = flt->cgroups[i];
			size_t n = strlen(p);
			while (n > 1 && p[n - 1] == '/')
				n--;
			if (i)
				cpa_ch_add(q, " OR ");
			cpa_ch_add(q, "cgroup = ");
			cpa_ch_quote(q, p, n);
			cpa_ch_addf(q, " OR substring(cgroup, 1, %zu) = ", n + 1);
			struct cpa_buf b = {0};
			cpa_buf_add(&b, p, n);
			cpa_buf_add(&b, "/", 1);
			cpa_ch_quote(q, (const char *)b.p, b.len);
			cpa_buf_free(&b);
		}
		cpa_ch_add(q, ")");
	}
	if (o->n_hosts) {
		cpa_ch_add(q, " AND (");
		for (size_t i = 0; i < o->n_hosts; i++) {
			cpa_ch_add(q, i ? " OR (" : "(");
			if (!glob_like(q, o->hosts[i])) {
				like_prefix(q, o->hosts[i]);
				cpa_ch_add(q, "match(host, ");
				glob_sql(q, o->hosts[i]);
				cpa_ch_add(q, ")");
			}
			cpa_ch_add(q, ")");
		}
		cpa_ch_add(q, ")");
	}
}

static bool shows(const struct query_opts *o, enum cpa_label l)
{
	for (unsigned i = 0; i < o->labels.n; i++)
		if (o->labels.order[i] == l)
			return true;
	return false;
}

static void run(struct fleet *f, struct cpa_buf *q)
{
	cpa_ch_add(q, " FORMAT RowBinary");
	cpa_buf_add(q, "", 1);
	if (cpa_ch_exec(&f->ch, (const char *)q->p, NULL, 0, NULL) < 0)
		cpa_die("%s", f->ch.err);
}

/* One summed row of the answer; strings are ids of the answer's
 * dictionary. */
struct frow {
	uint64_t t, stack, v;
	uint32_t comm, cg, env, host;
	uint16_t kind, flags;
};

struct answer {
	struct cpa_store_dict sd;
	struct cpa_strtab *strs;	/* the same ids as sd.d's strings */
	struct cpa_stacktab *labelsets;	/* the same ids as sd.labelsets */
	struct cpa_stacktab *stacks;	/* (host, hash lo, hash hi) -> id */
	struct frow *rows;
	size_t n, cap;
	/* frames of each stack hash: ids of strs, by hash */
	struct fstack { uint64_t hash; uint32_t off, n; } *fs;
	uint32_t n_fs, cap_fs;
	struct cpa_htab fs_index;
	uint32_t *frames;
	size_t n_frames, cap_frames;
	uint64_t unknown_stacks;
};

static uint32_t string_id(struct answer *a, const char *s, uint32_t len)
{
	if (!len)
		return 0;
	bool is_new;
	uint32_t id = cpa_strtab_intern(a->strs, s, len, &is_new);
	if (is_new && cpa_dict_add_string(&a->sd.d, s, len) != id)
		cpa_die("the fleet's dictionary lost count of its strings");
	return id;
}

static const struct fstack *frames_of(const struct answer *a, uint64_t h)
{
	struct cpa_htab_probe pr;
	for (uint32_t id = cpa_htab_first(&a->fs_index, cpa_hash_u64(h), &pr);
	     id; id = cpa_htab_next(&a->fs_index, &pr))
		if (a->fs[id - 1].hash == h)
			return &a->fs[id - 1];
	return NULL;
}

/* The answer's stack of (host, hash): its frames, after "[host NAME]"
 * when --labels host. */
static uint32_t stack_id(struct answer *a, uint32_t host, uint64_t hash)
{
	uint32_t key[3] = {host, (uint32_t)hash, (uint32_t)(hash >> 32)};
	bool is_new;
	uint32_t id = cpa_stacktab_intern(a->stacks, key, 3, &is_new);
	if (!is_new)
		return id;
	const struct fstack *fs = frames_of(a, hash);
	uint32_t n = fs ? fs->n : 1;
	uint32_t *v = cpa_malloc(((size_t)n + 1) * sizeof(*v)), k = 0;
	if (host) {
		uint32_t len;
		const char *h = cpa_dict_string(&a->sd.d, host, &len);
		char *fr = cpa_malloc(len + 8);
		int fl = snprintf(fr, len + 8, "[host %s]", h);
		v[k++] = string_id(a, fr, (uint32_t)fl);
		free(fr);
	}
	if (fs) {
		memcpy(v + k, a->frames + fs->off, fs->n * sizeof(*v));
		k += fs->n;
	} else {
		a->unknown_stacks++;
		v[k++] = string_id(a, "[unknown]", 9);
	}
	uint32_t sid = cpa_dict_add_stack(&a->sd.d, v, k);
	free(v);
	if (sid != id)
		cpa_die("the fleet's dictionary lost count of its stacks");
	return id;
}

static uint32_t labelset_id(struct answer *a, const struct frow *r)
{
	uint32_t key[5] = {r->kind, r->flags, r->comm, r->cg, r->env};
	bool is_new;
	uint32_t id = cpa_stacktab_intern(a->labelsets, key, 5, &is_new);
	if (is_new) {
		struct cpa_store_dict *sd = &a->sd;
		CPA_GROW_ZERO(sd->labelsets, sd->caplabelsets,
			      (size_t)sd->nlabelsets + 1);
		sd->labelsets[sd->nlabelsets++] = (struct cpa_store_labelset){
			.kind = r->kind, .flags = r->flags, .comm = r->comm,
			.container = r->cg, .env = r->env,
		};
		if (sd->nlabelsets - 1 != id)
			cpa_die("the fleet's dictionary lost count of its "
				"label sets");
	}
	return id;
}

static void answer_init(struct answer *a)
{
	memset(a, 0, sizeof(*a));
	cpa_store_dict_init(&a->sd);
	a->strs = cpa_strtab_new();
	a->labelsets = cpa_stacktab_new();
	a->stacks = cpa_stacktab_new();
	cpa_htab_init(&a->fs_index, 1024);
}

static void answer_free(struct answer *a)
{
	cpa_store_dict_free(&a->sd);
	cpa_strtab_free(a->strs);
	cpa_stacktab_free(a->labelsets);
	cpa_stacktab_free(a->stacks);
	free(a->rows);
	free(a->fs);
	cpa_htab_free(&a->fs_index);
	free(a->frames);
}

static void bad_answer(struct fleet *f, const char *what, size_t at)
{
	cpa_die("%s: %s: byte %zu of the answer: cut short or not the "
		"columns asked for", f->ch.url, what, at);
}

/* The rows: "SELECT kind, flags, comm, cgroup, env, host, t, stack,
 * sum(value)", of the columns not shown only ''. */
static void read_rows(struct fleet *f, struct answer *a, uint64_t from,
		      uint64_t to, uint64_t every_ns, uint64_t origin,
		      bool held)
{
	const struct query_opts *o = f->o;
	bool pprof = o->format == FORMAT_PPROF;
	bool comm = pprof || shows(o, CPA_LABEL_COMM);
	bool cg = pprof || shows(o, CPA_LABEL_CONTAINER) ||
		  shows(o, CPA_LABEL_POD) || shows(o, CPA_LABEL_CGROUP);
	bool env = pprof || shows(o, CPA_LABEL_ENV);
	struct cpa_buf q = {0}, group = {0};
	cpa_ch_add(&q, "SELECT kind, flags");
	cpa_ch_add(&group, " GROUP BY kind, flags, stack");
	cpa_ch_add(&q, comm ? ", comm" : ", ''");
	cpa_ch_add(&q, cg ? ", cgroup" : ", ''");
	cpa_ch_add(&q, env ? ", env" : ", ''");
	cpa_ch_add(&q, o->host_label ? ", host" : ", ''");
	if (comm)
		cpa_ch_add(&group, ", comm");
	if (cg)
		cpa_ch_add(&group, ", cgroup");
	if (env)
		cpa_ch_add(&group, ", env");
	if (o->host_label)
		cpa_ch_add(&group, ", host");
	if (every_ns == 1) {
		cpa_ch_add(&q, ", time AS t");
		cpa_ch_add(&group, ", t");
	} else if (every_ns) {
		/* a difference of UInt64 is an Int64 in ClickHouse */
		cpa_ch_addf(&q, ", if(time < %" PRIu64 ", time, toUInt64(time - "
			    "(time - %" PRIu64 ") %% %" PRIu64 ")) AS t", origin,
			    origin, every_ns);
		cpa_ch_add(&group, ", t");
	} else {
		cpa_ch_add(&q, ", toUInt64(0) AS t");
	}
	cpa_ch_addf(&q, ", stack, sum(value) FROM %s.samples", o->database);
	where_sql(f, &q, from, to, held);
	cpa_buf_add(&q, group.p, group.len);
	cpa_buf_free(&group);
	/* the stream sink sums a group once the next one begins */
	if (every_ns)
		cpa_ch_add(&q, " ORDER BY t");
	run(f, &q);
	cpa_buf_free(&q);

	struct cpa_rb rb;
	cpa_rb_init(&rb, f->ch.body.p, f->ch.body.len);
	while (cpa_rb_more(&rb)) {
		uint32_t len;
		const char *s = cpa_rb_get_string(&rb, &len);
		char kind[32];
		snprintf(kind, sizeof(kind), "%.*s", (int)(len < 31 ? len : 31),
			 s);
		struct frow r = {0};
		r.flags = cpa_rb_get_u16(&rb);
		s = cpa_rb_get_string(&rb, &len);
		r.comm = string_id(a, s, len);
		s = cpa_rb_get_string(&rb, &len);
		r.cg = string_id(a, s, len);
		s = cpa_rb_get_string(&rb, &len);
		r.env = string_id(a, s, len);
		s = cpa_rb_get_string(&rb, &len);
		r.host = string_id(a, s, len);
		r.t = cpa_rb_get_u64(&rb);
		r.stack = cpa_rb_get_u64(&rb);
		r.v = cpa_rb_get_u64(&rb);
		if (rb.bad)
			bad_answer(f, "samples", (size_t)(rb.p - rb.start));
		int k = cpa_kind_parse(kind);
		if (k < 0) {	/* a kind of a newer cpa: not this one's */
			cpa_debug("skipping rows of unknown kind '%s'", kind);
			continue;
		}
		r.kind = (uint16_t)k;
		CPA_GROW(a->rows, a->cap, a->n + 1);
		a->rows[a->n++] = r;
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Hashes per statement: a literal list is parsed in no time, and read
 * through the stacks' primary key (hash) on each shard. */
#define STACKS_PER_QUERY 50000

static void parse_stacks(struct fleet *f, struct answer *a);

/* The frames of the stacks the rows name, asked for by hash: the list
 * from the rows' answer, not the samples read again. */
static void read_stacks(struct fleet *f, struct answer *a)
{
	if (!a->n)
		return;
	uint64_t *h = cpa_malloc(a->n * sizeof(*h));
	size_t n = 0;
	for (size_t i = 0; i < a->n; i++)
		h[n++] = a->rows[i].stack;
	qsort(h, n, sizeof(*h), u64_cmp);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || h[u - 1] != h[i])
			h[u++] = h[i];
	for (size_t at = 0; at < u; at += STACKS_PER_QUERY) {
		size_t end = at + STACKS_PER_QUERY < u ? at + STACKS_PER_QUERY
						       : u;
		struct cpa_buf q = {0};
		cpa_ch_addf(&q, "SELECT hash, any(frames) FROM %s.stacks WHERE "
			    "hash IN (", f->o->database);
		for (size_t i = at; i < end; i++)
			cpa_ch_addf(&q, i > at ? ",%" PRIu64 : "%" PRIu64,
				    h[i]);
		cpa_ch_add(&q, ") GROUP BY hash FORMAT RowBinary");
		cpa_buf_add(&q, "", 1);
		char settings[64];
		snprintf(settings, sizeof(settings), "max_query_size=%zu",
			 q.len + 4096);
		if (cpa_ch_exec(&f->ch, (const char *)q.p, NULL, 0,
				settings) < 0)
			cpa_die("%s", f->ch.err);
		cpa_buf_free(&q);
		parse_stacks(f, a);
	}
	free(h);
}

static void parse_stacks(struct fleet *f, struct answer *a)
{
	struct cpa_rb rb;
	cpa_rb_init(&rb, f->ch.body.p, f->ch.body.len);
	while (cpa_rb_more(&rb)) {
		uint64_t h = cpa_rb_get_u64(&rb);
		uint64_t n = cpa_rb_get_count(&rb, CPA_MAX_STACK_DEPTH);
		CPA_GROW(a->frames, a->cap_frames, a->n_frames + n);
		struct fstack fs = {h, (uint32_t)a->n_frames, (uint32_t)n};
		for (uint64_t i = 0; i < n && !rb.bad; i++) {
			uint32_t len;
			const char *s = cpa_rb_get_string(&rb, &len);
			/* a frame is never empty (cpa-store's rule) */
			a->frames[a->n_frames++] = len ? string_id(a, s, len)
						       : string_id(a, "[unknown]", 9);
		}
		if (rb.bad)
			bad_answer(f, "stacks", (size_t)(rb.p - rb.start));
		if (frames_of(a, h))
			continue;
		CPA_GROW(a->fs, a->cap_fs, (size_t)a->n_fs + 1);
		a->fs[a->n_fs++] = fs;
		struct cpa_htab_probe pr;
		cpa_htab_first(&a->fs_index, cpa_hash_u64(h), &pr);
		while (cpa_htab_next(&a->fs_index, &pr))
			;
		cpa_htab_add(&a->fs_index, &pr, a->n_fs);
	}
}

/* Whether the hosts and labels asked for have samples of a kind that
 * nets frees before to: the older windows are read only then, as a store
 * query reads them (an OR on every row costs a tenth of a big query). */
static bool has_netting(struct fleet *f, uint64_t to)
{
	uint32_t nets = 0;
	for (unsigned k = 0; k < CPA_KIND_COUNT; k++)
		if (cpa_kind_nets(k))
			nets |= 1u << k;
	if (f->o->filter.kinds && !(f->o->filter.kinds & nets))
		return false;
	struct cpa_buf q = {0};
	uint64_t n;
	cpa_ch_addf(&q, "SELECT count() FROM (SELECT 1 FROM %s.samples",
		    f->o->database);
	where_sql(f, &q, 0, to, false);
	cpa_ch_add(&q, " AND kind IN ");
	nets_sql(&q);
	cpa_ch_add(&q, " LIMIT 1)");
	if (cpa_ch_numbers(&f->ch, &q, &n, 1) < 0)
		cpa_die("%s", f->ch.err);
	return n > 0;
}

void fleet_read(struct fleet *f, uint64_t from, uint64_t to, unsigned column,
		uint64_t every_ns, uint64_t origin, bool held, struct sink *k,
		struct scan_stats *st)
{
	struct answer a;
	if (held && from)
		held = has_netting(f, to);
	answer_init(&a);
	read_rows(f, &a, from, to, every_ns, origin, held);
	read_stacks(f, &a);
	/* label filters ran in ClickHouse; frame filters run here */
	struct filter frames = f->o->filter;
	frames.any_label = false;
	struct filter_cache cache = {0};
	struct cpa_segment_info si = {.interval_ns = CPA_NSEC_PER_SEC};
	for (size_t i = 0; i < a.n; i++) {	/* the dictionary first */
		labelset_id(&a, &a.rows[i]);
		stack_id(&a, a.rows[i].host, a.rows[i].stack);
	}
	k->begin(k, &si, &a.sd);
	for (size_t i = 0; i < a.n; i++) {
		const struct frow *r = &a.rows[i];
		uint32_t ls = labelset_id(&a, r);
		uint32_t stack = stack_id(&a, r->host, r->stack);
		if (frames.any_frame &&
		    !filter_entry(&frames, &cache, &a.sd, ls, stack))
			continue;
		st->entries++;
		if (cpa_kind_nets(r->kind))
			st->nets = true;
		k->entry(k, column, r->t, ls, stack, r->v);
	}
	k->end(k, &si, &a.sd);
	if (a.unknown_stacks)
		cpa_warn("%s: %llu stacks named by samples are not in %s.stacks "
			 "(written as [unknown])", f->ch.url,
			 (unsigned long long)a.unknown_stacks, f->o->database);
	filter_cache_reset(&cache);
	answer_free(&a);
	st->segments++;
}

void fleet_check_windows(struct fleet *f, uint64_t from, uint64_t to,
			 uint64_t max)
{
	struct cpa_buf q = {0};
	uint64_t v;
	/* a host's (or a job's) 10 s of history is one window, however
	 * finely its store cut it */
	cpa_ch_addf(&q, "SELECT count() FROM (SELECT DISTINCT host, job, "
		    "intDiv(time, 10000000000) FROM %s.samples",
		    f->o->database);
	where_sql(f, &q, from, to, false);
	cpa_ch_add(&q, ")");
	if (cpa_ch_numbers(&f->ch, &q, &v, 1) < 0)
		cpa_die("%s", f->ch.err);
	if (v > max)
		cpa_die("%s: %llu windows match, more than --max-windows %llu",
			f->ch.url, (unsigned long long)v,
			(unsigned long long)max);
}

uint64_t fleet_interval(struct fleet *f, uint64_t from, uint64_t to)
{
	struct cpa_buf q = {0};
	uint64_t v;
	cpa_ch_addf(&q, "SELECT max(duration) FROM %s.samples",
		    f->o->database);
	where_sql(f, &q, from, to, false);
	if (cpa_ch_numbers(&f->ch, &q, &v, 1) < 0)
		cpa_die("%s", f->ch.err);
	return v;
}

void fleet_list(struct fleet *f, FILE *out)
{
	struct cpa_buf q = {0};
	cpa_ch_addf(&q, "SELECT host, min(time), max(time + duration), "
		    "count() FROM %s.samples", f->o->database);
	where_sql(f, &q, 0, UINT64_MAX, false);
	cpa_ch_add(&q, " GROUP BY host ORDER BY host");
	run(f, &q);
	cpa_buf_free(&q);
	struct cpa_rb rb;
	cpa_rb_init(&rb, f->ch.body.p, f->ch.body.len);
	uint64_t first = UINT64_MAX, end = 0, rows = 0;
	char a[64], b[64];
	fprintf(out, "%-40s %-23s %-23s %10s\n", "host", "first", "end",
		"rows");
	while (cpa_rb_more(&rb)) {
		uint32_t len;
		const char *h = cpa_rb_get_string(&rb, &len);
		uint64_t lo = cpa_rb_get_u64(&rb), hi = cpa_rb_get_u64(&rb);
		uint64_t n = cpa_rb_get_u64(&rb);
		if (rb.bad)
			bad_answer(f, "samples", (size_t)(rb.p - rb.start));
		cpa_format_time(lo, a, sizeof(a));
		cpa_format_time(hi, b, sizeof(b));
		fprintf(out, "%-40.*s %-23s %-23s %10" PRIu64 "\n", (int)len, h,
			a, b, n);
		if (lo < first)
			first = lo;
		if (hi > end)
			end = hi;
		rows += n;
	}
	if (!rows) {
		fprintf(out, "range empty\n");
		return;
	}
	list_range(out, first, end, rows, "rows");
}
