/* SPDX-License-Identifier: MIT */
/* Bearer tokens: one secret, read from a file only its owner can read. */
#ifndef CPA_SERVE_AUTH_H
#define CPA_SERVE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

/* Reads the token from path; refuses a file that group or others may
 * read or write, or an empty token. -1 with a message in err. */
int auth_load(const char *path, char *err, size_t errlen);

/* Whether an Authorization header value carries the token; the time it
 * takes does not depend on how much of the token matched. */
bool auth_check(const char *authorization);

void auth_free(void);

#endif
