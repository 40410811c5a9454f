/* SPDX-License-Identifier: MIT */
/* Fuzz target: the text parsers of lib/ — folded lines, label lists, CPU
 * sets, times, durations and sizes — one input line at a time; and the
 * name cleaner on the whole input: what it makes is clean, the same
 * length, and cleaning it again changes nothing. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "folded.h"
#include "labels.h"
#include "name.h"
#include "timeparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	char err[256];
	char *line = buf, *end = buf + size;
	while (line <= end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
		struct cpa_folded_line fl;
		if (cpa_folded_parse(line, len, &fl, err, sizeof(err)) == 1 &&
		    fl.stack_len)
			(void)fl.stack[fl.stack_len - 1];
		if (!nl)
			break;
		line = nl + 1;
	}
	/* The other parsers take NUL-terminated words. */
	if (!memchr(data, '\0', size)) {
		struct cpa_cpuset set;
		struct cpa_labels lb;
		uint64_t v;
		cpa_cpuset_parse(buf, &set, err, sizeof(err));
		cpa_labels_parse(buf, &lb, err, sizeof(err));
		cpa_parse_time(buf, 1796040000ull * CPA_NSEC_PER_SEC, &v);
		cpa_parse_duration_ns(buf, &v);
		cpa_parse_size(buf, &v);
	}
	char *name = malloc(size + 1);
	memcpy(name, data, size);
	bool was_clean = cpa_name_is_clean(name, size);
	if (cpa_name_clean(name, size) == was_clean ||
	    !cpa_name_is_clean(name, size) || cpa_name_clean(name, size) ||
	    (was_clean && memcmp(name, data, size)))
		abort();
	free(name);
	free(buf);
	return 0;
}
