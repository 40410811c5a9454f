/* SPDX-License-Identifier: MIT */
/*
 * The cache of ELF objects shared by all processes.
 *
 * An object is found by its key (build id, or a hash of the file's
 * contents when it has none) and, to avoid reading the build id again for
 * every process that maps the same file, by the (device, inode, size,
 * mtime) of the file it was loaded from. Mappings hold references.
 * Memory is bounded by --max-cache: past the limit the least recently
 * used objects are dropped (unreferenced) or unloaded (referenced: their
 * symbols and CFI are freed and reloaded if a sample needs them again).
 * One object may cost at most --max-object: one that would cost more is
 * refused (loaded as nothing, with a counted reason) before it is read.
 */
#ifndef CPA_UNWIND_ELFCACHE_H
#define CPA_UNWIND_ELFCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "elfobj.h"

/* Where a mapped file can be read from. */
struct elf_src {
	uint32_t pid;
	uint64_t start, end;	/* the mapping, for /proc/PID/map_files */
	const char *path;	/* as the process sees it */
	uint64_t inode;		/* of the mapped file, 0 when unknown */
	const uint8_t *build_id;	/* from the MMAP record, may be NULL */
	uint8_t build_id_len;
};

struct elfcache_stats {
	uint64_t objects, bytes;
	uint64_t loads, hits, evictions, unloads;
	uint64_t reloads;	/* of unloaded objects, counted in loads too */
	uint64_t fails[ELFOBJ_FAIL_COUNT];
	uint64_t cfi_refused_fdes;	/* unsupported: malformed or too costly */
	uint64_t load_ns;	/* time spent loading (warm-up cost) */
	uint64_t load_waits;	/* lookups left unnamed: still loading */
	uint64_t refetched;	/* unloaded to be named by a fetched file */
	uint64_t inline_tables;	/* loads that found inlined instances */
	uint64_t inline_refused;	/* ... whose DWARF was over budget */
	uint64_t inline_ns;	/* time spent reading them (warm-up cost) */
};

struct elfcache;
struct dbgfetch;

struct elfcache *elfcache_new(uint64_t max_bytes, uint64_t max_object);
/* Where debug files are besides .gnu_debuglink: dir/.build-id on the
 * host (NULL: none), and fetch (NULL: no fetching). */
void elfcache_set_debug(struct elfcache *c, const char *dir,
			struct dbgfetch *fetch);
/* When loads read the inlined instances (--inline); before any load. */
void elfcache_set_inlines(struct elfcache *c, enum elfobj_inlines when);
/* Queues the reading of o's inlined instances, if it has DWARF not read
 * yet (INLINE_PENDING); src is a mapping of o. */
void elfcache_queue_inlines(struct elfcache *c, struct elf_obj *o,
			    const struct elf_src *src);
/* Unloads the objects whose debug file was fetched since they loaded,
 * to be loaded again with it; called between samples. */
void elfcache_take_fetched(struct elfcache *c);
void elfcache_free(struct elfcache *c);

struct elf_load;

/*
 * The object of a mapped file, as the loader thread finds and loads it
 * (or loads again, when the cache unloaded it). When the cache already
 * has it loaded by the build id src carries, *obj is it (referenced) and
 * NULL is returned; otherwise *obj is NULL and the load is returned (NULL
 * when out of memory), to be collected.
 */
struct elf_load *elfcache_request(struct elfcache *c, const struct elf_src *src,
				  struct elf_obj **obj);
/*
 * Waits for ld until the deadline of the current sample. false when the
 * load is still running (counted); true when done: *obj is the object,
 * loaded (perhaps partly: its fail field says what went wrong) and
 * referenced, or NULL when the file cannot be found or was refused; ld
 * is freed.
 */
bool elfcache_collect(struct elfcache *c, struct elf_load *ld,
		      struct elf_obj **obj);
/* Forgets a load whose mapping went away. */
void elfcache_abandon(struct elfcache *c, struct elf_load *ld);
/* Starts a sample: loads it needs are waited for until deadline_ns
 * (CLOCK_MONOTONIC) at the latest. */
void elfcache_set_deadline(struct elfcache *c, uint64_t deadline_ns);
/* The host's vdso object (the same image in every process), referenced. */
struct elf_obj *elfcache_vdso(struct elfcache *c);
/* Adds n bytes allocated for o (demangled names) to its charge. */
void elfcache_charge(struct elfcache *c, struct elf_obj *o, size_t n);
/* Marks o most recently used. */
void elfcache_touch(struct elfcache *c, struct elf_obj *o);
void elfcache_put(struct elfcache *c, struct elf_obj *o);
/* *used (the processes' own caches, budget.h) counts against the
 * cache's bound too. */
void elfcache_share(struct elfcache *c, const uint64_t *used);
/* Applies the memory bound; called between samples, never mid-walk. */
void elfcache_trim(struct elfcache *c);
/* Forgets every cached output string id (the output dictionaries started
 * over). */
void elfcache_forget_out_ids(struct elfcache *c);
void elfcache_stats(const struct elfcache *c, struct elfcache_stats *st);

#endif
