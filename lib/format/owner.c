/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "owner.h"

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix,
		      size_t *stem)
{
	size_t k = strlen(suffix);
	if (n < k || memcmp(s + n - k, suffix, k))
		return false;
	*stem = n - k;
	return true;
}

/* A container scope or directory: runtime prefix (systemd driver) or the
 * bare id (cgroupfs driver). Conmon scopes belong to the runtime's
 * monitor, not the container, and have their own prefix. */
static bool container_of(const char *c, size_t n, struct cpa_owner *o)
{
	static const char *const prefixes[] = {
		"docker-", "cri-containerd-", "crio-", "libpod-",
	};
	size_t stem = n;
	ends_with(c, n, ".scope", &stem);
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++) {
		size_t k = strlen(prefixes[i]);
		if (stem > k && !memcmp(c, prefixes[i], k)) {
			c += k;
			stem -= k;
			break;
		}
	}
	if (stem != CPA_CONTAINER_ID_LEN || !all_hex(c, stem))
		return false;
	memcpy(o->container, c, stem);
	o->container[stem] = 0;
	return true;
}

/* kubepods-burstable-pod<UID>.slice (systemd: '-' in the UID written as
 * '_') or pod<UID> (cgroupfs). */
static void pod_of(const char *c, size_t n, struct cpa_owner *o)
{
	size_t stem = n;
	const char *uid;
	if (ends_with(c, n, ".slice", &stem)) {
		if (stem < 9 || memcmp(c, "kubepods-", 9))
			return;
		const char *p = NULL;
		for (size_t i = 0; i + 4 <= stem; i++)
			if (!memcmp(c + i, "-pod", 4))
				p = c + i + 4;
		if (!p)
			return;
		uid = p;
		stem -= (size_t)(p - c);
	} else {
		if (n < 4 || memcmp(c, "pod", 3))
			return;
		uid = c + 3;
		stem = n - 3;
	}
	if (stem < 1 || stem > CPA_POD_UID_MAX)
		return;
	char out[CPA_POD_UID_MAX + 1];
	for (size_t i = 0; i < stem; i++) {
		char ch = uid[i] == '_' ? '-' : uid[i];
		if (!(ch == '-' || (ch >= '0' && ch <= '9') ||
		      (ch >= 'a' && ch <= 'f')))
			return;
		out[i] = ch;
	}
	out[stem] = 0;
	memcpy(o->pod, out, stem + 1);
}

bool cpa_owner_parse_n(const char *path, size_t len, struct cpa_owner *o)
{
	o->container[0] = 0;
	o->pod[0] = 0;
	if (!path)
		return false;
	bool kube = false;
	for (const char *c = path, *end = path + len; c < end;) {
		while (c < end && *c == '/')
			c++;
		const char *slash = memchr(c, '/', (size_t)(end - c));
		size_t n = (size_t)((slash ? slash : end) - c);
		if (!n)
			break;
		if (n >= 8 && !memcmp(c, "kubepods", 8))
			kube = true;
		if (kube)
			pod_of(c, n, o);
		container_of(c, n, o);
		c += n;
	}
	return o->container[0] || o->pod[0];
}

bool cpa_owner_parse(const char *path, struct cpa_owner *o)
{
	return cpa_owner_parse_n(path, path ? strlen(path) : 0, o);
}

bool cpa_cgroup_line_next(const char *text, size_t len, size_t *pos,
			  struct cpa_cgroup_line *line)
{
	while (*pos < len) {
		const char *s = text + *pos;
		const char *nl = memchr(s, '\n', len - *pos);
		size_t n = nl ? (size_t)(nl - s) : len - *pos;
		*pos += n + (nl ? 1 : 0);
		const char *c1 = memchr(s, ':', n);
		const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - s))
				    : NULL;
		if (!c2 || c1 == s || c2 + 1 == s + n || c2[1] != '/')
			continue;
		line->controllers = c1 + 1;
		line->controllers_len = (size_t)(c2 - c1 - 1);
		line->path = c2 + 1;
		line->path_len = n - (size_t)(c2 + 1 - s);
		unsigned h = 0;
		const char *d = s;
		for (; d < c1 && *d >= '0' && *d <= '9' && h < 100000; d++)
			h = h * 10 + (unsigned)(*d - '0');
		if (d != c1)
			continue;	/* not a hierarchy id */
		line->hierarchy = h;
		line->v2 = h == 0 && !line->controllers_len;
		return true;
	}
	return false;
}

/* How much an owner says: a container and a pod, or one of them. */
static int owner_rank(const struct cpa_owner *o)
{
	return (o->container[0] != 0) + (o->pod[0] != 0);
}

bool cpa_owner_of_process(const char *text, size_t len, struct cpa_owner *o,
			  struct cpa_cgroup_line *line)
{
	struct cpa_cgroup_line l;
	struct cpa_owner cur;
	size_t pos = 0;
	int best = 0;
	o->container[0] = o->pod[0] = 0;
	while (cpa_cgroup_line_next(text, len, &pos, &l)) {
		if (!cpa_owner_parse_n(l.path, l.path_len, &cur))
			continue;
		int rank = owner_rank(&cur) + (l.v2 ? 2 : 0);
		if (rank > best) {
			best = rank;
			*o = cur;
			*line = l;
		}
	}
	return best > 0;
}
