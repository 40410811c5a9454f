/* SPDX-License-Identifier: MIT */
/* Fuzz target: cpa-serve's reading of request bodies from the network
 * (json-c's strict parse, then every field in HUATUO's validation
 * order), as POST /v1/profiling and POST /v1/operations get them; the
 * first byte picks which. */
#include <stdint.h>
#include <string.h>

#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spec_request req;
	struct job_spec spec;
	char err[400], target[96];
	enum spec_body what;

	if (size < 1 || size > 65536)
		return 0;	/* cpa-serve's --max-body at most */
	what = data[0] & 1 ? BODY_OPERATION : BODY_CREATE;
	if (spec_parse(what, (const char *)data + 1, size - 1, &spec, &req,
		       err, sizeof(err)) == 0) {
		spec_target(&spec, target, sizeof(target));
		if (what == BODY_OPERATION && !strcmp(req.kind, "tracing"))
			return 0;
		if (spec.mode >= n_job_modes || !spec.duration_s ||
		    spec.duration_s > SPEC_MAX_DURATION ||
		    (unsigned)spec.lang >= N_LANGS ||
		    (unsigned)spec.scope >= N_SCOPES)
			__builtin_trap();
		if (what == BODY_CREATE && !spec.hostname[0])
			__builtin_trap();
	} else if (!err[0] || !memchr(err, 0, sizeof(err))) {
		__builtin_trap();	/* every refusal says why */
	}
	return 0;
}
