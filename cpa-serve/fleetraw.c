/* SPDX-License-Identifier: MIT */
/*
 * A raw page from ClickHouse: the marker first (its absence is 404, a
 * failure to read it 503), then the page's window starts, newest first,
 * then one cpa-query --split-every over those windows for their stacks,
 * each window made the pprof JSON a node's local raw page has
 * (windows_profile). A window's uploaded_timestamp is its publication's:
 * a job's windows go in together, when the job ends.
 */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "fleet.h"
#include "fleetraw.h"
#include "log.h"
#include "run.h"
#include "state.h"
#include "windows.h"

int fleet_ch_open(struct cpa_ch *ch, char *err, size_t errlen)
{
	if (cpa_ch_init(ch, fleet_config()->clickhouse, err, errlen) < 0)
		return -1;
	ch->timeout_ms = 30000;
	return 0;
}

int fleet_query(char *const *args, size_t max, struct cpa_buf *out,
		char *err, size_t errlen)
{
	char ch[4200], *argv[48];
	struct run_result r;
	size_t n = 0;
	int rc;

	snprintf(ch, sizeof(ch), "--clickhouse=%s", fleet_config()->clickhouse);
	argv[n++] = (char *)run_tool("cpa-query");
	argv[n++] = ch;
	for (size_t i = 0; args[i] && n < 47; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	rc = run_pipeline(argv, NULL, -1, -1, max, &api_config()->child, &r);
	if (rc < 0) {
		cpa_fail(err, errlen, "%s", r.over ? "the answer is over its "
			 "bound" : r.hit ? "the query is over its time or "
			 "memory bound" : r.err);
		run_result_free(&r);
		return -1;
	}
	if (out) {
		*out = r.out;
		r.out = (struct cpa_buf){ 0 };
	}
	run_result_free(&r);
	return 0;
}

static void answer_error(struct answer *a, const char *code, const char *msg)
{
	a->kind = ANSWER_JSON;
	a->status = api_status(code);
	a->json = api_error(code, msg);
}

static void unavailable(struct answer *a, const char *id, const char *why)
{
	cpa_err("raw %s: %s", id, why);
	answer_error(a, "service_unavailable",
		     "Profiling result Store is unavailable");
}

static char *slurp(const char *path, size_t *len)
{
	struct cpa_buf b = { 0 };
	char chunk[65536];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		cpa_buf_add(&b, chunk, n);
	fclose(f);
	cpa_buf_add(&b, "", 1);
	*len = b.len - 1;
	return (char *)b.p;
}

/* The page's windows, cut by cpa-query into dir. */
static int cut(const char *id, uint64_t from, uint64_t to, uint64_t every,
	       const char *dir, char *err, size_t errlen)
{
	char job[200], f[64], t[64], s[4200], e[64];
	char *args[] = { job, f, t, s, e, "--labels=none", NULL };

	snprintf(job, sizeof(job), "--job=%s", id);
	snprintf(f, sizeof(f), "--from=@%" PRIu64, from);
	snprintf(t, sizeof(t), "--to=@%" PRIu64, to);
	snprintf(s, sizeof(s), "--split=%s", dir);
	snprintf(e, sizeof(e), "--split-every=%" PRIu64 "s", every);
	return fleet_query(args, 4096, NULL, err, errlen);
}

void fleetraw_work(void *arg, struct answer *a)
{
	struct fleetraw_req *q = arg;
	struct cpa_ch ch;
	struct cpa_buf sql = { 0 };
	char err[700], tmp[] = "/tmp/cpa-serve-raw.XXXXXX";
	uint64_t window = 0, published = 0, *times = NULL, bytes = 0;
	size_t n = 0;
	char region[256] = "";
	json_object *items = json_object_new_array(), *o;
	bool more = false, dir = false;

	memset(&ch, 0, sizeof(ch));
	ch.fd = -1;
	if (fleet_ch_open(&ch, err, sizeof(err))) {
		unavailable(a, q->id, err);
		goto out;
	}
	cpa_ch_add(&sql, "SELECT region, duration, published FROM "
		   "cpa.publications WHERE request_id = ");
	cpa_ch_quote_str(&sql, q->id);
	cpa_ch_add(&sql, " ORDER BY published DESC LIMIT 1 FORMAT RowBinary");
	cpa_buf_add(&sql, "", 1);
	if (cpa_ch_exec(&ch, (const char *)sql.p, NULL, 0, NULL) < 0) {
		unavailable(a, q->id, ch.err);
		goto out;
	}
	{
		struct cpa_rb rb;
		const char *r;
		uint32_t rl;

		cpa_rb_init(&rb, ch.body.p, ch.body.len);
		if (!cpa_rb_more(&rb)) {
			answer_error(a, "result_not_found",
				     "Profiling result not found");
			goto out;
		}
		r = cpa_rb_get_string(&rb, &rl);
		window = cpa_rb_get_u64(&rb);
		published = cpa_rb_get_u64(&rb);
		if (rb.bad || !published || window < 1000000000ull) {
			unavailable(a, q->id, "a publication marker ClickHouse "
				    "holds is not cpa-push's");
			goto out;
		}
		snprintf(region, sizeof(region), "%.*s", (int)rl, r);
	}
	sql.len = 0;
	cpa_ch_add(&sql, "SELECT DISTINCT time FROM cpa.samples WHERE job = ");
	cpa_ch_quote_str(&sql, q->id);
	cpa_ch_addf(&sql, " ORDER BY time DESC LIMIT %" PRIu64 ", %" PRIu64
		    " FORMAT RowBinary", q->offset, q->limit + 1);
	cpa_buf_add(&sql, "", 1);
	if (cpa_ch_exec(&ch, (const char *)sql.p, NULL, 0, NULL) < 0) {
		unavailable(a, q->id, ch.err);
		goto out;
	}
	times = cpa_calloc(q->limit + 2, sizeof(*times));
	{
		struct cpa_rb rb;

		cpa_rb_init(&rb, ch.body.p, ch.body.len);
		while (cpa_rb_more(&rb) && n < q->limit + 1)
			times[n++] = cpa_rb_get_u64(&rb);
	}
	if (n > q->limit) {
		more = true;
		n = (size_t)q->limit;
	}
	if (n) {
		uint64_t s = 1000000000ull;

		if (!mkdtemp(tmp)) {
			unavailable(a, q->id, strerror(errno));
			goto out;
		}
		dir = true;
		if (cut(q->id, times[n - 1] / s, (times[0] + window) / s +
			((times[0] + window) % s != 0), window / s, tmp, err,
			sizeof(err))) {
			unavailable(a, q->id, err);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		char name[64], path[4200], why[200];
		time_t t = (time_t)(times[i] / 1000000000ull);
		struct tm tm;
		size_t len, pb;
		char *text;
		json_object *profile;

		gmtime_r(&t, &tm);
		strftime(name, sizeof(name), "%Y%m%dT%H%M%SZ.folded", &tm);
		snprintf(path, sizeof(path), "%s/%s", tmp, name);
		text = slurp(path, &len);
		profile = windows_profile(text ? text : "", text ? len : 0,
					  &q->spec, (int64_t)times[i],
					  (int64_t)window, why, sizeof(why));
		free(text);
		if (!profile) {
			unavailable(a, q->id, why);
			goto out;
		}
		json_object_array_add(items, windows_item(&q->spec, region,
			profile, (int64_t)times[i], (int64_t)published, &pb));
		bytes += pb;
		if (bytes > q->max_page) {
			answer_error(a, "result_too_large", "Profiling result "
				     "response is too large; reduce limit");
			goto out;
		}
	}
	o = json_object_new_object();
	json_object_object_add(o, "items", items);
	items = NULL;
	json_object_object_add(o, "limit", json_object_new_int64(
		(int64_t)q->limit));
	json_object_object_add(o, "offset", json_object_new_int64(
		(int64_t)q->offset));
	json_object_object_add(o, "has_more", json_object_new_boolean(more));
	a->kind = ANSWER_JSON;
	a->status = 200;
	a->json = api_data(o);
out:
	if (dir)
		state_remove_tree(tmp);
	json_object_put(items);
	free(times);
	cpa_buf_free(&sql);
	cpa_ch_free(&ch);
	free(q);
}
