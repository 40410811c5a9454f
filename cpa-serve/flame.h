/* SPDX-License-Identifier: MIT */
/*
 * Pyroscope's flame graph (querier.v1.FlameGraph) of folded stacks: a
 * tree of frames, root first, merged by name under each parent, written
 * as Pyroscope writes it: "total" as the root and the first name, one
 * Level per depth holding (x offset, total, self, name index) per node,
 * left to right, children in name order, each x offset the distance from
 * the previous node's end in its level. Every node is kept (HUATUO
 * builds it with unlimited nodes).
 */
#ifndef CPA_SERVE_FLAME_H
#define CPA_SERVE_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct flame;

struct flame *flame_new(void);
void flame_free(struct flame *f);

/*
 * Adds folded text (len bytes), each count times scale; only stacks that
 * begin with the frames prefix[n] (a call site, root first; n 0: all).
 * 0, or -1 with err naming the line.
 */
int flame_add_folded(struct flame *f, const char *text, size_t len,
		     uint64_t scale, char *const *prefix, size_t n,
		     char *err, size_t errlen);
/* Whether anything was added. */
int64_t flame_total(const struct flame *f);

/* The FlameGraph message's bytes, appended to out. */
void flame_encode(const struct flame *f, struct cpa_buf *out);

#endif
