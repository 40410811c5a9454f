/* SPDX-License-Identifier: MIT */
/*
 * Owners of a sample from its cgroup path: the container id and the
 * Kubernetes pod UID that container runtimes spell into the path, for
 * both cgroup drivers:
 *
 *   systemd   /system.slice/docker-ID.scope, cri-containerd-ID.scope,
 *             crio-ID.scope, libpod-ID.scope (Podman);
 *             /kubepods.slice/kubepods-burstable.slice/
 *               kubepods-burstable-pod<UID with _ for ->.slice/...
 *   cgroupfs  /docker/ID, /kubepods/burstable/pod<UID>/ID
 *
 * ID is 64 hex digits. cpa-unwind records the path as the sample's
 * container-or-cgroup label; the query and label code derive the rest
 * from it, so the stream and the store carry one string.
 */
#ifndef CPA_OWNER_H
#define CPA_OWNER_H

#include <stdbool.h>
#include <stddef.h>

#define CPA_CONTAINER_ID_LEN 64
#define CPA_POD_UID_MAX 36

struct cpa_owner {
	char container[CPA_CONTAINER_ID_LEN + 1];	/* "" when none */
	char pod[CPA_POD_UID_MAX + 1];			/* "" when none */
};

/* True when a container-or-cgroup label is a cgroup path (it starts with
 * '/'); anything else is a container name recorded as is. */
static inline bool cpa_label_is_cgroup(const char *label)
{
	return label && label[0] == '/';
}

/* Fills o from a cgroup path; the deepest match wins. */
void cpa_owner_parse(const char *path, struct cpa_owner *o);

#endif
