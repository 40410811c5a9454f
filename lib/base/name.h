/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Names that a monitored process chooses: its comm and thread names,
 * Python qualnames and file names, JIT perf map names, env values,
 * cgroup-derived names, symbol names of the files it maps. This is the
 * one owner of what such a name may contain; everyone who turns process
 * data into a name asks here.
 *
 * A clean name is one frame of one folded line, whatever output it ends
 * in (folded text, a terminal, SVG, JSON, pprof):
 *
 *   - no control character: bytes 0x00-0x1f and 0x7f, and the C1
 *     controls U+0080-U+009F (terminal escapes start with ESC or CSI),
 *     newlines included, so a name never makes a line of its own;
 *   - no ';', which separates frames;
 *   - valid UTF-8, without the code points that reorder or break text
 *     where it is shown (U+2028, U+2029, the bidirectional overrides and
 *     isolates U+202A-U+202E and U+2066-U+2069);
 *   - it does not end in a blank followed by digits ("A 999999": folded
 *     text would read the digits as a count) or in a blank, and does not
 *     start with a blank or '#' (a line starting so is a comment or loses
 *     the blank).
 *
 * Each byte that breaks a rule becomes '_': the length never changes,
 * so a name is cleaned in place and stays recognisable. Cleaning a
 * clean name changes nothing, so a reader may clean again what a writer
 * cleaned: cpa-unwind cleans every name as it enters the stream, and
 * readers of streams, stores and folded text (lib/symstream.c and the
 * folded parsers) clean what an older writer or a forged file carries.
 */
#ifndef CPA_NAME_H
#define CPA_NAME_H

#include <stdbool.h>
#include <stddef.h>

/* True when s[0..len) is clean: nothing to do. Fast for ASCII names. */
bool cpa_name_is_clean(const char *s, size_t len);

/* Cleans s[0..len) in place; returns true when anything changed. */
bool cpa_name_clean(char *s, size_t len);

/* s itself when s[0..len) is clean (*copy NULL), else a cleaned copy of
 * the same length that the caller frees (*copy, also returned). */
const char *cpa_name_safe(const char *s, size_t len, char **copy);

#endif
