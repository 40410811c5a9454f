/* SPDX-License-Identifier: MIT */
/* Fuzz target: the JIT perf map parser (/tmp/perf-PID.map lines). */
#include <stdint.h>
#include <string.h>

#include "../../cpa-unwind/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m;
	char err[128];
	memset(&m, 0, sizeof(m));
	long n = perfmap_parse(&m, (const char *)data, size, err, sizeof(err));
	for (long i = 0; i < n; i++) {
		long k = symtab_lookup(&m.syms, m.syms.syms[i].addr);
		if (k >= 0)
			(void)strlen(symtab_name(&m.syms, k));
	}
	perfmap_free(&m);
	return 0;
}
