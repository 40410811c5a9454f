/* SPDX-License-Identifier: MIT */
/* Where the stream comes from: stdin, or cpa-query --follow run on the
 * store (--dir), found next to cpa-push or on PATH. */
#ifndef CPA_PUSH_SOURCE_H
#define CPA_PUSH_SOURCE_H

#include <sys/types.h>

#include "opts.h"

/* Starts cpa-query --dir DIR --follow --cursor CURSOR and returns the
 * read end of its output; *pid is the child, which gets SIGTERM if
 * cpa-push dies. Dies when it cannot be started. */
int source_spawn(const struct push_opts *o, const char *cursor, pid_t *pid);

#endif
