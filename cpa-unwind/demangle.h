/* SPDX-License-Identifier: MIT */
/*
 * Display names of symbols: C++ and Rust (legacy and v0) demangled with
 * libiberty, Go import paths optionally shortened the way CPA shows them
 * ("github.com/x/y/pkg.(*T).M" -> "pkg.(*T).M").
 */
#ifndef CPA_UNWIND_DEMANGLE_H
#define CPA_UNWIND_DEMANGLE_H

#include <stdbool.h>

struct name_opts {
	bool demangle;		/* false: --no-demangle */
	bool go_short;		/* --go-short-names */
};

/*
 * The display name of raw symbol name raw, malloc'd, with ';' and newlines
 * made safe for folded text.
 */
char *display_name(const char *raw, const struct name_opts *opts);

#endif
