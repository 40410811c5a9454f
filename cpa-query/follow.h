/* SPDX-License-Identifier: MIT */
/*
 * --follow: the windows of a store as cpa-store commits them, written as
 * a stream that does not end. Each committed block (one flush) goes out
 * in commit order, its samples then a meta record
 *
 *   position = SEGMENT N
 *
 * saying that the first N blocks of SEGMENT, and every segment before it,
 * have been written. A consumer that keeps the last position it has
 * safely handled (cpa-push's cursor file) gives it back with --cursor and
 * the stream starts right after it.
 */
#ifndef CPA_QUERY_FOLLOW_H
#define CPA_QUERY_FOLLOW_H

#include "opts.h"

/* Runs until the reader of stdout goes away (exit 0) or the store
 * cannot be read (exit 1). */
int follow_run(const struct query_opts *o, int fd);

#endif
