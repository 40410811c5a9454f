/* SPDX-License-Identifier: MIT */
/* Fuzz target: the apiserver's reading of Pyroscope query bodies from the
 * network (cpa-serve/querier.c: each method's message, its label
 * selectors, its call site); the first byte picks the method. */
#include <stdint.h>
#include <string.h>

#include "querier.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[400];

	if (size < 1 || size > 65536)
		return 0;	/* cpa-serve's --max-body at most */
	err[0] = 0;
	if (querier_decode(data[0], (const char *)data + 1, size - 1, err,
			   sizeof(err)) && (!err[0] || !memchr(err, 0,
							      sizeof(err))))
		__builtin_trap();	/* every refusal says why */
	return 0;
}
