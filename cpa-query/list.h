/* SPDX-License-Identifier: MIT */
#ifndef CPA_QUERY_LIST_H
#define CPA_QUERY_LIST_H

#include <stdio.h>

#include "scan.h"

/* --list: one line per segment, then the covered range and its gaps. */
void list_store(const struct store_set *ss, FILE *out);

#endif
