/* SPDX-License-Identifier: MIT */
/*
 * One ELF object as cpa-unwind keeps it: identity (build id, or a content
 * hash when it has none), load segments to turn file offsets into ELF
 * addresses, function symbols, the compiled CFI table and, with
 * --inline, the table of inlined instances (inline.h). Everything is
 * copied out of the file at load time, so no descriptor stays open and a
 * process exiting does not invalidate anything.
 *
 * Objects are shared by every mapping of the same file in every process
 * (elfcache.c); the per-symbol caches of demangled names and output
 * string ids live here too so that work is done once per object.
 */
#ifndef CPA_UNWIND_ELFOBJ_H
#define CPA_UNWIND_ELFOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"
#include "inline.h"
#include "symtab.h"

#define ELFOBJ_KEY_MAX 21	/* 'B' + 20-byte build id, or 'H' + hash */
#define ELFOBJ_MAX_SEGS 8
#define ELFOBJ_BUILD_ID_MAX 64	/* longest build id note read */

enum elfobj_fail {
	ELFOBJ_OK = 0,
	ELFOBJ_FAIL_OPEN,	/* file not found through any route */
	ELFOBJ_FAIL_NOT_ELF,	/* not an ELF file, or corrupt headers */
	ELFOBJ_FAIL_CFI,	/* CFI present but malformed */
	ELFOBJ_FAIL_MISMATCH,	/* the file has another build id than mapped */
	ELFOBJ_FAIL_NOMEM,
	ELFOBJ_FAIL_SYMS_BUDGET,	/* refused: its symbols exceed the bound */
	ELFOBJ_FAIL_CFI_BUDGET,	/* refused: its CFI table exceeds the bound */
	ELFOBJ_FAIL_COUNT
};

/*
 * Where separate debug files are looked for besides the object's own
 * .gnu_debuglink: a build-id directory on the host (--debug-dir), and
 * files fetched from debuginfod servers (dbgfetch.h), asked for only for
 * objects without a .symtab.
 */
struct debug_sources {
	const char *dir;	/* DIR/.build-id/xx/rest.debug; NULL: none */
	/* The fetched debug file of build id into path; false when there
	 * is none yet (asked for in the background). NULL: no fetching. */
	bool (*fetched)(void *ctx, const uint8_t *id, size_t len, char *path,
			size_t cap);
	void *ctx;
};

#define DEBUG_DIR_DEFAULT "/usr/lib/debug"

struct elf_seg {
	uint64_t offset, vaddr, filesz;
};

struct elf_obj {
	uint8_t key[ELFOBJ_KEY_MAX];
	uint8_t key_len;
	uint8_t nsegs;
	bool loaded;		/* symbols and CFI present */
	bool has_symtab;	/* full .symtab (object or debug file) */
	bool debug_file;	/* names came from a separate debug file */
	bool dbg_fetching;	/* its debug file is being fetched: load it
				 * again once it is there */
	uint8_t fail;		/* enum elfobj_fail of the last load */
	uint8_t inl_state;	/* enum inline_build of the last load */
	uint8_t build_id_len;
	uint8_t build_id[ELFOBJ_BUILD_ID_MAX];	/* read by the last load */
	struct elf_seg segs[ELFOBJ_MAX_SEGS];
	struct symtab syms;
	struct cfi_table cfi;
	char **display;		/* per symbol: demangled name, lazily */
	uint32_t *out_ids;	/* per symbol: output string id, lazily */
	struct inline_table inl;	/* --inline: inlined instances */
	uint32_t inl_frames;	/* frames named from it meanwhile */
	size_t inl_dwarf_bytes;	/* of the DWARF to read them from */
	size_t bytes;		/* memory charged to the cache */

	/* identity of the file it was loaded from, to find it again
	 * without reading the build id */
	uint64_t st_dev, st_ino, st_size, st_mtime_ns;

	/* cache bookkeeping (elfcache.c) */
	uint32_t refs;
	struct elf_obj *hnext, *snext;	/* key and stat hash chains */
	struct elf_obj *lru_prev, *lru_next;
};

/*
 * Reads the build id of elf into id (up to 20 bytes). Returns its length,
 * 0 when there is none.
 */
size_t elfobj_read_build_id(Elf *elf, uint8_t *id, size_t cap);

/*
 * Loads symbols, segments and CFI from the open file fd, and, as inl says,
 * the inlined instances from its DWARF or its debug file's: not at all,
 * later (o->inl_state INLINE_PENDING when there is DWARF to read them
 * from: elfobj_read_inlines), or now, within what is left of max_bytes.
 * rootfd is the
 * process's root directory (safeopen_proc_root) in which .gnu_debuglink
 * names are looked up, -1 for none; dir is the directory of the file as
 * the process sees it, NULL to look for no separate debug file; dbg says
 * where else debug files are (NULL: nowhere else).
 * Returns 0 when o is loaded, perhaps partly: a malformed CFI section
 * leaves the symbols and o->fail set to ELFOBJ_FAIL_CFI. Returns -1 with
 * o->fail set when nothing could be used, or when loading it would take
 * more than max_bytes (estimated from its section headers before reading
 * the symbols, counted while compiling the CFI): then nothing is kept.
 */
enum elfobj_inlines { ELFOBJ_INLINES_OFF, ELFOBJ_INLINES_LATER,
		      ELFOBJ_INLINES_NOW };
int elfobj_load(struct elf_obj *o, int fd, int rootfd, const char *dir,
		const struct debug_sources *dbg, size_t max_bytes,
		enum elfobj_inlines inl);
/* The inlined instances of the object in the open file fd, from its
 * DWARF or its debug file's (rootfd, dir, dbg as for elfobj_load), within
 * max_bytes. */
enum inline_build elfobj_read_inlines(struct inline_table *t, int fd,
				      int rootfd, const char *dir,
				      const struct debug_sources *dbg,
				      size_t max_bytes);
/* Same as elfobj_load, from an ELF image in memory (the vdso). */
int elfobj_load_image(struct elf_obj *o, const void *image, size_t size,
		      size_t max_bytes);
/*
 * The separate debug file of elf (build id id), opened: by build id in
 * dbg->dir on the host, then by .gnu_debuglink in dir, dir/.debug and
 * /usr/lib/debug+dir inside rootfd (none when rootfd is -1), then, for an
 * object without .symtab, as fetched by dbg->fetched. NULL when there is
 * none; else *fd is its descriptor. *fetching (may be NULL) is set when
 * the file is being fetched.
 */
Elf *elfobj_open_debug_file(Elf *elf, const uint8_t *id, size_t id_len,
			    int rootfd, const char *dir,
			    const struct debug_sources *dbg, int *fd,
			    bool *fetching);
/* Frees what a load allocated; identity and bookkeeping stay. */
void elfobj_unload(struct elf_obj *o);
/* Gives to what a load of from allocated (to's own is freed), leaving
 * from unloaded; the identity and bookkeeping of both stay. */
void elfobj_move_load(struct elf_obj *to, struct elf_obj *from);

/* ELF virtual address of a file offset, false when no segment holds it. */
static inline bool elfobj_vaddr(const struct elf_obj *o, uint64_t off,
				uint64_t *vaddr)
{
	for (unsigned i = 0; i < o->nsegs; i++) {
		const struct elf_seg *s = &o->segs[i];
		if (off >= s->offset && off - s->offset < s->filesz) {
			*vaddr = off - s->offset + s->vaddr;
			return true;
		}
	}
	return false;
}

const char *elfobj_fail_name(unsigned fail);

#endif
