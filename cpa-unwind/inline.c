// SPDX-License-Identifier: MIT
/* Inlined frames from DWARF scopes (DW_TAG_inlined_subroutine). */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demangle.h"
#include "inline.h"
#include "log.h"
#include "output.h"

#define CACHE_SLOTS 4096	/* per object; cleared when 3/4 full */

struct inline_entry {
	uint64_t pc;		/* 0: empty slot */
	uint8_t n;
	uint32_t ids[INLINE_MAX_DEPTH];
};

struct inline_dwarf {
	int fd, dbg_fd;
	Elf *elf, *dbg;
	Dwarf *dw;
	struct inline_entry *cache;
	unsigned used;
};

/* The DWARF of elf, if libdw's session fits in max_bytes. */
static Dwarf *begin_within(Elf *elf, size_t max_bytes)
{
	if (cfi_dwarf_bytes(elf) > max_bytes)
		return NULL;
	return dwarf_begin_elf(elf, DWARF_C_READ, NULL);
}

struct inline_dwarf *inline_dwarf_open(int fd, int rootfd, const char *dir,
				       const struct debug_sources *dbgs,
				       size_t max_bytes)
{
	struct inline_dwarf *d = cpa_calloc(1, sizeof(*d));
	size_t fixed = sizeof(*d) + CACHE_SLOTS * sizeof(*d->cache);
	max_bytes = max_bytes > fixed ? max_bytes - fixed : 0;
	d->fd = fd;
	d->dbg_fd = -1;
	d->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (d->elf)
		d->dw = begin_within(d->elf, max_bytes);
	if (d->elf && !d->dw) {
		/* no DWARF in the object itself: its separate debug file */
		uint8_t id[ELFOBJ_BUILD_ID_MAX];
		size_t len = elfobj_read_build_id(d->elf, id, sizeof(id));
		d->dbg = elfobj_open_debug_file(d->elf, id, len, rootfd, dir,
						dbgs, &d->dbg_fd, NULL);
		if (d->dbg)
			d->dw = begin_within(d->dbg, max_bytes);
	}
	if (!d->dw) {
		inline_dwarf_free(d);
		return NULL;
	}
	d->cache = cpa_calloc(CACHE_SLOTS, sizeof(*d->cache));
	return d;
}

size_t inline_dwarf_bytes(const struct inline_dwarf *d)
{
	return sizeof(*d) + CACHE_SLOTS * sizeof(*d->cache) +
	       cfi_dwarf_bytes(d->dbg ? d->dbg : d->elf);
}

void inline_dwarf_free(struct inline_dwarf *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	if (d->dbg)
		elf_end(d->dbg);
	if (d->elf)
		elf_end(d->elf);
	if (d->dbg_fd >= 0)
		close(d->dbg_fd);
	if (d->fd >= 0)
		close(d->fd);
	free(d->cache);
	free(d);
}

/* The name of an inlined subroutine: its linkage name (demangled) or
 * name, following DW_AT_abstract_origin. */
static const char *inlined_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr))
		n = dwarf_formstring(&attr);
	if (!n && dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
		n = dwarf_formstring(&attr);
	if (!n && dwarf_attr_integrate(die, DW_AT_name, &attr))
		n = dwarf_formstring(&attr);
	return n;
}

/*
 * The inlined subroutines at vaddr, outermost first. dwarf_getscopes()
 * gives the innermost inlined instance, but above it the scopes of its
 * abstract origin (where the function was written), not of the code it
 * was inlined into; the chain of callers is the physical nest of DIEs
 * around that instance, which dwarf_getscopes_die() walks outward.
 */
static unsigned lookup(struct inline_dwarf *d, uint64_t vaddr,
		       struct output *out, const struct name_opts *names,
		       uint32_t *ids)
{
	Dwarf_Die cu, *scopes = NULL, *nest = NULL;
	unsigned n = 0;
	if (!dwarf_addrdie(d->dw, vaddr, &cu))
		return 0;
	int k = dwarf_getscopes(&cu, vaddr, &scopes);
	int inner = 0;
	while (inner < k && dwarf_tag(&scopes[inner]) != DW_TAG_inlined_subroutine)
		inner++;
	k = inner < k ? dwarf_getscopes_die(&scopes[inner], &nest) : 0;
	/* nest[0] is the innermost; keep the outermost first */
	for (int i = k - 1; i >= 0 && n < INLINE_MAX_DEPTH; i--) {
		if (dwarf_tag(&nest[i]) != DW_TAG_inlined_subroutine)
			continue;
		const char *raw = inlined_name(&nest[i]);
		if (!raw)
			continue;
		char *disp = display_name(raw, names);
		size_t len = strlen(disp);
		char *buf = cpa_malloc(len + 5);
		memcpy(buf, disp, len);
		memcpy(buf + len, "_[i]", 5);
		ids[n++] = output_string(out, buf, len + 4);
		free(buf);
		free(disp);
	}
	free(nest);
	free(scopes);
	return n;
}

unsigned inline_frames(struct inline_dwarf *d, uint64_t vaddr,
		       struct output *out, const struct name_opts *names,
		       uint32_t *ids, unsigned max)
{
	uint64_t key = vaddr + 1;	/* 0 marks an empty slot */
	unsigned slot = (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 52) %
			CACHE_SLOTS;
	struct inline_entry *e;
	for (;; slot = (slot + 1) % CACHE_SLOTS) {
		e = &d->cache[slot];
		if (e->pc == key || e->pc == 0)
			break;
	}
	if (e->pc != key) {
		if (d->used >= CACHE_SLOTS * 3 / 4) {
			/* bounded: start over rather than grow */
			memset(d->cache, 0, CACHE_SLOTS * sizeof(*d->cache));
			d->used = 0;
			return inline_frames(d, vaddr, out, names, ids, max);
		}
		e->pc = key;
		e->n = (uint8_t)lookup(d, vaddr, out, names, e->ids);
		d->used++;
	}
	unsigned n = e->n < max ? e->n : max;
	memcpy(ids, e->ids, n * sizeof(*ids));
	return n;
}
