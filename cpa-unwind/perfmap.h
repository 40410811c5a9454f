/* SPDX-License-Identifier: MIT */
/*
 * JIT symbol maps, /tmp/perf-PID.map, as written by Node's
 * --perf-basic-prof, Java perf-map agents and Python 3.12's -X perf:
 * one "START SIZE NAME" line per compiled function, hex without 0x (the
 * prefix is accepted too). Read through /proc/PID/root with the pid the
 * process has in its own namespace, and re-read when the file grows.
 */
#ifndef CPA_UNWIND_PERFMAP_H
#define CPA_UNWIND_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symtab.h"

struct perfmap {
	struct symtab syms;
	bool tried;
	uint64_t size;		/* bytes of the file when last read */
	uint64_t mtime_ns;	/* and its modification time */
	uint64_t checked_ns;	/* monotonic time of the last stat */
	uint64_t bad_lines;	/* malformed lines skipped */
	uint64_t start_ns;	/* the process's start, realtime; 0: unknown */
};

/*
 * Parses a perf map held in buf into m (replacing its symbols). Bad lines
 * are skipped and counted; line numbers of the first is put in err.
 * Returns the number of symbols.
 */
long perfmap_parse(struct perfmap *m, const char *buf, size_t len,
		   char *err, size_t errlen);
/*
 * Loads or refreshes the map of pid (at most once a second when now_ns
 * advances, or at once after perfmap_recheck). Returns 0 when a map is
 * present.
 */
int perfmap_refresh(struct perfmap *m, uint32_t pid, uint64_t now_ns);
/* The next refresh looks at the file again: a JVM has just written it. */
void perfmap_recheck(struct perfmap *m);
void perfmap_free(struct perfmap *m);

#endif
