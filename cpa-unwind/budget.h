/* SPDX-License-Identifier: MIT */
/*
 * What the per-process caches may hold: a process's perf map, the
 * Python code objects and the JVM code blobs read from its memory are as
 * large as the process makes them, so they are charged to --max-cache
 * beside the ELF objects
 * (docs/security.md, "Budgets").
 *
 * Rules: one process's cache of one kind holds at most per_proc bytes
 * (its owner starts it over, or stops adding, past that; it says which);
 * all of them together hold at most total bytes, past which the least
 * recently used process's caches are dropped (proctab_trim, the one
 * owner of that decision); the ELF cache counts used against --max-cache
 * too, so objects are unloaded first to make room. Only the sample
 * thread charges.
 */
#ifndef CPA_UNWIND_BUDGET_H
#define CPA_UNWIND_BUDGET_H

#include <stdint.h>

/* Shares of --max-cache: a process's cache of one kind, and all of them */
#define BUDGET_PER_PROC_SHARE 4		/* 1/4 */
#define BUDGET_TOTAL_SHARE 2		/* 1/2 */

enum budget_kind { BUDGET_PERFMAP = 0, BUDGET_PYCODE, BUDGET_JVMCODE,
		   BUDGET_KINDS };

struct budget {
	uint64_t per_proc;	/* bytes of one kind one process may hold */
	uint64_t total;		/* bytes all processes' caches may hold */
	uint64_t used;		/* held now, all kinds */
	uint64_t used_kind[BUDGET_KINDS];
	/* a process's cache started over or cut at per_proc */
	uint64_t full[BUDGET_KINDS];
	/* processes' caches dropped to keep the total */
	uint64_t dropped;
};

static inline void budget_init(struct budget *b, uint64_t max_cache)
{
	*b = (struct budget){
		.per_proc = max_cache / BUDGET_PER_PROC_SHARE,
		.total = max_cache / BUDGET_TOTAL_SHARE,
	};
}

/* n bytes more (or fewer, negative) held by a cache of kind k. */
static inline void budget_charge(struct budget *b, enum budget_kind k,
				 int64_t n)
{
	b->used += (uint64_t)n;
	b->used_kind[k] += (uint64_t)n;
}

#endif
