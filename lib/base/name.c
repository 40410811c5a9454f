/* SPDX-License-Identifier: MIT */
#include <stdint.h>
#include <string.h>

#include "log.h"

#include "name.h"

/* Length of the well-formed UTF-8 sequence at s[0..left), its code
 * point in *cp; 0 when the bytes there are not one. */
static size_t utf8_sequence(const unsigned char *s, size_t left, uint32_t *cp)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;	/* range of the second byte */
	size_t n;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		*cp = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;	/* no overlong forms */
		else if (c == 0xed)
			hi = 0x9f;	/* no surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		*cp = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;	/* nothing past U+10FFFF */
	} else {
		return 0;
	}
	if (left < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (i > 1 && (s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	return n;
}

/* Code points that are not shown as themselves: C1 controls (CSI is
 * U+009B), separators that end a line in JavaScript, and the
 * bidirectional controls that reorder what follows them. */
static bool hidden(uint32_t cp)
{
	return cp <= 0x9f || cp == 0x2028 || cp == 0x2029 ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Walks s[0..len); with fix, cleans it. True when it was not clean. */
static bool walk(char *s, size_t len, bool fix)
{
	unsigned char *u = (unsigned char *)s;
	bool dirty = false;

	for (size_t i = 0; i < len;) {
		unsigned char c = u[i];
		if (c >= 0x20 && c < 0x7f && c != ';') {
			i++;
			continue;
		}
		uint32_t cp = 0;
		size_t n = c >= 0x80 ? utf8_sequence(u + i, len - i, &cp) : 0;
		if (n && !hidden(cp)) {
			i += n;
			continue;
		}
		if (!fix)
			return true;
		dirty = true;
		/* a hidden code point goes whole, a broken sequence a byte at
		 * a time (what follows its lead is looked at again) */
		if (!n)
			n = 1;
		for (size_t k = 0; k < n; k++)
			u[i + k] = '_';
		i += n;
	}
	if (!len)
		return dirty;
	/* where the name sits in a folded line */
	if (u[0] == ' ' || u[0] == '#') {
		if (!fix)
			return true;
		u[0] = '_';
		dirty = true;
	}
	size_t d = len;
	while (d > 0 && u[d - 1] >= '0' && u[d - 1] <= '9')
		d--;
	if (d > 0 && u[d - 1] == ' ') {	/* a blank last, or before digits */
		if (!fix)
			return true;
		u[d - 1] = '_';
		dirty = true;
	}
	return dirty;
}

bool cpa_name_is_clean(const char *s, size_t len)
{
	return !walk((char *)s, len, false);
}

bool cpa_name_clean(char *s, size_t len)
{
	return walk(s, len, true);
}

const char *cpa_name_safe(const char *s, size_t len, char **copy)
{
	*copy = NULL;
	if (cpa_name_is_clean(s, len))
		return s;
	*copy = cpa_malloc(len + 1);
	memcpy(*copy, s, len);
	(*copy)[len] = 0;
	cpa_name_clean(*copy, len);
	return *copy;
}
