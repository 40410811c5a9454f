/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "statsfile.h"

static void copy_cut(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

void stats_parse(const char *buf, size_t n, struct stats_file *f)
{
	const char *p = buf, *end = buf + n;

	f->n = 0;
	while (p < end && f->n < STATS_MAX_KEYS) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *eq = memchr(p, '=', (size_t)(eol - p));

		if (eq && eq > p && !memchr(p, 0, (size_t)(eol - p))) {
			struct stats_kv *kv = &f->kv[f->n++];

			copy_cut(kv->key, sizeof(kv->key), p, (size_t)(eq - p));
			copy_cut(kv->val, sizeof(kv->val), eq + 1,
				 (size_t)(eol - eq - 1));
		}
		p = eol + 1;
	}
}

int stats_load(const char *path, struct stats_file *f)
{
	static char buf[STATS_MAX_BYTES];
	size_t len = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);

	f->n = 0;
	if (fd < 0)
		return -1;
	while (len < sizeof(buf) &&
	       (r = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		len += (size_t)r;
	}
	close(fd);
	stats_parse(buf, len, f);
	return 0;
}

const char *stats_get(const struct stats_file *f, const char *key)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->kv[i].key, key))
			return f->kv[i].val;
	return NULL;
}

bool stats_get_u64(const struct stats_file *f, const char *key, uint64_t *v)
{
	const char *s = stats_get(f, key);
	char *end;

	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !errno && !*end;
}
