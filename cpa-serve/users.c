/* SPDX-License-Identifier: MIT */
/*
 * A line-oriented reader of the TOML subset users.h shows. Keys of other
 * tables are refused, as unknown fields of a body are: a misspelt
 * "Permisions" must not leave a user with no permission silently.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "buf.h"
#include "log.h"
#include "users.h"

#define USERS_MAX_BYTES (1u << 20)
#define MAX_PERMS 64

struct pending_user {
	char id[256], token[4200];
	bool admin, open;
	char *perms[MAX_PERMS];
	size_t n_perms;
};

static void clear(struct pending_user *u)
{
	for (size_t i = 0; i < u->n_perms; i++)
		free(u->perms[i]);
	explicit_bzero(u->token, sizeof(u->token));
	memset(u, 0, sizeof(*u));
}

static int flush(struct pending_user *u, const char *name, int line,
		 char *err, size_t errlen)
{
	char why[300];
	int rc = 0;

	if (!u->open)
		return 0;
	if (auth_add_user(u->id, u->token, u->admin, u->perms, u->n_perms,
			  why, sizeof(why)))
		rc = cpa_fail(err, errlen, "%s:%d: %s", name, line, why);
	clear(u);
	return rc;
}

/* A quoted string at *p (basic "..." with \\ \" \n \t, or literal
 * '...'), into out; *p past it. -1 when it does not end on the line. */
static int string_at(const char **p, char *out, size_t outlen)
{
	char q = **p;
	size_t n = 0;
	const char *s = *p + 1;

	for (; *s && *s != q && *s != '\n'; s++) {
		char c = *s;

		if (q == '"' && c == '\\') {
			s++;
			c = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s;
			if (!*s || !strchr("\\\"nt", *s))
				return -1;
		}
		if (n + 1 >= outlen)
			return -1;
		out[n++] = c;
	}
	if (*s != q)
		return -1;
	out[n] = 0;
	*p = s + 1;
	return 0;
}

static const char *skip_space(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static bool at_end(const char *s)
{
	s = skip_space(s);
	return !*s || *s == '#' || *s == '\n' || *s == '\r';
}

static int parse_line(const char *name, int line, const char *s,
		      char *table, size_t tablen, struct pending_user *u,
		      char *err, size_t errlen)
{
	char key[64], val[4200];
	const char *k;
	size_t kn;

	s = skip_space(s);
	if (at_end(s))
		return 0;
	if (s[0] == '[') {
		bool array = s[1] == '[';
		const char *b = s + (array ? 2 : 1), *e = strchr(b, ']');

		if (!e || (array && e[1] != ']') ||
		    !at_end(e + (array ? 2 : 1)) || (size_t)(e - b) >= tablen)
			return cpa_fail(err, errlen, "%s:%d: a table header "
					"that does not end", name, line);
		if (flush(u, name, line, err, errlen))
			return -1;
		snprintf(table, tablen, "%.*s", (int)(e - b), b);
		if (array && strcmp(table, "Auth.Users"))
			return cpa_fail(err, errlen, "%s:%d: [[%s]]: only "
					"[[Auth.Users]] is an array of tables "
					"here", name, line, table);
		if (!array && strcmp(table, "Auth") &&
		    strcmp(table, "HTTPServer.Auth") &&
		    strcmp(table, "HTTPServer") &&
		    strcmp(table, "Agent.Auth") && strcmp(table, "Agent"))
			return cpa_fail(err, errlen, "%s:%d: [%s]: not a table "
					"cpa-serve reads", name, line, table);
		u->open = array;
		return 0;
	}
	k = s;
	kn = strcspn(k, " \t=");
	if (!kn || kn >= sizeof(key))
		return cpa_fail(err, errlen, "%s:%d: expected KEY = VALUE",
				name, line);
	snprintf(key, sizeof(key), "%.*s", (int)kn, k);
	s = skip_space(k + kn);
	if (*s != '=')
		return cpa_fail(err, errlen, "%s:%d: expected KEY = VALUE",
				name, line);
	s = skip_space(s + 1);
	if ((!strcmp(table, "HTTPServer.Auth") ||
	     !strcmp(table, "Agent.Auth")) && !strcmp(key, "BearerToken")) {
		char why[300];
		bool agent = table[0] == 'A';

		if ((*s != '"' && *s != '\'') || string_at(&s, val, sizeof(val)) ||
		    !at_end(s))
			return cpa_fail(err, errlen, "%s:%d: BearerToken: "
					"expected a string", name, line);
		if (agent ? auth_set_agent_token(val, why, sizeof(why))
			  : auth_set_node_token(val, why, sizeof(why))) {
			explicit_bzero(val, sizeof(val));
			return cpa_fail(err, errlen, "%s:%d: %s", name, line,
					why);
		}
		explicit_bzero(val, sizeof(val));
		return 0;
	}
	if (strcmp(table, "Auth.Users") || !u->open)
		return cpa_fail(err, errlen, "%s:%d: %s: not a key cpa-serve "
				"reads in [%s]", name, line, key, table);
	if (!strcmp(key, "ID") || !strcmp(key, "BearerToken")) {
		bool id = key[0] == 'I';

		if ((*s != '"' && *s != '\'') ||
		    string_at(&s, id ? u->id : u->token,
			      id ? sizeof(u->id) : sizeof(u->token)) ||
		    !at_end(s))
			return cpa_fail(err, errlen, "%s:%d: %s: expected a "
					"string", name, line, key);
	} else if (!strcmp(key, "Admin")) {
		if (!strncmp(s, "true", 4) && at_end(s + 4))
			u->admin = true;
		else if (!strncmp(s, "false", 5) && at_end(s + 5))
			u->admin = false;
		else
			return cpa_fail(err, errlen, "%s:%d: Admin: expected "
					"true or false", name, line);
	} else if (!strcmp(key, "Permissions")) {
		if (*s != '[')
			return cpa_fail(err, errlen, "%s:%d: Permissions: "
					"expected [\"...\", ...]", name, line);
		s = skip_space(s + 1);
		while (*s != ']') {
			if ((*s != '"' && *s != '\'') ||
			    string_at(&s, val, sizeof(val)) ||
			    u->n_perms == MAX_PERMS)
				return cpa_fail(err, errlen, "%s:%d: "
						"Permissions: expected "
						"[\"...\", ...] on one line, "
						"at most %d", name, line,
						MAX_PERMS);
			u->perms[u->n_perms++] = cpa_strdup(val);
			s = skip_space(s);
			if (*s == ',')
				s = skip_space(s + 1);
			else if (*s != ']')
				return cpa_fail(err, errlen, "%s:%d: "
						"Permissions: expected , or ]",
						name, line);
		}
		if (!at_end(s + 1))
			return cpa_fail(err, errlen, "%s:%d: Permissions: "
					"text after ]", name, line);
	} else {
		return cpa_fail(err, errlen, "%s:%d: %s: not a key of "
				"[[Auth.Users]] (ID, BearerToken, Admin, "
				"Permissions)", name, line, key);
	}
	return 0;
}

int users_parse(const char *name, const char *text, size_t len, char *err,
		size_t errlen)
{
	struct pending_user u;
	char table[64] = "", *copy;
	int line = 0, rc = 0;

	if (memchr(text, 0, len))
		return cpa_fail(err, errlen, "%s: NUL in the file", name);
	memset(&u, 0, sizeof(u));
	copy = cpa_strndup(text, len);
	for (char *s = copy, *nl; s && !rc; s = nl ? nl + 1 : NULL) {
		nl = strchr(s, '\n');
		if (nl)
			*nl = 0;
		line++;
		rc = parse_line(name, line, s, table, sizeof(table), &u, err,
				errlen);
	}
	if (!rc)
		rc = flush(&u, name, line, err, errlen);
	clear(&u);
	explicit_bzero(copy, len);
	free(copy);
	return rc;
}

int users_load(const char *path, char *err, size_t errlen)
{
	char *buf = cpa_malloc(USERS_MAX_BYTES + 1);
	size_t len;
	int rc;

	rc = auth_read_private(path, "its tokens", USERS_MAX_BYTES, buf, &len,
			       err, errlen);
	if (!rc)
		rc = users_parse(path, buf, len, err, errlen);
	explicit_bzero(buf, USERS_MAX_BYTES + 1);
	free(buf);
	return rc;
}
