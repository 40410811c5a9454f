/* SPDX-License-Identifier: MIT */
/*
 * The capability table is HUATUO's, versioned with the release, not
 * probed: a mode the kernel cannot run fails its job at start
 * (execution_start_failed, the capture's words). What the kernel offers
 * comes from cpa-capture's own feature report (cpa-capture/features.c):
 * the server never probes the kernel itself.
 */
#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capabilities.h"
#include "log.h"
#include "run.h"
#include "spec.h"

json_object *capabilities_json(void)
{
	json_object *items = json_object_new_array(), *o;

	for (size_t i = 0; i < n_capabilities; i++) {
		const struct capability *c = &capabilities[i];
		json_object *it = json_object_new_object();
		json_object *modes = json_object_new_array();
		json_object *scopes = json_object_new_array();

		for (int k = 0; k < 5 && c->modes[k]; k++)
			json_object_array_add(modes,
					      json_object_new_string(c->modes[k]));
		for (int k = 0; k < N_SCOPES; k++)
			if (c->scopes[k])
				json_object_array_add(scopes,
					json_object_new_string(scope_names[k]));
		json_object_object_add(it, "type",
				       json_object_new_string(c->type));
		json_object_object_add(it, "language",
				       json_object_new_string(lang_names[c->lang]));
		json_object_object_add(it, "modes", modes);
		json_object_object_add(it, "supports_binary_match",
				       json_object_new_boolean(c->binary_match));
		json_object_object_add(it, "supported_scopes", scopes);
		json_object_array_add(items, it);
	}
	o = json_object_new_object();
	json_object_object_add(o, "items", items);
	return o;
}

char *capabilities_probe(char *err, size_t errlen)
{
	static const struct cpa_limits bound = { .wall_ms = 30000 };
	char *argv[] = { (char *)run_tool("cpa-capture"), "--features", NULL };
	json_object *o, *feat;
	struct run_result r;
	char *text, *line, *save = NULL;

	if (run_pipeline(argv, NULL, -1, -1, 65536, &bound, &r) < 0) {
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
		if (!strcmp(line, "kernel"))
			json_object_object_add(o, "kernel",
					       json_object_new_string(eq + 1));
		else
			json_object_object_add(feat, line,
				json_object_new_boolean(!strcmp(eq + 1, "yes")));
	}
	run_result_free(&r);
	json_object_object_add(o, "features", feat);
	text = cpa_strdup(json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}
