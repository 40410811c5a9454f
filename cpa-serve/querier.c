/* SPDX-License-Identifier: MIT */
/*
 * The four methods, each decoded on the HTTP thread (a bad body is 400
 * there) and answered on a worker (offload.h), since each asks
 * ClickHouse. A merge is all or nothing: cpa-query either writes every
 * stack of the range or fails, and only a whole answer is encoded.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clickhouse.h"
#include "errors.h"
#include "flame.h"
#include "fleet.h"
#include "fleetraw.h"
#include "jobs.h"
#include "log.h"
#include "protobuf.h"
#include "querier.h"

#define MAX_PROFILE_TYPES 500
#define MAX_LABEL_VALUES 100
#define MAX_MATCHERS 16
#define MAX_CALL_SITE 64
#define MERGE_MAX_BYTES (512u << 20)

/* Pyroscope's id of each cpa kind; the job modes' profile types
 * (spec.c) are rows of it. process_cpu's cpu nanoseconds are samples
 * times the period, which only a job's frequency gives. */
const struct profile_type profile_types[] = {
	{ "process_cpu:samples:count:cpu:nanoseconds", "oncpu", false },
	{ "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "oncpu", true },
	{ "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds",
	  "offcpu-blocked,offcpu-preempted,offcpu-yielded,offcpu-delay",
	  false },
	{ "irq_off:irq_off:nanoseconds:irq_off:nanoseconds", "irqoff", false },
	{ "memory:virtual_alloc:bytes:space:bytes", "mem-virt", false },
	{ "memory:physical_alloc:bytes:space:bytes", "mem-phys", false },
	{ "memory:physical_usage:bytes:space:bytes", "mem-usage", false },
	{ "memory:malloc:bytes:space:bytes", "heap-alloc", false },
	{ "memory:malloc_inuse:bytes:space:bytes", "heap-inuse", false },
	{ "memory:alloc_space:bytes:space:bytes", "java-alloc", false },
	{ "memory:inuse_space:bytes:space:bytes", "java-live", false },
};
const size_t n_profile_types = sizeof(profile_types) / sizeof(*profile_types);

static const char *const label_names[] = {
	"region", "hostname", "container_id", "container_hostname",
	"container_host_namespace",
};

/* ---- label selectors --------------------------------------------------- */

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* A quoted value ("...", '...' with PromQL's escapes, `...` raw). */
static const char *quoted(const char *p, const char *end, char *out,
			  size_t outlen, char *err, size_t errlen,
			  const char *start)
{
	char q = *p++;
	size_t n = 0;

	for (; p < end && *p != q; p++) {
		char c = *p;

		if (c == '\\' && q != '`') {
			if (++p == end)
				break;
			c = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
		}
		if (n + 1 >= outlen) {
			cpa_fail(err, errlen, "label_selector: byte %zu: a value "
				 "over %zu bytes", (size_t)(p - start),
				 outlen - 1);
			return NULL;
		}
		out[n++] = c;
	}
	if (p == end) {
		cpa_fail(err, errlen, "label_selector: byte %zu: a value that "
			 "does not end", (size_t)(p - start));
		return NULL;
	}
	out[n] = 0;
	return p + 1;
}

int selector_parse(const char *s, size_t len, struct selector *sel,
		   char *err, size_t errlen)
{
	const char *p = s, *end = s + len;
	static const struct { const char *name; size_t off, size; } labels[] = {
		{ "id", offsetof(struct selector, id), 129 },
		{ "hostname", offsetof(struct selector, hostname), 256 },
		{ "container_id", offsetof(struct selector, container_id), 129 },
		{ "container_hostname",
		  offsetof(struct selector, container_hostname), 256 },
		{ "region", offsetof(struct selector, region), 256 },
		{ "__profile_type__", offsetof(struct selector, profile_type),
		  256 },
		/* cpa's extension: the process name */
		{ "comm", offsetof(struct selector, comm), 256 },
	};

	memset(sel, 0, sizeof(*sel));
	p = skip_ws(p, end);
	if (p == end)
		return 0;
	if (*p++ != '{')
		return cpa_fail(err, errlen, "label_selector: expected {");
	for (;;) {
		char name[64], value[256];
		const char *ns;
		size_t nl;
		int k = -1;

		p = skip_ws(p, end);
		if (p < end && *p == '}')
			break;
		ns = p;
		while (p < end && (*p == '_' || (*p >= 'a' && *p <= 'z') ||
				   (*p >= 'A' && *p <= 'Z') ||
				   (p > ns && *p >= '0' && *p <= '9')))
			p++;
		nl = (size_t)(p - ns);
		if (!nl || nl >= sizeof(name))
			return cpa_fail(err, errlen, "label_selector: byte %zu: "
					"expected a label name",
					(size_t)(ns - s));
		memcpy(name, ns, nl);
		name[nl] = 0;
		p = skip_ws(p, end);
		if (p < end && (*p == '!' || (*p == '=' && p + 1 < end &&
					      p[1] == '~')))
			return cpa_fail(err, errlen, "label_selector: %s: only = "
					"matchers are supported", name);
		if (p == end || *p++ != '=')
			return cpa_fail(err, errlen, "label_selector: byte %zu: "
					"expected =", (size_t)(p - s));
		p = skip_ws(p, end);
		if (p == end || (*p != '"' && *p != '\'' && *p != '`'))
			return cpa_fail(err, errlen, "label_selector: byte %zu: "
					"expected a quoted value",
					(size_t)(p - s));
		p = quoted(p, end, value, sizeof(value), err, errlen, s);
		if (!p)
			return -1;
		for (size_t i = 0; i < sizeof(labels) / sizeof(*labels); i++)
			if (!strcmp(labels[i].name, name))
				k = (int)i;
		if (k < 0)
			return cpa_fail(err, errlen, "label_selector: label %s "
					"is not one of id, region, hostname, "
					"container_id, container_hostname, "
					"__profile_type__ (or cpa's comm)",
					name);
		/* HUATUO's "any" values select nothing */
		if (value[0] && strcmp(value, "all") && strcmp(value, "All") &&
		    strcmp(value, "*")) {
			char *slot = (char *)sel + labels[k].off;

			if (strlen(value) >= labels[k].size)
				return cpa_fail(err, errlen, "label_selector: "
						"%s: a value over %zu bytes",
						name, labels[k].size - 1);
			if (slot[0] && strcmp(slot, value))
				return cpa_fail(err, errlen, "label_selector: "
						"%s has two values", name);
			snprintf(slot, labels[k].size, "%s", value);
			sel->any = true;
		}
		p = skip_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == '}')
			break;
		return cpa_fail(err, errlen, "label_selector: byte %zu: "
				"expected , or }", (size_t)(p - s));
	}
	p = skip_ws(p + 1, end);
	if (p != end)
		return cpa_fail(err, errlen, "label_selector: byte %zu: text "
				"after }", (size_t)(p - s));
	return 0;
}

/* ---- requests ---------------------------------------------------------- */

enum method { M_MERGE, M_TYPES, M_NAMES, M_VALUES };

struct qreq {
	enum method m;
	bool semantic;			/* decoded, but not a query */
	char type_id[256], name[64];
	struct selector sel;
	int64_t start, end;		/* ms */
	char *site[MAX_CALL_SITE];	/* stack_trace_selector's call site */
	size_t n_site;
};

static void qreq_free(struct qreq *q)
{
	for (size_t i = 0; i < q->n_site; i++)
		free(q->site[i]);
	free(q);
}

static int str_field(const struct cpa_pb_reader *r,
		     const struct cpa_pb_field *f, char *out, size_t outlen,
		     const char *what, char *err, size_t errlen)
{
	if (cpa_pb_utf8(r, f, err, errlen))
		return -1;
	if (f->len >= outlen)
		return cpa_fail(err, errlen, "%s: over %zu bytes", what,
				outlen - 1);
	memcpy(out, f->p, f->len);
	out[f->len] = 0;
	return 0;
}

/* types.v1.StackTraceSelector: its call site's names, root first. */
static int decode_site(const struct cpa_pb_reader *r,
		       const struct cpa_pb_field *f, struct qreq *q, char *err,
		       size_t errlen)
{
	struct cpa_pb_reader sel, loc;
	struct cpa_pb_field g, h;
	int k;

	if (cpa_pb_enter(r, f, &sel, err, errlen))
		return -1;
	while ((k = cpa_pb_next(&sel, &g, err, errlen)) > 0) {
		if (g.number == 1) {		/* call_site: Location */
			if (cpa_pb_enter(&sel, &g, &loc, err, errlen))
				return -1;
			if (q->n_site == MAX_CALL_SITE)
				return cpa_fail(err, errlen, "stack_trace_"
						"selector: over %d frames",
						MAX_CALL_SITE);
			q->site[q->n_site] = cpa_strdup("");
			q->n_site++;
			while ((k = cpa_pb_next(&loc, &h, err, errlen)) > 0) {
				char name[1024];

				if (h.number != 1)
					continue;
				if (str_field(&loc, &h, name, sizeof(name),
					      "call_site name", err, errlen))
					return -1;
				free(q->site[q->n_site - 1]);
				q->site[q->n_site - 1] = cpa_strdup(name);
			}
			if (k < 0)
				return -1;
		} else if (g.number == 2) {	/* go_pgo: GoPGO */
			struct cpa_pb_reader pgo;

			if (cpa_pb_enter(&sel, &g, &pgo, err, errlen))
				return -1;
			while ((k = cpa_pb_next(&pgo, &h, err, errlen)) > 0)
				if ((h.number == 1 || h.number == 2) &&
				    cpa_pb_want(&pgo, &h, PB_VARINT, err,
						errlen))
					return -1;
			if (k < 0)
				return -1;
		}
	}
	return k;
}

/* Decodes the method's request message. 0, or -1 with err. */
static int decode(struct qreq *q, const char *body, size_t len, char *err,
		  size_t errlen)
{
	struct cpa_pb_reader r;
	struct cpa_pb_field f;
	char matchers[MAX_MATCHERS][1024];
	size_t n_matchers = 0;
	int k;
	/* each method's field numbers of start and end */
	uint32_t fs = q->m == M_MERGE ? 3 : q->m == M_TYPES ? 1
		      : q->m == M_NAMES ? 2 : 3;

	cpa_pb_init(&r, body, len);
	while ((k = cpa_pb_next(&r, &f, err, errlen)) > 0) {
		if (f.number == fs || f.number == fs + 1) {
			if (cpa_pb_want(&r, &f, PB_VARINT, err, errlen))
				return -1;
			*(f.number == fs ? &q->start : &q->end) = (int64_t)f.v;
			continue;
		}
		switch (q->m) {
		case M_MERGE:
			if (f.number == 1 &&
			    str_field(&r, &f, q->type_id, sizeof(q->type_id),
				      "profile_typeID", err, errlen))
				return -1;
			if (f.number == 2) {
				if (cpa_pb_utf8(&r, &f, err, errlen))
					return -1;
				if (selector_parse((const char *)f.p, f.len,
						   &q->sel, err, errlen)) {
					q->semantic = true;
					return -1;
				}
			}
			if ((f.number == 5 || f.number == 6) &&
			    cpa_pb_want(&r, &f, PB_VARINT, err, errlen))
				return -1;
			if (f.number == 6 && f.v == 2) {
				q->semantic = true;
				return cpa_fail(err, errlen, "format: the tree "
						"format is not served; ask for "
						"the flame graph");
			}
			if (f.number == 7 &&
			    decode_site(&r, &f, q, err, errlen) < 0)
				return -1;
			if (f.number == 8 && cpa_pb_utf8(&r, &f, err, errlen))
				return -1;
			break;
		case M_TYPES:
			break;
		case M_NAMES:
		case M_VALUES:
			if (f.number == (q->m == M_NAMES ? 1u : 2u)) {
				if (n_matchers == MAX_MATCHERS)
					return cpa_fail(err, errlen, "matchers: "
							"over %d", MAX_MATCHERS);
				if (str_field(&r, &f, matchers[n_matchers],
					      sizeof(matchers[0]), "matchers",
					      err, errlen))
					return -1;
				n_matchers++;
			}
			if (q->m == M_VALUES && f.number == 1 &&
			    str_field(&r, &f, q->name, sizeof(q->name), "name",
				      err, errlen))
				return -1;
			break;
		}
	}
	if (k < 0)
		return -1;
	q->semantic = true;	/* the wire is read: what follows is the query */
	if (q->m == M_VALUES) {
		if (n_matchers != 1)
			return cpa_fail(err, errlen, "matchers: expected one "
					"selector, not %zu", n_matchers);
		if (selector_parse(matchers[0], strlen(matchers[0]), &q->sel,
				   err, errlen))
			return -1;
		if (!q->sel.profile_type[0])
			return cpa_fail(err, errlen, "matchers: the selector "
					"must name __profile_type__");
	}
	for (size_t i = 0; q->m == M_NAMES && i < n_matchers; i++) {
		struct selector s;

		if (selector_parse(matchers[i], strlen(matchers[i]), &s, err,
				   errlen))
			return -1;
	}
	if (q->end < q->start)
		return cpa_fail(err, errlen, "end %" PRId64 " is before start "
				"%" PRId64, q->end, q->start);
	return 0;
}

static const struct profile_type *find_type(const char *id)
{
	for (size_t i = 0; i < n_profile_types; i++)
		if (!strcmp(profile_types[i].id, id))
			return &profile_types[i];
	return NULL;
}

/* ---- answers ----------------------------------------------------------- */

static void proto_answer(struct answer *a, struct cpa_buf *b)
{
	a->kind = ANSWER_BYTES;
	a->status = 200;
	a->content_type = "application/proto";
	a->bytes = *b;
	*b = (struct cpa_buf){ 0 };
}

static void error_answer(struct answer *a, const char *code, const char *msg)
{
	a->kind = ANSWER_JSON;
	a->status = api_status(code);
	a->json = api_error(code, msg);
}

/* The range in ns, ms given: an end of 0 is now, a start of 0 an hour
 * before the end. */
static void range_ns(const struct qreq *q, uint64_t *from, uint64_t *to)
{
	uint64_t now = (uint64_t)jobs_now_ns();

	*to = q->end > 0 ? (uint64_t)q->end * 1000000 : now;
	*from = q->start > 0 ? (uint64_t)q->start * 1000000
			     : *to > 3600000000000ull ? *to - 3600000000000ull
						      : 0;
}

static void range_sql(struct cpa_buf *b, uint64_t from, uint64_t to)
{
	cpa_ch_addf(b, "time < %" PRIu64 " AND time + duration > %" PRIu64
		    " AND day <= toDate(toDateTime(%" PRIu64 ")) AND day >= "
		    "toDate(toDateTime(%" PRIu64 ")) - 1", to, from,
		    to / 1000000000, from / 1000000000);
}

static void kinds_sql(struct cpa_buf *b, const char *kinds)
{
	const char *p = kinds;

	cpa_ch_add(b, "kind IN (");
	while (*p) {
		size_t n = strcspn(p, ",");

		if (p != kinds)
			cpa_ch_add(b, ", ");
		cpa_ch_quote(b, p, n);
		p += n + (p[n] == ',');
	}
	cpa_ch_add(b, ")");
}

/* Runs a statement of the fleet's ClickHouse: 0 with the answer in
 * ch->body, or -1 (logged, the answer set to 503). */
static int ch_select(struct cpa_ch *ch, struct cpa_buf *sql, struct answer *a,
		     const char *what)
{
	char err[300];

	cpa_ch_add(sql, " FORMAT RowBinary");
	cpa_buf_add(sql, "", 1);
	if (!ch->url && fleet_ch_open(ch, err, sizeof(err))) {
		cpa_err("%s: %s", what, err);
		error_answer(a, "service_unavailable",
			     "Profiling query service is unavailable");
		return -1;
	}
	if (cpa_ch_exec(ch, (const char *)sql->p, NULL, 0, NULL) < 0) {
		cpa_err("%s: %s", what, ch->err);
		error_answer(a, "service_unavailable",
			     "Profiling query service is unavailable");
		return -1;
	}
	return 0;
}

static void merge(struct qreq *q, struct answer *a)
{
	const struct profile_type *pt = find_type(q->type_id);
	char from[48], to[48], kind[200], job[200], host[600], cont[200];
	char pod[300], err[600], comm[300], maxw[48];
	char *args[14];
	size_t n = 0;
	uint64_t f, t, scale = 1;
	struct cpa_buf out = { 0 }, msg = { 0 };
	struct flame *fl;

	if (!pt) {
		char sample[128] = "";
		const char *c = strchr(q->type_id, ':');

		if (c)
			snprintf(sample, sizeof(sample), "%.*s",
				 (int)strcspn(c + 1, ":"), c + 1);
		snprintf(err, sizeof(err), "profile type %.200s: no merged "
			 "profile has the sample type \"%s\"", q->type_id,
			 sample);
		error_answer(a, "invalid_request", err);
		return;
	}
	if (q->sel.profile_type[0] && strcmp(q->sel.profile_type, pt->id)) {
		error_answer(a, "not_found", "profiles not found");
		return;
	}
	if (pt->job_only) {
		if (!q->sel.id[0]) {
			error_answer(a, "invalid_request", "process_cpu:cpu:"
				     "nanoseconds needs a job's sampling "
				     "frequency: select id=, or ask for "
				     "process_cpu:samples:count:cpu:"
				     "nanoseconds");
			return;
		}
		/* a node runs an Operation at the default frequency */
		scale = 1000000000ull / SPEC_DEFAULT_FREQ;
	}
	if (q->sel.region[0]) {
		/* only a job's windows have a region: its publication's */
		struct cpa_ch ch = { .fd = -1 };
		struct cpa_buf sql = { 0 };
		bool in = false;

		if (q->sel.id[0]) {
			cpa_ch_add(&sql, "SELECT count() FROM cpa.publications "
				   "WHERE request_id = ");
			cpa_ch_quote_str(&sql, q->sel.id);
			cpa_ch_add(&sql, " AND region = ");
			cpa_ch_quote_str(&sql, q->sel.region);
			if (ch_select(&ch, &sql, a, "SelectMergeStacktraces")) {
				cpa_buf_free(&sql);
				cpa_ch_free(&ch);
				return;
			}
			in = ch.body.len == 8 && ch.body.p[0];
		}
		cpa_buf_free(&sql);
		cpa_ch_free(&ch);
		if (!in) {
			error_answer(a, "not_found", "profiles not found");
			return;
		}
	}
	range_ns(q, &f, &t);
	snprintf(from, sizeof(from), "--from=@%" PRIu64 ".%09" PRIu64,
		 f / 1000000000, f % 1000000000);
	snprintf(to, sizeof(to), "--to=@%" PRIu64 ".%09" PRIu64,
		 t / 1000000000, t % 1000000000);
	snprintf(kind, sizeof(kind), "--kind=%s", pt->kinds);
	args[n++] = from;
	args[n++] = to;
	args[n++] = kind;
	snprintf(maxw, sizeof(maxw), "--max-windows=%u",
		 fleet_config()->max_windows);
	args[n++] = maxw;
	if (q->sel.id[0]) {
		snprintf(job, sizeof(job), "--job=%s", q->sel.id);
		args[n++] = job;
	}
	if (q->sel.hostname[0]) {
		/* a name, or cpa's extension, a glob of * ? [...] (no host
		 * name has those) */
		snprintf(host, sizeof(host), "--host=%s", q->sel.hostname);
		args[n++] = host;
	}
	if (q->sel.comm[0]) {
		snprintf(comm, sizeof(comm), "--comm=%s", q->sel.comm);
		args[n++] = comm;
	}
	if (q->sel.container_id[0]) {
		snprintf(cont, sizeof(cont), "--container=%s",
			 q->sel.container_id);
		args[n++] = cont;
	}
	if (q->sel.container_hostname[0]) {
		snprintf(pod, sizeof(pod), "--pod=%s", q->sel.container_hostname);
		args[n++] = pod;
	}
	args[n] = NULL;
	if (fleet_query(args, MERGE_MAX_BYTES, &out, err, sizeof(err))) {
		if (strstr(err, "--max-windows")) {
			snprintf(err, sizeof(err), "matching profiles exceed %u "
				 "records; narrow the time range or filters",
				 fleet_config()->max_windows);
			error_answer(a, "invalid_request", err);
			cpa_buf_free(&out);
			return;
		}
		cpa_err("SelectMergeStacktraces: %s", err);
		if (strstr(err, "invalid") || strstr(err, "expected"))
			error_answer(a, "invalid_request", err);
		else
			error_answer(a, "service_unavailable", "Profiling query "
				     "service is unavailable");
		cpa_buf_free(&out);
		return;
	}
	fl = flame_new();
	if (flame_add_folded(fl, out.p ? (const char *)out.p : "", out.len,
			     scale, q->site, q->n_site, err, sizeof(err))) {
		cpa_err("SelectMergeStacktraces: cpa-query's answer: %s", err);
		error_answer(a, "internal_error", NULL);
	} else if (!flame_total(fl)) {
		error_answer(a, "not_found", "profiles not found");
	} else {
		struct cpa_buf g = { 0 };

		flame_encode(fl, &g);
		cpa_pb_bytes(&msg, 1, g.p, g.len);	/* flamegraph */
		cpa_buf_free(&g);
		proto_answer(a, &msg);
	}
	flame_free(fl);
	cpa_buf_free(&out);
	cpa_buf_free(&msg);
}

static void add_type(struct cpa_buf *b, const char *id)
{
	struct cpa_buf t = { 0 };
	char part[5][128] = { "" };
	const char *p = id;

	for (int i = 0; i < 5; i++) {
		size_t n = strcspn(p, ":");

		snprintf(part[i], sizeof(part[i]), "%.*s", (int)n, p);
		p += n + (p[n] == ':');
	}
	cpa_pb_string(&t, 1, id);
	cpa_pb_string(&t, 2, part[0]);
	cpa_pb_string(&t, 4, part[1]);
	cpa_pb_string(&t, 5, part[2]);
	cpa_pb_string(&t, 6, part[3]);
	cpa_pb_string(&t, 7, part[4]);
	cpa_pb_bytes(b, 1, t.p, t.len);
	cpa_buf_free(&t);
}

static void types(struct qreq *q, struct answer *a)
{
	struct cpa_ch ch = { .fd = -1 };
	struct cpa_buf sql = { 0 }, out = { 0 };
	bool have[32] = { false };
	uint64_t f, t;
	struct cpa_rb rb;

	range_ns(q, &f, &t);
	cpa_ch_add(&sql, "SELECT DISTINCT kind, toUInt8(job != '') FROM "
		   "cpa.samples WHERE ");
	range_sql(&sql, f, t);
	cpa_ch_addf(&sql, " LIMIT %d", MAX_PROFILE_TYPES);
	if (ch_select(&ch, &sql, a, "ProfileTypes"))
		goto out;
	cpa_rb_init(&rb, ch.body.p, ch.body.len);
	while (cpa_rb_more(&rb)) {
		uint32_t kl;
		const char *k = cpa_rb_get_string(&rb, &kl);
		bool job = cpa_rb_get_u8(&rb);

		for (size_t i = 0; !rb.bad && i < n_profile_types; i++) {
			const char *ks = profile_types[i].kinds;

			for (const char *p = ks; *p;) {
				size_t n = strcspn(p, ",");

				if (n == kl && !memcmp(p, k, kl) &&
				    (job || !profile_types[i].job_only))
					have[i] = true;
				p += n + (p[n] == ',');
			}
		}
	}
	for (size_t i = 0; i < n_profile_types; i++)
		if (have[i])
			add_type(&out, profile_types[i].id);
	proto_answer(a, &out);
out:
	cpa_buf_free(&sql);
	cpa_buf_free(&out);
	cpa_ch_free(&ch);
}

static void names(struct qreq *q, struct answer *a)
{
	struct cpa_buf out = { 0 };

	(void)q;
	for (size_t i = 0; i < sizeof(label_names) / sizeof(*label_names); i++)
		cpa_pb_string(&out, 1, label_names[i]);
	proto_answer(a, &out);
}

/* AND column = 'value' for each label the selector has. */
static void selector_sql(struct cpa_buf *b, const struct selector *s)
{
	static const struct { size_t off; const char *column; } cols[] = {
		{ offsetof(struct selector, id), "job" },
		{ offsetof(struct selector, hostname), "host" },
		{ offsetof(struct selector, container_id), "container" },
		{ offsetof(struct selector, container_hostname), "pod" },
		{ offsetof(struct selector, comm), "comm" },
	};

	for (size_t i = 0; i < sizeof(cols) / sizeof(*cols); i++) {
		const char *v = (const char *)s + cols[i].off;

		if (!v[0])
			continue;
		cpa_ch_addf(b, " AND %s = ", cols[i].column);
		cpa_ch_quote_str(b, v);
	}
}

static void values(struct qreq *q, struct answer *a)
{
	const struct profile_type *pt = find_type(q->sel.profile_type);
	struct cpa_ch ch = { .fd = -1 };
	struct cpa_buf sql = { 0 }, out = { 0 };
	const char *col = !strcmp(q->name, "hostname") ? "host"
			  : !strcmp(q->name, "container_id") ? "container"
			  : !strcmp(q->name, "container_hostname") ? "pod"
			  : !strcmp(q->name, "id") ? "job"
			  : !strcmp(q->name, "region") ? "region" : NULL;
	uint64_t f, t;
	struct cpa_rb rb;

	if (!pt || !col) {	/* nothing has it */
		proto_answer(a, &out);
		return;
	}
	range_ns(q, &f, &t);
	if (!strcmp(col, "region")) {
		cpa_ch_add(&sql, "SELECT DISTINCT region FROM cpa.publications "
			   "WHERE region != '' AND request_id IN (SELECT "
			   "DISTINCT job FROM cpa.samples WHERE ");
		range_sql(&sql, f, t);
		cpa_ch_add(&sql, " AND ");
		kinds_sql(&sql, pt->kinds);
		selector_sql(&sql, &q->sel);
		cpa_ch_add(&sql, ")");
	} else {
		cpa_ch_addf(&sql, "SELECT DISTINCT %s FROM cpa.samples WHERE ",
			    col);
		range_sql(&sql, f, t);
		cpa_ch_add(&sql, " AND ");
		kinds_sql(&sql, pt->kinds);
		selector_sql(&sql, &q->sel);
		cpa_ch_addf(&sql, " AND %s != ''", col);
	}
	cpa_ch_addf(&sql, " ORDER BY %s LIMIT %d", col, MAX_LABEL_VALUES);
	if (ch_select(&ch, &sql, a, "LabelValues"))
		goto out;
	cpa_rb_init(&rb, ch.body.p, ch.body.len);
	while (cpa_rb_more(&rb)) {
		uint32_t l;
		const char *v = cpa_rb_get_string(&rb, &l);

		if (!rb.bad)
			cpa_pb_bytes(&out, 1, v, l);
	}
	proto_answer(a, &out);
out:
	cpa_buf_free(&sql);
	cpa_buf_free(&out);
	cpa_ch_free(&ch);
}

static void work(void *arg, struct answer *a)
{
	struct qreq *q = arg;

	switch (q->m) {
	case M_MERGE:
		merge(q, a);
		break;
	case M_TYPES:
		types(q, a);
		break;
	case M_NAMES:
		names(q, a);
		break;
	case M_VALUES:
		values(q, a);
		break;
	}
	qreq_free(q);
}

int querier_decode(unsigned method, const char *body, size_t len, char *err,
		   size_t errlen)
{
	struct qreq *q = cpa_calloc(1, sizeof(*q));
	int rc;

	q->m = (enum method)(method % 4);
	rc = decode(q, body, len, err, errlen);
	qreq_free(q);
	return rc;
}

void querier_handle(struct api_request *r, struct answer *a)
{
	static const char *const methods[] = { "SelectMergeStacktraces",
					       "ProfileTypes", "LabelNames",
					       "LabelValues" };
	const char *m = r->seg[r->n_seg - 1];
	struct qreq *q;
	char err[400];
	int k = -1;

	for (int i = 0; i < 4; i++)
		if (!strcmp(m, methods[i]))
			k = i;
	if (k < 0) {
		error_answer(a, "route_not_found", "route not found");
		return;
	}
	if (!api_config()->fleet) {
		error_answer(a, "service_unavailable", "Profiling query service "
			     "is unavailable on a node; the fleet's apiserver "
			     "(cpa-serve --fleet) serves it");
		return;
	}
	q = cpa_calloc(1, sizeof(*q));
	q->m = (enum method)k;
	if (decode(q, r->body, r->body_len, err, sizeof(err))) {
		cpa_err("%s: %s: %s", m, q->semantic ? "invalid query"
			: "invalid protobuf request", err);
		error_answer(a, "invalid_request", q->semantic ? err
			     : "invalid protobuf request");
		qreq_free(q);
		return;
	}
	if (q->m == M_MERGE) {
		int parts = 1;

		for (const char *p = q->type_id; *p; p++)
			parts += *p == ':';
		if (parts != 5 || !q->type_id[0]) {
			qreq_free(q);
			error_answer(a, "invalid_request", "profile_typeID: "
				     "expected NAME:SAMPLE_TYPE:SAMPLE_UNIT:"
				     "PERIOD_TYPE:PERIOD_UNIT");
			return;
		}
		if (!q->sel.id[0] && !q->sel.hostname[0] &&
		    !q->sel.container_id[0] && !q->sel.container_hostname[0]) {
			qreq_free(q);
			error_answer(a, "invalid_request", "label_selector: "
				     "select id, hostname, container_id or "
				     "container_hostname");
			return;
		}
	}
	a->kind = ANSWER_DEFER;
	a->work = work;
	a->work_arg = q;
}
