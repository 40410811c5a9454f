/* SPDX-License-Identifier: MIT */
/*
 * Separate debug files fetched from the debuginfod servers named in
 * DEBUGINFOD_URLS, through elfutils' libdebuginfod, on a thread of their
 * own: a loader asks for a build id and never waits for the network (a
 * recording excepted, which waits for the first answer so that it is
 * unwound the same way every time). A failed fetch is tried again after
 * 1 s, 2 s, 4 s... up to 5 minutes, for as long as cpa-unwind runs, so
 * an object whose server was down gets its names once it is back.
 *
 * Fetched files live in libdebuginfod's own cache, in a directory of
 * cpa-unwind's (--debuginfod-cache), and are parsed like any other
 * debug file: opened as a regular file, their build id checked.
 */
#ifndef CPA_UNWIND_DBGFETCH_H
#define CPA_UNWIND_DBGFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dbgfetch;

struct dbgfetch_stats {
	uint64_t wanted;	/* distinct build ids asked for */
	uint64_t fetched;	/* of them, now in the cache */
	uint64_t attempts, failures;
	uint64_t refused;	/* not asked for: past the bound on build ids */
};

/*
 * A fetcher, or NULL with *err empty when DEBUGINFOD_URLS names no
 * server, or NULL with err set when the cache directory cannot be made.
 * wait: lookups wait for the first answer on a build id (a recording).
 */
struct dbgfetch *dbgfetch_new(const char *cache_dir, bool wait, char *err,
			      size_t errlen);
void dbgfetch_free(struct dbgfetch *f);

/*
 * The cached debug file of a build id into path. false when there is
 * none yet: the first lookup asks for it, and it keeps being asked for
 * in the background. Called on loader threads.
 */
bool dbgfetch_lookup(struct dbgfetch *f, const uint8_t *id, size_t len,
		     char *path, size_t cap);
/* Whether the debug file of the build id is in the cache now. */
bool dbgfetch_ready(struct dbgfetch *f, const uint8_t *id, size_t len);
/* Counts answers: changes whenever a fetch succeeds. */
uint64_t dbgfetch_generation(struct dbgfetch *f);
void dbgfetch_stats(struct dbgfetch *f, struct dbgfetch_stats *st);

/* The default cache directory: $CACHE_DIRECTORY/debuginfod (systemd's
 * CacheDirectory=), $XDG_CACHE_HOME/cpa/debuginfod, ~/.cache/cpa/debuginfod. */
const char *dbgfetch_default_cache(char *buf, size_t cap);

#endif
