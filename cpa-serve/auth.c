/* SPDX-License-Identifier: MIT */
/*
 * Bearer tokens. The token file must be private to its owner, as ssh
 * wants of a key. Looking a token up compares it with every user's
 * token, over every byte whatever matches, so a client cannot learn a
 * token a byte at a time, nor which user's it nearly is, from response
 * times. Permissions are HUATUO's: a path pattern of '/'-separated
 * segments ('*' and ':name' one segment, '**' one or more), optionally
 * after a method.
 */
#include <config.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "buf.h"
#include "log.h"

#define TOKEN_MAX 4096

static struct user *users;
static size_t n_users, cap_users;
static char *node_token;
static char *agent_token;
static size_t node_token_len;

static int token_ok(const char *t, size_t len, const char *what, char *err,
		    size_t errlen)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] <= ' ' || t[i] == 0x7f)
			return cpa_fail(err, errlen, "%s: byte %zu: the token "
					"has a space or control character",
					what, i);
	if (len < 16)
		return cpa_fail(err, errlen, "%s: token shorter than 16 bytes",
				what);
	if (len > TOKEN_MAX)
		return cpa_fail(err, errlen, "%s: token longer than %d bytes",
				what, TOKEN_MAX);
	return 0;
}

/* Every byte of want is compared, with given's or, past its end, with
 * itself altered: the time depends on want's length only. */
static bool same_token(const char *given, size_t given_len, const char *want,
		       size_t want_len)
{
	unsigned char diff = given_len != want_len;

	for (size_t i = 0; i < want_len; i++) {
		unsigned char g = i < given_len ? (unsigned char)given[i]
						: (unsigned char)want[i] ^ 1;

		diff |= (unsigned char)(g ^ (unsigned char)want[i]);
	}
	return diff == 0;
}

int auth_add_user(const char *id, const char *token, bool admin,
		  char *const *perms, size_t n_perms, char *err, size_t errlen)
{
	struct user *u;
	size_t len = strlen(token);

	if (!id[0])
		return cpa_fail(err, errlen, "a user without an ID");
	if (token_ok(token, len, id, err, errlen))
		return -1;
	for (size_t i = 0; i < n_users; i++) {
		if (!strcmp(users[i].id, id))
			return cpa_fail(err, errlen, "user %s: ID given twice",
					id);
		if (same_token(token, len, users[i].token, users[i].token_len))
			return cpa_fail(err, errlen, "user %s: the token of "
					"user %s", id, users[i].id);
	}
	for (size_t i = 0; i < n_perms; i++)
		if (!auth_permission_valid(perms[i]))
			return cpa_fail(err, errlen, "user %s: permission "
					"'%s': expected [METHOD ]/PATH", id,
					perms[i]);
	CPA_GROW(users, cap_users, n_users + 1);
	u = &users[n_users++];
	memset(u, 0, sizeof(*u));
	u->id = cpa_strdup(id);
	u->token = cpa_strdup(token);
	u->token_len = len;
	u->admin = admin;
	u->perms = cpa_calloc(n_perms + 1, sizeof(*u->perms));
	for (size_t i = 0; i < n_perms; i++)
		u->perms[i] = cpa_strdup(perms[i]);
	u->n_perms = n_perms;
	return 0;
}

int auth_set_node_token(const char *token, char *err, size_t errlen)
{
	size_t len = strlen(token);

	if (token_ok(token, len, "[HTTPServer.Auth] BearerToken", err, errlen))
		return -1;
	free(node_token);
	node_token = cpa_strdup(token);
	node_token_len = len;
	return 0;
}

int auth_set_agent_token(const char *token, char *err, size_t errlen)
{
	if (token_ok(token, strlen(token), "[Agent.Auth] BearerToken", err,
		     errlen))
		return -1;
	free(agent_token);
	agent_token = cpa_strdup(token);
	return 0;
}

const char *auth_agent_token(void)
{
	if (agent_token)
		return agent_token;
	for (size_t i = 0; i < n_users; i++)
		if (users[i].admin)
			return users[i].token;
	return NULL;
}

size_t auth_n_users(void)
{
	return n_users;
}

int auth_read_private(const char *path, const char *what, size_t max,
		      char *buf, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd;

	*len = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return cpa_fail_errno(err, errlen, errno, "%s", path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return cpa_fail(err, errlen, "%s: not a regular file", path);
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		return cpa_fail(err, errlen, "%s: mode %04o lets others read "
				"or change %s; chmod 600 it", path,
				(unsigned)(st.st_mode & 07777), what);
	}
	while (*len < max && (n = read(fd, buf + *len, max - *len)) > 0)
		*len += (size_t)n;
	close(fd);
	if (*len == max)
		return cpa_fail(err, errlen, "%s: over %zu bytes", path, max - 1);
	buf[*len] = 0;
	if (strlen(buf) != *len)
		return cpa_fail(err, errlen, "%s: NUL in the file", path);
	return 0;
}

int auth_load_token(const char *path, char *err, size_t errlen)
{
	char buf[TOKEN_MAX + 2];
	size_t len;
	int rc;

	rc = auth_read_private(path, "the token", sizeof(buf) - 1, buf, &len,
			       err, errlen);
	if (!rc) {
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
			       buf[len - 1] == ' ' || buf[len - 1] == '\t'))
			len--;
		buf[len] = 0;
		rc = token_ok(buf, len, path, err, errlen);
	}
	if (!rc)
		rc = auth_add_user("admin", buf, true, NULL, 0, err, errlen);
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

/* The token of a "Bearer TOKEN" header (scheme in any case, spaces
 * around trimmed), or NULL. */
static const char *bearer(const char *h, size_t *len)
{
	const char *end;

	if (!h)
		return NULL;
	while (*h == ' ' || *h == '\t')
		h++;
	if (strncasecmp(h, "Bearer", 6) || (h[6] != ' ' && h[6] != '\t'))
		return NULL;
	h += 7;
	while (*h == ' ' || *h == '\t')
		h++;
	end = h + strlen(h);
	while (end > h && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*len = (size_t)(end - h);
	return *len ? h : NULL;
}

const struct user *auth_user(const char *authorization, const char **why)
{
	const struct user *found = NULL;
	const char *t;
	size_t len = 0;

	t = bearer(authorization, &len);
	if (!t) {
		*why = "missing bearer token";
		return NULL;
	}
	/* every token compared, the match kept without a branch on it */
	for (size_t i = 0; i < n_users; i++) {
		bool m = same_token(t, len, users[i].token, users[i].token_len);
		uintptr_t mask = (uintptr_t)0 - (uintptr_t)m;

		found = (const struct user *)(((uintptr_t)&users[i] & mask) |
					      ((uintptr_t)found & ~mask));
	}
	if (!found)
		*why = "invalid bearer token";
	return found;
}

bool auth_node(const char *authorization, const char **why)
{
	const struct user *u;
	const char *t;
	size_t len = 0;

	if (node_token) {
		t = bearer(authorization, &len);
		if (!t) {
			*why = "missing bearer token";
			return false;
		}
		if (same_token(t, len, node_token, node_token_len))
			return true;
		*why = "invalid bearer token";
		return false;
	}
	u = auth_user(authorization, why);
	if (u && !u->admin) {
		*why = "invalid bearer token";
		return false;
	}
	return u != NULL;
}

/* Matches path's segments against pattern's: literal, '*' or ':x' for
 * one, '**' for one or more. Leading and trailing '/' do not count. */
static bool match_segments(const char *pat, const char *path)
{
	while (*pat == '/')
		pat++;
	while (*path == '/')
		path++;
	if (!*pat)
		return !*path;
	size_t pn = strcspn(pat, "/"), sn = strcspn(path, "/");

	if (pn == 2 && !strncmp(pat, "**", 2)) {
		if (!*path)
			return false;	/* one or more */
		for (const char *p = path; *p;) {
			p += strcspn(p, "/");
			if (match_segments(pat + 2, p))
				return true;
			while (*p == '/')
				p++;
		}
		return false;
	}
	if (!*path)
		return false;
	if (!((pn == 1 && pat[0] == '*') || pat[0] == ':' ||
	      (pn == sn && !strncmp(pat, path, pn))))
		return false;
	return match_segments(pat + pn, path + sn);
}

bool auth_permission_valid(const char *perm)
{
	const char *sp = strchr(perm, ' ');
	const char *path = sp ? sp + 1 : perm;

	if (sp)
		for (const char *c = perm; c < sp; c++)
			if (!isalpha((unsigned char)*c))
				return false;
	return path[0] == '/' && !strchr(path, ' ');
}

bool auth_permits(const struct user *u, const char *method, const char *path)
{
	if (u->admin)
		return true;
	for (size_t i = 0; i < u->n_perms; i++) {
		const char *p = u->perms[i], *sp = strchr(p, ' ');

		if (sp) {
			size_t mn = (size_t)(sp - p);
			bool same = strlen(method) == mn;

			for (size_t k = 0; same && k < mn; k++)
				same = toupper((unsigned char)p[k]) == method[k];
			if (!same)
				continue;
			p = sp + 1;
		}
		if (match_segments(p, path))
			return true;
	}
	return false;
}

void auth_free(void)
{
	for (size_t i = 0; i < n_users; i++) {
		explicit_bzero(users[i].token, users[i].token_len);
		free(users[i].token);
		free(users[i].id);
		for (size_t k = 0; k < users[i].n_perms; k++)
			free(users[i].perms[k]);
		free(users[i].perms);
	}
	free(users);
	users = NULL;
	n_users = cap_users = 0;
	if (agent_token) {
		explicit_bzero(agent_token, strlen(agent_token));
		free(agent_token);
		agent_token = NULL;
	}
	if (node_token) {
		explicit_bzero(node_token, node_token_len);
		free(node_token);
	}
	node_token = NULL;
}
