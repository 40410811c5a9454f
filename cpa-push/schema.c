/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "schema.h"

struct column {
	const char *name, *type;
};

/* What a row is. The window: its day (the partition), start and length
 * in UTC ns. Its labels: host, event kind and its unit, process name,
 * container id and pod UID read from the cgroup path, the cgroup path
 * (or a container name recorded as is), recorded env value, sample flags
 * (free, estimate). Then the stack's hash, the summed weight, and the
 * store position of the block the row came from; last, the request_id
 * of the profiling job whose window it is, empty for the continuous
 * history a host pushes. */
static const struct column samples[] = {
	{"day", "Date"}, {"time", "UInt64"}, {"duration", "UInt64"},
	{"host", "String"}, {"kind", "String"}, {"unit", "String"},
	{"comm", "String"}, {"container", "String"}, {"pod", "String"},
	{"cgroup", "String"}, {"env", "String"}, {"flags", "UInt16"},
	{"stack", "UInt64"}, {"value", "UInt64"}, {"pos", "UInt64"},
	{"job", "String"}, {NULL, NULL},
};
static const struct column stacks[] = {
	{"hash", "UInt64"}, {"frames", "Array(String)"}, {NULL, NULL},
};
/* A job's publication marker: written once all its windows are in, with
 * the node's region and the windows' length. */
static const struct column publications[] = {
	{"request_id", "String"}, {"host", "String"}, {"region", "String"},
	{"duration", "UInt64"}, {"published", "UInt64"}, {NULL, NULL},
};

const char schema_samples_columns[] =
	"day, time, duration, host, kind, unit, comm, container, pod, "
	"cgroup, env, flags, stack, value, pos, job";
const char schema_stacks_columns[] = "hash, frames";
const char schema_publications_columns[] =
	"request_id, host, region, duration, published";

static void columns_sql(struct cpa_buf *b, const struct column *c)
{
	cpa_ch_add(b, " (\n");
	for (; c->name; c++)
		cpa_ch_addf(b, "    %s %s%s\n", c->name, c->type,
			    c[1].name ? "," : "");
	cpa_ch_add(b, ")");
}

static const char *local_name(const struct push_opts *o, const char *t,
			      char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", t, o->cluster ? "_local" : "");
	return buf;
}

/* One statement per table; i from 0 until it returns false. */
static bool table_sql(const struct push_opts *o, unsigned i,
		      struct cpa_buf *b)
{
	const char *db = o->database;
	switch (i) {
	case 0:
		cpa_ch_addf(b, "CREATE DATABASE IF NOT EXISTS %s", db);
		return true;
	case 1:
		cpa_ch_addf(b, "CREATE TABLE IF NOT EXISTS %s.samples%s", db,
			    o->cluster ? "_local" : "");
		columns_sql(b, samples);
		cpa_ch_add(b, "\nENGINE = MergeTree\nPARTITION BY day\n"
			   "ORDER BY (kind, comm, host, time)");
		return true;
	case 2:
		cpa_ch_addf(b, "CREATE TABLE IF NOT EXISTS %s.stacks%s", db,
			    o->cluster ? "_local" : "");
		columns_sql(b, stacks);
		cpa_ch_add(b, "\nENGINE = ReplacingMergeTree\nORDER BY hash");
		return true;
	case 3:
		cpa_ch_addf(b, "CREATE TABLE IF NOT EXISTS %s.publications%s",
			    db, o->cluster ? "_local" : "");
		columns_sql(b, publications);
		cpa_ch_add(b, "\nENGINE = ReplacingMergeTree\n"
			   "ORDER BY request_id");
		return true;
	case 4:
	case 5:
	case 6:
		if (!o->cluster)
			return false;
		struct cpa_buf c = {0};
		cpa_ch_quote_str(&c, o->cluster);
		cpa_buf_add(&c, "", 1);
		if (i == 4)
			cpa_ch_addf(b, "CREATE TABLE IF NOT EXISTS %s.samples "
				    "AS %s.samples_local\nENGINE = "
				    "Distributed(%s, %s, samples_local, "
				    "cityHash64(host))", db, db, c.p, db);
		else if (i == 6)
			cpa_ch_addf(b, "CREATE TABLE IF NOT EXISTS "
				    "%s.publications AS %s.publications_local"
				    "\nENGINE = Distributed(%s, %s, "
				    "publications_local, cityHash64(request_id))",
				    db, db, c.p, db);
		else
			cpa_ch_addf(b, "CREATE TABLE IF NOT EXISTS %s.stacks "
				    "AS %s.stacks_local\nENGINE = "
				    "Distributed(%s, %s, stacks_local, hash)",
				    db, db, c.p, db);
		cpa_buf_free(&c);
		return true;
	}
	return false;
}

void schema_sql(const struct push_opts *o, struct cpa_buf *out)
{
	for (unsigned i = 0; table_sql(o, i, out); i++)
		cpa_ch_add(out, ";\n");
}

/* RowBinary rows of a SELECT. */
static int select_rows(struct cpa_ch *ch, struct cpa_buf *q)
{
	cpa_ch_add(q, " FORMAT RowBinary");
	cpa_buf_add(q, "", 1);
	return cpa_ch_exec(ch, (const char *)q->p, NULL, 0, NULL);
}

struct table_info {
	char engine[64];
	bool found;
};

static int check_columns(struct cpa_ch *ch, const struct push_opts *o,
			 const char *table, const struct column *want,
			 char *err, size_t errlen)
{
	struct cpa_buf q = {0};
	cpa_ch_add(&q, "SELECT name, type FROM system.columns WHERE "
		   "database = ");
	cpa_ch_quote_str(&q, o->database);
	cpa_ch_add(&q, " AND table = ");
	cpa_ch_quote_str(&q, table);
	int r = select_rows(ch, &q);
	cpa_buf_free(&q);
	if (r < 0)
		return SCHEMA_RETRY;
	for (const struct column *c = want; c->name; c++) {
		struct cpa_rb rb;
		cpa_rb_init(&rb, ch->body.p, ch->body.len);
		const char *type = NULL;
		uint32_t tl = 0;
		while (cpa_rb_more(&rb)) {
			uint32_t nl;
			const char *n = cpa_rb_get_string(&rb, &nl);
			const char *t = cpa_rb_get_string(&rb, &tl);
			if (nl == strlen(c->name) && !memcmp(n, c->name, nl)) {
				type = t;
				break;
			}
		}
		if (rb.bad) {
			cpa_fail(err, errlen, "%s: system.columns: answer cut "
				 "short", ch->url);
			return SCHEMA_RETRY;
		}
		if (!type) {
			cpa_fail(err, errlen, "%s: %s.%s has no column %s %s: "
				 "not a table cpa-push made (drop it, or "
				 "choose another --database)", ch->url,
				 o->database, table, c->name, c->type);
			return SCHEMA_BAD;
		}
		if (tl != strlen(c->type) || memcmp(type, c->type, tl)) {
			cpa_fail(err, errlen, "%s: %s.%s: column %s is %.*s, "
				 "expected %s: not a table cpa-push made "
				 "(drop it, or choose another --database)",
				 ch->url, o->database, table, c->name,
				 (int)tl, type, c->type);
			return SCHEMA_BAD;
		}
	}
	return SCHEMA_OK;
}

/* The engine of each table that exists. */
static int tables(struct cpa_ch *ch, const struct push_opts *o,
		  const char *const *names, struct table_info *ti, size_t n)
{
	struct cpa_buf q = {0};
	cpa_ch_add(&q, "SELECT name, engine FROM system.tables WHERE "
		   "database = ");
	cpa_ch_quote_str(&q, o->database);
	int r = select_rows(ch, &q);
	cpa_buf_free(&q);
	if (r < 0)
		return SCHEMA_RETRY;
	memset(ti, 0, n * sizeof(*ti));
	struct cpa_rb rb;
	cpa_rb_init(&rb, ch->body.p, ch->body.len);
	while (cpa_rb_more(&rb)) {
		uint32_t nl, el;
		const char *name = cpa_rb_get_string(&rb, &nl);
		const char *eng = cpa_rb_get_string(&rb, &el);
		for (size_t i = 0; i < n && !rb.bad; i++)
			if (nl == strlen(names[i]) &&
			    !memcmp(name, names[i], nl)) {
				ti[i].found = true;
				snprintf(ti[i].engine, sizeof(ti[i].engine),
					 "%.*s", (int)el, eng);
			}
	}
	return SCHEMA_OK;
}

static int check_cluster(struct cpa_ch *ch, const struct push_opts *o,
			 char *err, size_t errlen)
{
	struct cpa_buf q = {0};
	uint64_t n;
	cpa_ch_add(&q, "SELECT count() FROM system.clusters WHERE cluster = ");
	cpa_ch_quote_str(&q, o->cluster);
	if (cpa_ch_numbers(ch, &q, &n, 1) < 0)
		return SCHEMA_RETRY;
	if (!n) {
		cpa_fail(err, errlen, "%s: no cluster '%s' in the server's "
			 "remote_servers", ch->url, o->cluster);
		return SCHEMA_BAD;
	}
	return SCHEMA_OK;
}

/* With a cluster: every shard has both local tables (a shard without
 * them refuses its part of every insert). cluster() asks one replica of
 * each shard. */
static int check_shards(struct cpa_ch *ch, const struct push_opts *o,
			char *err, size_t errlen)
{
	struct cpa_buf q = {0};
	uint64_t v[2];
	cpa_ch_add(&q, "SELECT (SELECT count() FROM cluster(");
	cpa_ch_quote_str(&q, o->cluster);
	cpa_ch_add(&q, ", system, tables) WHERE database = ");
	cpa_ch_quote_str(&q, o->database);
	cpa_ch_add(&q, " AND name IN ('samples_local', 'stacks_local', "
		   "'publications_local')), "
		   "(SELECT count(DISTINCT shard_num) FROM system.clusters "
		   "WHERE cluster = ");
	cpa_ch_quote_str(&q, o->cluster);
	cpa_ch_add(&q, ")");
	if (cpa_ch_numbers(ch, &q, v, 2) < 0)
		return SCHEMA_RETRY;
	if (v[0] < 3 * v[1]) {
		cpa_fail(err, errlen, "%s: cluster '%s' has %llu shards and "
			 "%llu of their %llu local tables (%s.samples_local, "
			 "%s.stacks_local, %s.publications_local): run cpa-push "
			 "--init --cluster %s against each shard", ch->url,
			 o->cluster, (unsigned long long)v[1],
			 (unsigned long long)v[0],
			 (unsigned long long)(3 * v[1]), o->database,
			 o->database, o->database, o->cluster);
		return SCHEMA_RETRY;
	}
	return SCHEMA_OK;
}

int schema_ensure(struct cpa_ch *ch, const struct push_opts *o, bool create,
		  bool create_only, char *err, size_t errlen)
{
	int r;
	if (o->cluster && (r = check_cluster(ch, o, err, errlen)) < 0)
		return r;
	const char *names[6] = {"samples", "stacks", "publications",
				"samples_local", "stacks_local",
				"publications_local"};
	const struct column *cols[6] = {samples, stacks, publications,
					samples, stacks, publications};
	size_t n = o->cluster ? 6 : 3;
	struct table_info ti[6];
	if ((r = tables(ch, o, names, ti, n)) < 0)
		return r;
	bool missing = false;
	for (size_t i = 0; i < n; i++)
		missing |= !ti[i].found;
	if (missing && create) {
		struct cpa_buf b = {0};
		for (unsigned i = 0;; i++) {
			b.len = 0;
			if (!table_sql(o, i, &b))
				break;
			cpa_buf_add(&b, "", 1);
			if (cpa_ch_exec(ch, (const char *)b.p, NULL, 0,
					NULL) < 0) {
				cpa_buf_free(&b);
				return SCHEMA_RETRY;
			}
		}
		cpa_buf_free(&b);
		if ((r = tables(ch, o, names, ti, n)) < 0)
			return r;
		cpa_debug("%s: created the tables that were missing in %s",
			  ch->url, o->database);
	}
	for (size_t i = 0; i < n; i++) {
		if (!ti[i].found) {
			cpa_fail(err, errlen, "%s: no table %s.%s (cpa-push "
				 "--init creates it)", ch->url, o->database,
				 names[i]);
			return SCHEMA_RETRY;
		}
		bool dist = !strcmp(ti[i].engine, "Distributed");
		bool want_dist = o->cluster && i < 3;
		if (dist != want_dist) {
			cpa_fail(err, errlen, "%s: %s.%s is %s, expected %s "
				 "(%s)", ch->url, o->database, names[i],
				 ti[i].engine, want_dist ? "Distributed" :
				 "a MergeTree table", o->cluster ?
				 "--cluster makes samples, stacks and "
				 "publications Distributed" : "without --cluster the "
				 "tables are local");
			return SCHEMA_BAD;
		}
		if ((r = check_columns(ch, o, names[i], cols[i], err,
				       errlen)) < 0)
			return r;
	}
	if (o->cluster && (r = check_shards(ch, o, err, errlen)) < 0) {
		/* --init makes one shard's tables at a time */
		if (r == SCHEMA_RETRY && !create_only)
			return r;
		if (r == SCHEMA_RETRY && err[0])
			cpa_warn("%s", err);
		else if (r < 0)
			return r;
	}
	return SCHEMA_OK;
}

int schema_retain(struct cpa_ch *ch, const struct push_opts *o,
		  uint64_t cutoff_ns, unsigned *dropped)
{
	char local[64];
	local_name(o, "samples", local, sizeof(local));
	struct cpa_buf q = {0};
	/* the day partitions wholly before the cutoff's day */
	uint64_t cut_day = cutoff_ns / (86400 * 1000000000ull);
	cpa_ch_add(&q, "SELECT DISTINCT toString(min_date) FROM system.parts "
		   "WHERE active AND database = ");
	cpa_ch_quote_str(&q, o->database);
	cpa_ch_add(&q, " AND table = ");
	cpa_ch_quote_str(&q, local);
	cpa_ch_addf(&q, " AND toUInt32(max_date) < %" PRIu64
		    " ORDER BY 1", cut_day);
	int r = select_rows(ch, &q);
	cpa_buf_free(&q);
	*dropped = 0;
	if (r < 0)
		return -1;
	struct cpa_buf days = {0};
	cpa_buf_add(&days, ch->body.p, ch->body.len);
	struct cpa_rb rb;
	cpa_rb_init(&rb, days.p, days.len);
	while (cpa_rb_more(&rb)) {
		uint32_t l;
		const char *d = cpa_rb_get_string(&rb, &l);
		if (rb.bad)
			break;
		q.len = 0;
		cpa_ch_addf(&q, "ALTER TABLE %s.%s DROP PARTITION ",
			    o->database, local);
		cpa_ch_quote(&q, d, l);
		cpa_buf_add(&q, "", 1);
		if (cpa_ch_exec(ch, (const char *)q.p, NULL, 0, NULL) < 0) {
			cpa_buf_free(&q);
			cpa_buf_free(&days);
			return -1;
		}
		cpa_debug("%s: dropped %s.%s's day %.*s", ch->url, o->database,
			  local, (int)l, d);
		(*dropped)++;
	}
	cpa_buf_free(&q);
	cpa_buf_free(&days);
	return 0;
}

int schema_max_pos(struct cpa_ch *ch, const struct push_opts *o,
		   const char *host, uint64_t *pos)
{
	struct cpa_buf q = {0};
	cpa_ch_addf(&q, "SELECT max(pos) FROM %s.samples WHERE host = ",
		    o->database);
	cpa_ch_quote_str(&q, host);
	cpa_ch_add(&q, " AND job = ");
	cpa_ch_quote_str(&q, o->job ? o->job : "");
	return cpa_ch_numbers(ch, &q, pos, 1);
}

int schema_publish(struct cpa_ch *ch, const struct push_opts *o,
		   const char *host, uint64_t window_ns, uint64_t now_ns)
{
	struct cpa_buf row = {0};
	char sql[256];
	const char *region = o->region ? o->region : "";
	cpa_rb_string(&row, o->job, strlen(o->job));
	cpa_rb_string(&row, host, strlen(host));
	cpa_rb_string(&row, region, strlen(region));
	cpa_rb_u64(&row, window_ns);
	cpa_rb_u64(&row, now_ns);
	snprintf(sql, sizeof(sql), "INSERT INTO %s.publications (%s) FORMAT "
		 "RowBinary", o->database, schema_publications_columns);
	int r = cpa_ch_exec(ch, sql, row.p, row.len,
			    "insert_distributed_sync=1");
	cpa_buf_free(&row);
	return r;
}
