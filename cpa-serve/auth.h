/* SPDX-License-Identifier: MIT */
/*
 * Who a request is: users as HUATUO configures them ([[Auth.Users]]:
 * ID, BearerToken, Admin, Permissions), read from --users, and the
 * --token-file token as the administrator "admin". A token is looked up
 * in time that does not depend on how much of any token matched.
 */
#ifndef CPA_SERVE_AUTH_H
#define CPA_SERVE_AUTH_H

#include <stdbool.h>
#include <stddef.h>

struct user {
	char *id;
	char *token;
	size_t token_len;
	bool admin;
	char **perms;		/* "PATTERN" or "METHOD PATTERN" */
	size_t n_perms;
};

/* Adds the administrator "admin" with the token in path; refuses a file
 * that group or others may read or write, or a token under 16 bytes.
 * -1 with a message in err. */
int auth_load_token(const char *path, char *err, size_t errlen);
/* Reads a file of secrets: a regular file only its owner may read or
 * write (what names its content in the refusal), under max bytes, no
 * NUL; into buf (max + 1 bytes), its length in *len. -1 with err. */
int auth_read_private(const char *path, const char *what, size_t max,
		      char *buf, size_t *len, char *err, size_t errlen);
/* Adds a user (the config file's entries); -1 with err on a duplicate
 * ID or token, or a bad permission. */
int auth_add_user(const char *id, const char *token, bool admin,
		  char *const *perms, size_t n_perms, char *err, size_t errlen);
/* The node API's token ([HTTPServer.Auth] BearerToken); without one,
 * administrators' tokens serve. */
int auth_set_node_token(const char *token, char *err, size_t errlen);
/* The token the apiserver shows its nodes ([Agent.Auth] BearerToken);
 * without one, the first administrator's (a node without a node token
 * takes administrators'). */
int auth_set_agent_token(const char *token, char *err, size_t errlen);
const char *auth_agent_token(void);
size_t auth_n_users(void);

/*
 * The user an Authorization header names: NULL with *why "missing
 * bearer token" (no header, another scheme) or "invalid bearer token".
 */
const struct user *auth_user(const char *authorization, const char **why);
/* Whether the header carries the node token (or an administrator's). */
bool auth_node(const char *authorization, const char **why);

/* Whether u may METHOD path (admins may anything). */
bool auth_permits(const struct user *u, const char *method, const char *path);
/* Whether pattern is a permission auth_permits can read. */
bool auth_permission_valid(const char *perm);

void auth_free(void);

#endif
