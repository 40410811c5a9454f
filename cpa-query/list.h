/* SPDX-License-Identifier: MIT */
#ifndef CPA_QUERY_LIST_H
#define CPA_QUERY_LIST_H

#include <stdint.h>
#include <stdio.h>

#include "scan.h"

/* --list: one line per segment, then the covered range and its gaps. */
void list_store(const struct store_set *ss, FILE *out);
/* "range FIRST .. END (DURATION, N WHAT)", as the terminal UI reads it. */
void list_range(FILE *out, uint64_t first, uint64_t end, uint64_t n,
		const char *what);

#endif
