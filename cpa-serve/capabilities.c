/* SPDX-License-Identifier: MIT */
/*
 * The host's capabilities come from cpa-capture's own feature report
 * (`cpa-capture --features`, cpa-capture/features.c): the server never
 * probes the kernel itself, so what it promises is what the capture will
 * find. A mode that needs BPF is listed only where BPF loads.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capabilities.h"
#include "log.h"
#include "results.h"
#include "run.h"
#include "spec.h"

char *capabilities_probe(const struct serve_limits *lim, char *err,
			 size_t errlen)
{
	char *argv[] = { (char *)run_tool("cpa-capture"), "--features", NULL };
	json_object *o, *feat, *types, *arr;
	struct run_result r;
	bool bpf = false;
	char *text, *line, *save = NULL;

	static const struct cpa_limits bound = { .wall_ms = 30000 };

	if (run_pipeline(argv, NULL, -1, 65536, &bound, &r) < 0) {
		cpa_fail(err, errlen, "cpa-capture --features: %s", r.err);
		run_result_free(&r);
		return NULL;
	}
	cpa_buf_add(&r.out, "", 1);
	o = json_object_new_object();
	feat = json_object_new_object();
	for (line = strtok_r((char *)r.out.p, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = 0;
		if (!strcmp(line, "kernel")) {
			json_object_object_add(o, "kernel",
					       json_object_new_string(eq + 1));
			continue;
		}
		if (!strcmp(line, "bpf"))
			bpf = !strcmp(eq + 1, "yes");
		json_object_object_add(feat, line,
			json_object_new_boolean(!strcmp(eq + 1, "yes")));
	}
	run_result_free(&r);
	json_object_object_add(o, "features", feat);

	types = json_object_new_object();
	for (size_t i = 0; i < n_job_modes; i++) {
		const struct job_mode *m = &job_modes[i];

		if (m->needs_bpf && !bpf)
			continue;
		if (!json_object_object_get_ex(types, m->type, &arr)) {
			arr = json_object_new_array();
			json_object_object_add(types, m->type, arr);
		}
		json_object_array_add(arr, json_object_new_string(m->mode));
	}
	json_object_object_add(o, "types", types);
	arr = json_object_new_array();
	for (int i = 0; i < 3; i++)
		json_object_array_add(arr, json_object_new_string(scope_names[i]));
	json_object_object_add(o, "scopes", arr);
	arr = json_object_new_array();
	for (size_t i = 0; i < n_result_formats; i++)
		json_object_array_add(arr,
			json_object_new_string(result_formats[i].endpoint));
	json_object_object_add(o, "results", arr);
	feat = json_object_new_object();
	json_object_object_add(feat, "max_jobs",
			       json_object_new_int64(lim->max_jobs));
	json_object_object_add(feat, "max_jobs_per_target",
			       json_object_new_int64(lim->max_jobs_per_target));
	json_object_object_add(feat, "max_duration_seconds",
			       json_object_new_int64(SPEC_MAX_DURATION));
	json_object_object_add(feat, "max_freq",
			       json_object_new_int64(SPEC_MAX_FREQ));
	json_object_object_add(o, "limits", feat);
	text = cpa_strdup(json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}
