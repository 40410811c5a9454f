/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
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
 * ID is 64 hex digits. The path is of any hierarchy: cgroup v2, or on
 * cgroup v1 and hybrid hosts the v1 one (a controller's, such as
 * /sys/fs/cgroup/memory/docker/ID) where runtimes of the cgroupfs
 * driver put containers. cpa-unwind records the path as the sample's
 * container-or-cgroup label; the query and label code derive the rest
 * from it, so the stream and the store carry one string.
 *
 * Which line of /proc/PID/cgroup names a process's owner is decided here
 * (cpa_owner_of_process), for the labels of cpa-unwind and the
 * --container filter of cpa-capture alike.
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

/* Fills o from a cgroup path; the deepest match wins. True when the path
 * names a container or a pod. */
bool cpa_owner_parse(const char *path, struct cpa_owner *o);
/* The same for the len bytes at path. */
bool cpa_owner_parse_n(const char *path, size_t len, struct cpa_owner *o);

/*
 * One line of /proc/PID/cgroup, "HIERARCHY-ID:CONTROLLERS:PATH": "0::PATH"
 * is cgroup v2; a v1 hierarchy has its controllers ("cpu,cpuacct") or
 * its name ("name=systemd"). Pointers are into the text.
 */
struct cpa_cgroup_line {
	unsigned hierarchy;	/* the first field; 0 for v2 */
	const char *controllers, *path;
	size_t controllers_len, path_len;
	bool v2;
};

/* The line of text (len bytes) at *pos, advancing *pos past it; false at
 * the end. Malformed lines are skipped. */
bool cpa_cgroup_line_next(const char *text, size_t len, size_t *pos,
			  struct cpa_cgroup_line *line);

/*
 * The owner of a process from the text of its /proc/PID/cgroup: the v2
 * line when it names a container or pod; else, on v1 and hybrid hosts,
 * the v1 line that names the most (a container and a pod over either
 * alone), the first of equals. Fills o and line; false when no line names
 * an owner.
 */
bool cpa_owner_of_process(const char *text, size_t len, struct cpa_owner *o,
			  struct cpa_cgroup_line *line);

#endif
