/* SPDX-License-Identifier: MIT */
/*
 * Giving back the pages of a mapped file that a load has read. libelf
 * maps a whole object, and what a load reads of it (its symbols, its
 * .eh_frame: 5 MB of libLLVM's, 7 MB of rustc's) stays in cpa-unwind's
 * resident set until elf_end, beside the tables built from it, where
 * --max-cache does not see it. Pages of a read-only private file mapping
 * can be dropped at any time: touched again, the kernel reads them again
 * from the file. Anything else (libelf's own copy of a file it could not
 * map) is left alone.
 */
#ifndef CPA_UNWIND_FILEPAGES_H
#define CPA_UNWIND_FILEPAGES_H

#include <stdbool.h>
#include <stddef.h>

/* Whether [p, p + n) lies in one read-only private file mapping. */
bool filepages_droppable(const void *p, size_t n);
/* Drops the whole pages of [p, p + n), which filepages_droppable said
 * may be. */
void filepages_drop(const void *p, size_t n);

#endif
