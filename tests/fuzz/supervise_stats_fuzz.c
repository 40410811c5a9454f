/* SPDX-License-Identifier: MIT */
/* Fuzz target: a statistics file as cpa-supervise reads it, as root,
 * after a stage of another user (the store) wrote whatever it liked. */
#include <stdint.h>
#include <string.h>

#include "statsfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct stats_file f;
	uint64_t v;

	if (size > STATS_MAX_BYTES)
		size = STATS_MAX_BYTES;
	stats_parse((const char *)data, size, &f);
	if (f.n < 0 || f.n > STATS_MAX_KEYS)
		__builtin_trap();
	for (int i = 0; i < f.n; i++)
		if (!memchr(f.kv[i].key, 0, sizeof(f.kv[i].key)) ||
		    !memchr(f.kv[i].val, 0, sizeof(f.kv[i].val)) ||
		    !f.kv[i].key[0])
			__builtin_trap();
	stats_get_u64(&f, "pid", &v);
	stats_get_u64(&f, "time_ns", &v);
	stats_get(&f, "samples_in");
	return 0;
}
