/* SPDX-License-Identifier: MIT */
/* Fuzz target: lib/format/protobuf.c's reader on arbitrary bytes (every
 * field, every nested message it parses whole, to its depth bound), and
 * its writer: varints and packed values read back as written. */
#include <stdint.h>
#include <string.h>

#include "protobuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void collect(uint64_t v, void *arg)
{
	uint64_t **p = arg;

	*(*p)++ = v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cpa_buf b = { 0 };
	struct cpa_pb_reader r;
	struct cpa_pb_field f;
	char err[300];
	int64_t v[8];
	uint64_t back[8], *at = back;
	size_t n = size / 8 < 8 ? size / 8 : 8;

	err[0] = 0;
	if (cpa_pb_walk(data, size, err, sizeof(err)) < 0 && !err[0])
		__builtin_trap();	/* every refusal says why */
	/* the writer: the input's first words as a packed field */
	for (size_t i = 0; i < n; i++)
		memcpy(&v[i], data + 8 * i, 8);
	cpa_pb_packed(&b, 7, v, n);
	cpa_pb_varint(&b, 3, n);
	cpa_pb_init(&r, b.p, b.len);
	if (n) {
		if (cpa_pb_next(&r, &f, err, sizeof(err)) != 1 || f.number != 7 ||
		    cpa_pb_varints(&r, &f, collect, &at, err, sizeof(err)) ||
		    (size_t)(at - back) != n)
			__builtin_trap();
		for (size_t i = 0; i < n; i++)
			if (back[i] != (uint64_t)v[i])
				__builtin_trap();
	}
	if (cpa_pb_next(&r, &f, err, sizeof(err)) != 1 || f.v != n ||
	    cpa_pb_next(&r, &f, err, sizeof(err)) != 0)
		__builtin_trap();
	cpa_buf_free(&b);
	return 0;
}
