/* SPDX-License-Identifier: MIT */
#ifndef CPA_RENDER_XML_H
#define CPA_RENDER_XML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* s as XML character data or attribute value, always well-formed. */
void xml_put(FILE *f, const char *s, size_t len);
/* s as a double-quoted JavaScript string safe inside <script>/CDATA. */
void js_string_put(FILE *f, const char *s, size_t len);
/* Characters in s (invalid bytes count one each). */
size_t utf8_chars(const char *s, size_t len);
/* Bytes of the first chars characters of s. */
size_t utf8_prefix(const char *s, size_t len, size_t chars);

/* The browser code, built into the program from the cpa-render .js files. */
extern const char cpa_flame_js[];
extern const char cpa_heatmap_js[];

#endif
