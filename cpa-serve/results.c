/* SPDX-License-Identifier: MIT */
/*
 * Results are rendered once, when a job ends, so that polling clients
 * read files and never start a renderer; each file is written beside and
 * renamed, so a reader sees a whole result or none.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "results.h"
#include "run.h"

const struct result_format result_formats[] = {
	{ "folded", "folded", "profile.folded", "text/plain; charset=utf-8" },
	{ "flamegraph", "svg", "flamegraph.svg", "image/svg+xml" },
	{ "pprof", "pprof", "profile.pb.gz", "application/octet-stream" },
	{ "speedscope", "speedscope", "speedscope.json", "application/json" },
};
const size_t n_result_formats =
	sizeof(result_formats) / sizeof(result_formats[0]);

const struct result_format *results_format(const char *endpoint)
{
	for (size_t i = 0; i < n_result_formats; i++)
		if (!strcmp(result_formats[i].endpoint, endpoint))
			return &result_formats[i];
	return NULL;
}

int results_render(const char *dir, const struct cpa_limits *lim, char *err,
		   size_t errlen)
{
	char stream[4300], out[4300], tmp[4400], fmt[64], o[4500];

	snprintf(stream, sizeof(stream), "%s/%s", dir, RESULT_STREAM);
	for (size_t i = 0; i < n_result_formats; i++) {
		const struct result_format *f = &result_formats[i];
		char *argv[] = { (char *)run_tool("cpa-render"), fmt, o,
				 stream, NULL };
		struct run_result r;

		snprintf(out, sizeof(out), "%s/%s", dir, f->file);
		snprintf(tmp, sizeof(tmp), "%s.tmp", out);
		snprintf(fmt, sizeof(fmt), "--format=%s", f->render);
		snprintf(o, sizeof(o), "--output=%s", tmp);
		if (run_pipeline(argv, NULL, -1, -1, 4096, lim, &r) < 0) {
			/* a capture that saw nothing is a result too */
			bool empty = i == 0 && strstr(r.err, "no samples");

			if (empty)
				cpa_fail(err, errlen, "no samples were captured");
			else
				cpa_fail(err, errlen, "%s: %s", f->render,
					 r.err);
			run_result_free(&r);
			unlink(tmp);
			return empty ? 1 : -1;
		}
		run_result_free(&r);
		if (rename(tmp, out))
			return cpa_fail_errno(err, errlen, errno, "%s", out);
	}
	return 0;
}
