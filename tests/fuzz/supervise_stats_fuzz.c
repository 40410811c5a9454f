/* SPDX-License-Identifier: MIT */
/* Fuzz target: a statistics file as cpa-supervise reads it, as root,
 * after a stage of another user (the store) wrote whatever it liked,
 * and the metrics textfile made of it (as each stage's). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
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

	struct metrics_stage s[4] = {
		{ "capture", true, &f, -1, -1 }, { "unwind", true, &f, 10, 4096 },
		{ "store", true, &f, 0, 4096 }, { "push", false, &f, -1, -1 },
	};
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	metrics_print(out, s, 4, 1, 0);
	fclose(out);
	/* one sample or comment per line, nothing unprintable */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)text[i] < 0x20 && text[i] != '\n')
			__builtin_trap();
	free(text);
	return 0;
}
