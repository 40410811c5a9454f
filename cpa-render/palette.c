/* SPDX-License-Identifier: MIT */
/*
 * Frame colors, matching flamegraph.pl's palettes so a graph looks the
 * way its readers expect: "hot" for CPU, "io" for off-CPU, "mem" for
 * memory; "java", "js" and "perl" pick a hue from the frame's annotation
 * (_[k] kernel, _[j] JIT, _[i] inlined) or its name; the plain hues color
 * every frame alike. A frame's color depends only on its name, so the same
 * function has the same color in every graph.
 */
#include <stdio.h>
#include <string.h>

#include "hash.h"
#include "render.h"

static const char *const palettes[] = {
	"hot", "mem", "io", "wakeup", "java", "js", "perl", "chain",
	"red", "green", "blue", "aqua", "yellow", "purple", "orange", NULL,
};

bool palette_valid(const char *name)
{
	for (int i = 0; palettes[i]; i++)
		if (!strcmp(name, palettes[i]))
			return true;
	return false;
}

const char *palette_list(void)
{
	return "hot, mem, io, wakeup, java, js, perl, chain, red, green, "
	       "blue, aqua, yellow, purple, orange";
}

const char *palette_default(enum cpa_unit unit)
{
	switch (unit) {
	case CPA_UNIT_NS: return "io";
	case CPA_UNIT_BYTES:
	case CPA_UNIT_PAGES: return "mem";
	default: return "hot";
	}
}

/*
 * --hash: a value in [0,1] from the first three characters, weighted to
 * the first, so names that start alike get alike colors (after a
 * "module`" prefix, which is skipped).
 */
static double name_vector(const char *name, uint32_t len, bool reversed)
{
	double vector = 0, weight = 1, max = 1;
	unsigned mod = 10;
	uint32_t start = 0;

	if (!reversed) {
		for (uint32_t i = 1; i < len; i++)
			if (name[i] == '`') {
				start = i + 1;
				break;
			}
	}
	for (uint32_t k = start; k < len && mod <= 12; k++) {
		unsigned char c = (unsigned char)(reversed ? name[len - 1 - k + start]
							   : name[k]);
		vector += (double)(c % mod) / (double)(mod - 1) * weight;
		mod++;
		max += weight;
		weight *= 0.70;
	}
	return 1 - vector / max;
}

static bool ends_with(const char *s, uint32_t len, const char *suf)
{
	size_t n = strlen(suf);
	return len >= n && !memcmp(s + len - n, suf, n);
}

static bool has(const char *s, uint32_t len, const char *needle)
{
	return memmem(s, len, needle, strlen(needle)) != NULL;
}

/* The hue a multi-hue palette gives this frame. */
static const char *pick_hue(const char *pal, const char *s, uint32_t len)
{
	if (!strcmp(pal, "java")) {
		if (ends_with(s, len, "_[j]"))
			return "green";
		if (ends_with(s, len, "_[i]"))
			return "aqua";
		const char *p = s;
		uint32_t n = len;
		if (n && *p == 'L') {
			p++;
			n--;
		}
		static const char *const pkgs[] = { "java/", "javax/", "jdk/",
			"net/", "org/", "com/", "io/", "sun/", NULL };
		for (int i = 0; pkgs[i]; i++)
			if (n >= strlen(pkgs[i]) &&
			    !memcmp(p, pkgs[i], strlen(pkgs[i])))
				return "green";
		if (has(s, len, ":::"))
			return "green";
		if (has(s, len, "::"))
			return "yellow";
		if (ends_with(s, len, "_[k]"))
			return "orange";
		return "red";
	}
	if (!strcmp(pal, "js")) {
		if (ends_with(s, len, "_[j]"))
			return memchr(s, '/', len) ? "green" : "aqua";
		if (has(s, len, "::"))
			return "yellow";
		const char *slash = memchr(s, '/', len);
		if (slash && has(slash, len - (uint32_t)(slash - s), ".js"))
			return "green";
		if (memchr(s, ':', len))
			return "aqua";
		if (len == 1 && s[0] == ' ')
			return "green";
		if (has(s, len, "_[k]"))
			return "orange";
		return "red";
	}
	if (!strcmp(pal, "perl")) {
		if (has(s, len, "::"))
			return "yellow";
		if (has(s, len, "Perl") || has(s, len, ".pl"))
			return "green";
		if (ends_with(s, len, "_[k]"))
			return "orange";
		return "red";
	}
	if (!strcmp(pal, "wakeup"))
		return "aqua";
	if (!strcmp(pal, "chain"))
		return has(s, len, "_[w]") ? "aqua" : "blue";
	return pal;
}

void palette_color(char *buf, const char *pal, bool hash, const char *s,
		   uint32_t len)
{
	double v1, v2, v3;
	int r, g, b;

	if (len == 2 && !memcmp(s, "--", 2)) {
		strcpy(buf, "rgb(160,160,160)");	/* stack separators */
		return;
	}
	if (len == 1 && s[0] == '-') {
		strcpy(buf, "rgb(200,200,200)");
		return;
	}
	if (hash) {
		v1 = name_vector(s, len, false);
		v2 = v3 = name_vector(s, len, true);
	} else {
		/* three independent fractions from the name */
		v1 = (double)(cpa_hash(s, len, 1) >> 11) / (double)(1ull << 53);
		v2 = (double)(cpa_hash(s, len, 2) >> 11) / (double)(1ull << 53);
		v3 = (double)(cpa_hash(s, len, 3) >> 11) / (double)(1ull << 53);
	}

	if (!strcmp(pal, "hot")) {
		r = 205 + (int)(50 * v3); g = (int)(230 * v1); b = (int)(55 * v2);
	} else if (!strcmp(pal, "mem")) {
		r = 0; g = 190 + (int)(50 * v2); b = (int)(210 * v1);
	} else if (!strcmp(pal, "io")) {
		r = g = 80 + (int)(60 * v1); b = 190 + (int)(55 * v2);
	} else {
		const char *hue = pick_hue(pal, s, len);
		if (!strcmp(hue, "red")) {
			r = 200 + (int)(55 * v1); g = b = 50 + (int)(80 * v1);
		} else if (!strcmp(hue, "green")) {
			g = 200 + (int)(55 * v1); r = b = 50 + (int)(60 * v1);
		} else if (!strcmp(hue, "blue")) {
			b = 205 + (int)(50 * v1); r = g = 80 + (int)(60 * v1);
		} else if (!strcmp(hue, "yellow")) {
			r = g = 175 + (int)(55 * v1); b = 50 + (int)(20 * v1);
		} else if (!strcmp(hue, "purple")) {
			r = b = 190 + (int)(65 * v1); g = 80 + (int)(60 * v1);
		} else if (!strcmp(hue, "aqua")) {
			r = 50 + (int)(60 * v1); g = b = 165 + (int)(55 * v1);
		} else if (!strcmp(hue, "orange")) {
			r = 190 + (int)(65 * v1); g = 90 + (int)(65 * v1); b = 0;
		} else {
			r = g = b = 0;
		}
	}
	snprintf(buf, 24, "rgb(%d,%d,%d)", r, g, b);
}

/* Differential: white for no change, deeper red the more a frame grew,
 * deeper blue the more it shrank (swapped by --negate). */
void palette_diff(char *buf, int64_t delta, uint64_t maxdelta, bool negate)
{
	int r = 255, g = 255, b = 255;
	double max = maxdelta ? (double)maxdelta : 1;

	if (negate)
		delta = -delta;
	if (delta > 0)
		g = b = (int)(210 * (max - (double)delta) / max);
	else if (delta < 0)
		r = g = (int)(210 * (max + (double)delta) / max);
	sprintf(buf, "rgb(%d,%d,%d)", r, g, b);
}
