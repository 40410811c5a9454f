/* SPDX-License-Identifier: MIT */
/*
 * How weights read: counts with thousands separators, nanoseconds as
 * us/ms/s, bytes from 1 KiB on as KiB/MiB/GiB (powers of 1024, as free(1)
 * and /proc/meminfo count memory). The unit comes from the stream (cpa_kind_unit)
 * or from --unit for folded text; --countname overrides the word.
 */
#include <stdio.h>
#include <string.h>

#include "render.h"

const char *unit_countname(enum cpa_unit unit)
{
	switch (unit) {
	case CPA_UNIT_SAMPLES: return "samples";
	case CPA_UNIT_NS: return "ns";
	case CPA_UNIT_COUNT: return "events";
	case CPA_UNIT_BYTES: return "bytes";
	case CPA_UNIT_PAGES: return "pages";
	}
	return "samples";
}

/* 1234567 -> "1,234,567" */
static void commas(char *buf, size_t len, uint64_t v)
{
	char digits[32];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
	size_t o = 0;

	for (int i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

void format_value(char *buf, size_t len, uint64_t v, enum cpa_unit unit,
		  const char *countname)
{
	char num[40];

	if (!countname && unit == CPA_UNIT_NS) {
		if (v >= 1000000000ull)
			snprintf(buf, len, "%.2f s", v / 1e9);
		else if (v >= 1000000ull)
			snprintf(buf, len, "%.2f ms", v / 1e6);
		else if (v >= 1000ull)
			snprintf(buf, len, "%.2f us", v / 1e3);
		else
			snprintf(buf, len, "%llu ns", (unsigned long long)v);
		return;
	}
	if (!countname && unit == CPA_UNIT_BYTES && v >= 1024) {
		static const char *const big[] = {"KiB", "MiB", "GiB", "TiB"};
		double x = (double)v / 1024;
		unsigned i = 0;
		for (; x >= 1024 && i < 3; i++)
			x /= 1024;
		snprintf(buf, len, "%.2f %s", x, big[i]);
		return;
	}
	commas(num, sizeof(num), v);
	snprintf(buf, len, "%s %s", num,
		 countname ? countname : unit_countname(unit));
}

uint32_t strip_annotation(const char *name, uint32_t len)
{
	/* "_[k]" kernel, "_[j]" JIT, "_[i]" inlined, "_[w]" waker, "_[a]" an
	 * allocated Java class */
	if (len >= 4 && name[len - 4] == '_' && name[len - 3] == '[' &&
	    name[len - 1] == ']' && strchr("kjiwa", name[len - 2]) &&
	    name[len - 2] != '\0')
		return len - 4;
	return len;
}
