// SPDX-License-Identifier: MIT
/* Symbol display names: demangling and Go path shortening. */
#include <libiberty/demangle.h>
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "log.h"

/*
 * A Go symbol is "import/path.Name": the path is everything up to the
 * last '/' before the first '.' that follows it. Names from other
 * languages rarely contain '/', and never before their first '.'.
 */
static const char *go_short(const char *name)
{
	const char *slash = NULL;
	for (const char *p = name; *p && *p != '(' && *p != '['; p++) {
		if (*p == '/')
			slash = p;
		else if (*p == '.' && slash)
			break;
	}
	return slash && slash[1] ? slash + 1 : name;
}

char *display_name(const char *raw, const struct name_opts *opts)
{
	char *out = NULL;
	/* "__libc_start_main@@GLIBC_2.34": the symbol version is not part
	 * of the function's name. */
	const char *at = strchr(raw, '@');
	char *unversioned = NULL;
	if (at && at > raw) {
		unversioned = cpa_strndup(raw, (size_t)(at - raw));
		raw = unversioned;
	}
	/* cplus_demangle's automatic style tries Rust (legacy "_ZN...17h"
	 * and v0 "_R") before C++, and leaves Rust hashes out. */
	if (opts->demangle && raw[0] == '_' && (raw[1] == 'Z' || raw[1] == 'R'))
		out = cplus_demangle(raw, DMGL_PARAMS | DMGL_ANSI);
	if (!out)
		out = cpa_strdup(opts->go_short ? go_short(raw) : raw);
	free(unversioned);
	return out;
}
