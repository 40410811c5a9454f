/* SPDX-License-Identifier: MIT */
/*
 * --inline: the functions inlined at a PC, from the DWARF debug info of
 * the object (or its separate debug file). This needs libdw at symbol
 * time, so the object's DWARF stays open while --inline is on, and each
 * PC's answer is cached (a bounded table per object): the DWARF is read
 * once per distinct PC, not per sample.
 */
#ifndef CPA_UNWIND_INLINE_H
#define CPA_UNWIND_INLINE_H

#include <stddef.h>
#include <stdint.h>

#include "elfobj.h"

#define INLINE_MAX_DEPTH 8

struct inline_dwarf;
struct output;
struct name_opts;

/*
 * Opens the DWARF of the object in the file at fd, or of its separate
 * debug file (rootfd and dir as for elfobj_load). Takes ownership of fd.
 * NULL when there is no DWARF, or when what libdw would hold of it
 * (inline_dwarf_bytes) exceeds max_bytes.
 */
struct inline_dwarf *inline_dwarf_open(int fd, int rootfd, const char *dir,
				       const struct debug_sources *dbgs,
				       size_t max_bytes);
void inline_dwarf_free(struct inline_dwarf *d);
/* Memory the open DWARF may hold, charged to its object. */
size_t inline_dwarf_bytes(const struct inline_dwarf *d);

/*
 * Output string ids of the functions inlined at ELF address vaddr, the
 * outermost first, each "name_[i]". Returns how many (0 when none).
 */
unsigned inline_frames(struct inline_dwarf *d, uint64_t vaddr,
		       struct output *out, const struct name_opts *names,
		       uint32_t *ids, unsigned max);

#endif
