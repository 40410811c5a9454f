/* SPDX-License-Identifier: MIT */
/*
 * Bearer token authentication. The token file is the one secret of the
 * server, so it must be private to its owner, as ssh wants of a key; the
 * comparison runs over every byte whatever matches, so a client cannot
 * learn the token a byte at a time from response times.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "log.h"

#define TOKEN_MAX 4096

static char *token;
static size_t token_len;

int auth_load(const char *path, char *err, size_t errlen)
{
	char buf[TOKEN_MAX + 1];
	struct stat st;
	ssize_t n;
	size_t len = 0;
	int fd;

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
				"or change the token; chmod 600 it", path,
				(unsigned)(st.st_mode & 07777));
	}
	while ((n = read(fd, buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (n < 0)
		return cpa_fail_errno(err, errlen, errno, "%s", path);
	if (len > TOKEN_MAX)
		return cpa_fail(err, errlen, "%s: token longer than %d bytes",
				path, TOKEN_MAX);
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' ||
		       buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)buf[i] <= ' ' || buf[i] == 0x7f) {
			explicit_bzero(buf, sizeof(buf));
			return cpa_fail(err, errlen, "%s: byte %zu: the token "
					"has a space or control character",
					path, i);
		}
	if (len < 16) {
		explicit_bzero(buf, sizeof(buf));
		return cpa_fail(err, errlen, "%s: token shorter than 16 "
				"bytes", path);
	}
	auth_free();
	token = cpa_strndup(buf, len);
	token_len = len;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

bool auth_check(const char *authorization)
{
	const char *given;
	size_t given_len;
	unsigned char diff;

	if (!token || !authorization ||
	    strncasecmp(authorization, "Bearer ", 7))
		return false;
	given = authorization + 7;
	while (*given == ' ')
		given++;
	given_len = strlen(given);
	/* every byte of the token is compared, against the given bytes or,
	 * past their end, against themselves: the time depends on the
	 * token's length only */
	diff = given_len != token_len;
	for (size_t i = 0; i < token_len; i++) {
		unsigned char g = i < given_len ? (unsigned char)given[i]
						: (unsigned char)token[i] ^ 1;

		diff |= (unsigned char)(g ^ (unsigned char)token[i]);
	}
	return diff == 0;
}

void auth_free(void)
{
	if (token) {
		explicit_bzero(token, token_len);
		free(token);
	}
	token = NULL;
	token_len = 0;
}
