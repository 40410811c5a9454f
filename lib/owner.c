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

void cpa_owner_parse(const char *path, struct cpa_owner *o)
{
	o->container[0] = 0;
	o->pod[0] = 0;
	if (!path)
		return;
	bool kube = false;
	for (const char *c = path; *c;) {
		while (*c == '/')
			c++;
		size_t n = strcspn(c, "/");
		if (!n)
			break;
		if (n >= 8 && !memcmp(c, "kubepods", 8))
			kube = true;
		if (kube)
			pod_of(c, n, o);
		container_of(c, n, o);
		c += n;
	}
}
