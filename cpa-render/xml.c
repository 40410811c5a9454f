/* SPDX-License-Identifier: MIT */
/*
 * Writing untrusted frame names into SVG, HTML and JavaScript. Folded
 * input may hold any bytes, and one stray byte must not make the whole
 * file unreadable: invalid UTF-8 and control characters become U+FFFD,
 * markup characters become entities (or \u escapes inside scripts).
 */
#include <stdio.h>
#include <string.h>

#include "xml.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (len == 3 && (cp == 0xfffe || cp == 0xffff)))
		return 0;
	return len;
}

size_t utf8_prefix(const char *s, size_t len, size_t chars)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < len && chars > 0) {
		size_t l = utf8_len(u + i, len - i);
		i += l ? l : 1;
		chars--;
	}
	return i;
}

size_t utf8_chars(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n = 0;

	while (i < len) {
		size_t l = utf8_len(u + i, len - i);
		i += l ? l : 1;
		n++;
	}
	return n;
}

void xml_put(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run = 0;

	while (i < len) {
		unsigned char c = u[i];
		const char *rep = NULL;
		size_t l = 1;

		if (c == '&')
			rep = "&amp;";
		else if (c == '<')
			rep = "&lt;";
		else if (c == '>')
			rep = "&gt;";
		else if (c == '"')
			rep = "&quot;";
		else if (c < 0x20 && c != '\t')
			rep = "\xef\xbf\xbd";
		else if (c >= 0x80 && !(l = utf8_len(u + i, len - i))) {
			rep = "\xef\xbf\xbd";
			l = 1;
		}
		if (rep) {
			fwrite(s + run, 1, i - run, f);
			fputs(rep, f);
			i += l;
			run = i;
		} else {
			i += l;
		}
	}
	fwrite(s + run, 1, i - run, f);
}

void js_string_put(FILE *f, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	fputc('"', f);
	for (size_t i = 0; i < len;) {
		unsigned char c = u[i];
		size_t l;

		if (c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' ||
		    c < 0x20) {
			fprintf(f, "\\u%04x", c);
			i++;
		} else if (c < 0x80) {
			fputc(c, f);
			i++;
		} else if ((l = utf8_len(u + i, len - i))) {
			fwrite(u + i, 1, l, f);
			i += l;
		} else {
			fputs("\\ufffd", f);
			i++;
		}
	}
	fputc('"', f);
}
