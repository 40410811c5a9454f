/* SPDX-License-Identifier: MIT */
/*
 * Kernel symbols from /proc/kallsyms (core kernel and modules), reloaded
 * when the set of loaded modules changes (/proc/modules is compared every
 * few seconds, which costs one small read).
 */
#ifndef CPA_UNWIND_KALLSYMS_H
#define CPA_UNWIND_KALLSYMS_H

#include <stdint.h>

#include "symtab.h"

struct kallsyms {
	struct symtab syms;	/* names already carry the _[k] suffix */
	uint32_t *out_ids;	/* per symbol: output string id, lazily */
	uint64_t modules_hash;	/* of /proc/modules at the last load */
	uint64_t checked_ns;
	uint64_t reloads;
	const char *path;	/* /proc/kallsyms, or a test file */
};

/* Loads path (NULL: /proc/kallsyms). 0, or -1 when it cannot be read or
 * holds only zero addresses (no privilege). */
int kallsyms_load(struct kallsyms *k, const char *path);
/* Reloads when /proc/modules changed; checked at most every 2 s. Returns
 * true when the table was reloaded (ids cached by callers are stale). */
bool kallsyms_refresh(struct kallsyms *k, uint64_t now_ns);
void kallsyms_free(struct kallsyms *k);

#endif
