/* SPDX-License-Identifier: MIT */
/*
 * The users file (--users), in HUATUO's own configuration syntax (a
 * TOML subset: tables, arrays of tables, strings, booleans, arrays of
 * strings, comments), so a HUATUO [Auth] section can be copied in:
 *
 *	[HTTPServer.Auth]
 *	    BearerToken = "node token, for /v1/operations"
 *	[Agent.Auth]
 *	    BearerToken = "the token an apiserver (--fleet) shows nodes"
 *	[Auth]
 *	    [[Auth.Users]]
 *	        ID = "administrator"
 *	        BearerToken = "..."
 *	        Admin = true
 *	    [[Auth.Users]]
 *	        ID = "alice"
 *	        BearerToken = "..."
 *	        Permissions = ["/v1/profiling", "GET /v1/profiling/(two stars)"]
 *
 * The file holds tokens, so it must be private as the token file is.
 */
#ifndef CPA_SERVE_USERS_H
#define CPA_SERVE_USERS_H

#include <stddef.h>

/* Reads path into auth's users: 0, or -1 with "PATH:LINE: what" in err. */
int users_load(const char *path, char *err, size_t errlen);

/* The same from text already read (the fuzz target's entry). */
int users_parse(const char *name, const char *text, size_t len, char *err,
		size_t errlen);

#endif
