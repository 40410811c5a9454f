/* SPDX-License-Identifier: MIT */
/* Fuzz target: cpa-serve's reading of a job body (json-c's strict parse,
 * then every field against the mode table), as POST /v1/profiling gets
 * it from the network. */
#include <stdint.h>
#include <string.h>

#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct job_spec spec;
	char err[300], field[64], target[96];

	if (size > 65536)
		return 0;	/* cpa-serve's --max-body at most */
	if (spec_parse((const char *)data, size, &spec, err, sizeof(err),
		       field, sizeof(field)) == 0) {
		spec_target(&spec, target, sizeof(target));
		if (spec.mode >= n_job_modes || !spec.duration_s)
			__builtin_trap();
	} else if (!err[0] || !memchr(err, 0, sizeof(err))) {
		__builtin_trap();	/* every refusal says why */
	}
	return 0;
}
