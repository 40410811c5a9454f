/* SPDX-License-Identifier: MIT */
/*
 * Two children under the request children's bounds: cpa-store makes a
 * store of the job's windows in the job's directory, cpa-push pushes it
 * and writes the marker. cpa-push retries a ClickHouse that is away; the
 * bound on its wall time (--child-time) is what makes that a failure.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "publish.h"
#include "results.h"
#include "run.h"
#include "state.h"

int publish_job(const char *dir, const struct job *j,
		const struct serve_limits *lim, bool empty, char *err,
		size_t errlen)
{
	char stream[4400], store[4400], sdir[4500], interval[64], ch[4200];
	char cluster[300], host[300], job[200], region[300];
	char *sargv[] = { (char *)run_tool("cpa-store"), sdir, interval,
			  "--retain=0", "--max-size=0", NULL };
	char *pargv[12];
	struct run_result r;
	int in, n = 0, rc;

	(void)empty;
	snprintf(stream, sizeof(stream), "%s/%s", dir, RESULT_STREAM);
	snprintf(store, sizeof(store), "%s/publish.store", dir);
	snprintf(sdir, sizeof(sdir), "--dir=%s", store);
	snprintf(interval, sizeof(interval), "--interval=%llus",
		 (unsigned long long)spec_window_s(&j->spec, lim->window_s));
	state_remove_tree(store);
	in = open(stream, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return cpa_fail_errno(err, errlen, errno, "%s", stream);
	rc = run_pipeline(sargv, NULL, in, -1, 4096, &lim->child, &r);
	close(in);
	if (rc < 0) {
		cpa_fail(err, errlen, "publication: %s", r.err);
		run_result_free(&r);
		state_remove_tree(store);
		return -1;
	}
	run_result_free(&r);
	snprintf(ch, sizeof(ch), "--clickhouse=%s", lim->publish);
	snprintf(host, sizeof(host), "--host=%s", j->spec.hostname);
	snprintf(job, sizeof(job), "--job=%s", j->id);
	pargv[n++] = (char *)run_tool("cpa-push");
	pargv[n++] = ch;
	pargv[n++] = sdir;
	pargv[n++] = "--once";
	pargv[n++] = host;
	pargv[n++] = job;
	pargv[n++] = "--backoff-max=5s";
	if (lim->cluster) {
		snprintf(cluster, sizeof(cluster), "--cluster=%s", lim->cluster);
		pargv[n++] = cluster;
	}
	if (lim->region && lim->region[0]) {
		snprintf(region, sizeof(region), "--region=%s", lim->region);
		pargv[n++] = region;
	}
	pargv[n] = NULL;
	rc = run_pipeline(pargv, NULL, -1, -1, 4096, &lim->child, &r);
	if (rc < 0)
		cpa_fail(err, errlen, "publication to %s: %s", lim->publish,
			 r.hit ? "ClickHouse did not take the windows within "
				 "--child-time" : r.err);
	run_result_free(&r);
	state_remove_tree(store);
	return rc < 0 ? -1 : 0;
}
