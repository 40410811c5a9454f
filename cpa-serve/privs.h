/* SPDX-License-Identifier: MIT */
/* The server gives up every capability once the launcher is forked. */
#ifndef CPA_SERVE_PRIVS_H
#define CPA_SERVE_PRIVS_H

#include <stddef.h>

/*
 * As root: becomes user (when not NULL), or stays uid 0 with no
 * capability and securebits that keep exec from giving any back. Either
 * way the bounding set is emptied and no_new_privs set. Call before any
 * thread starts: capabilities are per thread. Not root: nothing to do.
 */
int privs_drop(const char *user, char *err, size_t errlen);

#endif
