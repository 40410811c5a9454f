/* SPDX-License-Identifier: MIT */
/* Layer lib/analysis, computations over decoded profiles: uses
 * lib/format and lib/base; only tools use it (lib/local.mk holds them to
 * this). */
/*
 * The heaviest functions of a profile, by self weight (the stacks that
 * end in them) and by total weight (the stacks through them): the --top
 * list of cpa-query and the top lists of cpa-render --format text.
 *
 * A function that recursion puts on a stack several times counts once in
 * that stack's total, so no total exceeds the sum of all stacks. Functions
 * are names interned in a cpa_strtab, by id.
 */
#ifndef CPA_TOPFUNCS_H
#define CPA_TOPFUNCS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "intern.h"

struct cpa_topfuncs {
	uint64_t *self, *total;	/* by name id */
	uint64_t *seen;		/* by name id: the last stack counted in */
	size_t cap;
	uint64_t stacks;	/* added so far; the current one's stamp */
	uint64_t sum;		/* weight of every stack */
};

void cpa_topfuncs_init(struct cpa_topfuncs *t);
void cpa_topfuncs_free(struct cpa_topfuncs *t);
/* Adds weight to the stack of names[0..n-1] (root first; ids from 1). */
void cpa_topfuncs_add(struct cpa_topfuncs *t, const uint32_t *names,
		      uint32_t n, uint64_t weight);

enum cpa_top_order {
	CPA_TOP_SELF,		/* then more total first */
	CPA_TOP_TOTAL,		/* then less self first: callers first */
};

/* A weight as a column shows it; NULL prints the integer. */
typedef void (*cpa_top_value_fn)(char *buf, size_t len, uint64_t v,
				  const void *ctx);

/*
 * Writes a header line and up to rows functions in the order by (ties
 * last by name): "self self% total total%  function".
 */
void cpa_topfuncs_write(FILE *f, const struct cpa_topfuncs *t,
			const struct cpa_strtab *names, unsigned rows,
			enum cpa_top_order by, cpa_top_value_fn value,
			const void *ctx);

#endif
