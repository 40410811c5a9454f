/* SPDX-License-Identifier: MIT */
/*
 * JIT symbol maps, /tmp/perf-PID.map, as written by Node's
 * --perf-basic-prof, Java perf-map agents and Python 3.12's -X perf:
 * one "START SIZE NAME" line per compiled function, hex without 0x (the
 * prefix is accepted too). Read through /proc/PID/root with the pid the
 * process has in its own namespace.
 *
 * The process writes the file, as large and as fast as it likes, so
 * (docs/security.md, "Hostile processes"):
 *  - it is read on a loader thread of its own (perfmap_load.c), never on
 *    the sample path: a sample waits for a load only until its deadline
 *    (--load-wait), and for one load at most once; all such waits
 *    together take at most 2% of the sample thread's time;
 *  - it is read with the process's own access (lib/safeopen.h): a map
 *    that only cpa-unwind's privilege can read is refused;
 *  - it is read incrementally, a map being append-only: only the bytes
 *    past those read, when the bytes before them are still there;
 *  - what it holds is charged to the budget (budget.h): a map that
 *    reaches its per-process share is cut there (not read further).
 * A map is read again when the file grew, at most once a second, and at
 * once when a sampled address is not in it and the last read began
 * before the sample was taken: V8 writes a function's line when it
 * compiles it, so a read after the sample finds it.
 */
#ifndef CPA_UNWIND_PERFMAP_H
#define CPA_UNWIND_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symtab.h"

#define PERFMAP_TAIL 32		/* bytes kept to check a map only grew */

struct budget;
struct perfmap_load;
struct safeopen_cred;

struct perfmap {
	struct symtab syms;	/* the sample thread's; a load reads it */
	struct budget *budget;	/* set with the process */
	struct perfmap_load *load;	/* running, or done and not adopted */
	/* the file, as the last load adopted found it */
	uint64_t dev, ino, mtime_ns;
	uint64_t off;		/* bytes read: whole lines */
	uint8_t tail[PERFMAP_TAIL];	/* the last of them */
	uint8_t tail_len;
	uint64_t bytes;		/* charged to the budget */
	uint64_t bad_lines;	/* malformed lines skipped */
	uint64_t read_rt_ns;	/* CLOCK_REALTIME the last load began */
	uint64_t checked_ns;	/* monotonic time of the last load asked */
	uint64_t start_ns;	/* the process's start, realtime; 0: unknown */
	struct safeopen_cred *cred;	/* the process's, once seen alive */
	bool tried;		/* a load was asked for */
	bool reread;		/* read it whole next: the JVM rewrote it */
	bool cut;		/* at the budget: not read further */
	bool waited;		/* a sample waited for the running load */
};

struct perfmap_stats {
	uint64_t loads;		/* loads run */
	uint64_t incremental;	/* of which read from where the last ended */
	uint64_t bytes_read;	/* of map files */
	uint64_t waits, timeouts;	/* samples that waited; in vain */
	uint64_t cut;		/* maps cut at their budget */
	uint64_t late_found;	/* addresses found by a read after a miss */
};

/*
 * Parses a perf map held in buf into m (replacing its symbols). Bad lines
 * are skipped and counted; line numbers of the first is put in err.
 * Returns the number of symbols.
 */
long perfmap_parse(struct perfmap *m, const char *buf, size_t len,
		   char *err, size_t errlen);
/*
 * Adds the whole lines of buf to t (not finished: symtab_finish_newest
 * sorts), while t holds under limit bytes; a last line without its
 * newline is left. Returns the bytes consumed (up to a newline), *bad
 * counting malformed lines and *cut set when the limit stopped it.
 */
size_t perfmap_add_lines(struct symtab *t, const char *buf, size_t len,
			 uint64_t limit, uint64_t *bad, bool *cut);

/* Waits at most wait_ns for a process's first load (--load-wait); set
 * once, before the first sample. */
void perfmap_set_wait(uint64_t wait_ns);
/*
 * Takes a finished load of pid's map into m and asks for one when due
 * (never yet, the file may have grown, or perfmap_recheck). Waits for
 * the first load only, until now_ns + the wait. Returns 0 when a map is
 * present.
 */
int perfmap_refresh(struct perfmap *m, uint32_t pid, uint64_t now_ns);
/*
 * An address of a sample taken at sample_rt_ns (CLOCK_REALTIME) is not
 * in the map: reads it again if the last read began before the sample
 * (the line may have come since), and waits for the load at most until
 * deadline_ns, once per load. True when a load was taken in meanwhile:
 * look again.
 */
bool perfmap_missed(struct perfmap *m, uint32_t pid, uint64_t now_ns,
		    uint64_t sample_rt_ns, uint64_t deadline_ns);
/* The next refresh reads the file whole: a JVM has just rewritten it. */
void perfmap_recheck(struct perfmap *m);
/* Bytes m holds (charged to its budget). */
uint64_t perfmap_bytes(const struct perfmap *m);
/* Frees m's symbols (uncharged), abandons its load; m can be used again. */
void perfmap_free(struct perfmap *m);
void perfmap_stats(struct perfmap_stats *st);
/* Ends the loader thread (at exit; loads still queued are dropped). */
void perfmap_loader_stop(void);

/* perfmap_load.c's side of perfmap_free */
void perfmap_load_abandon(struct perfmap *m);

#endif
