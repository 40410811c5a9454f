/* SPDX-License-Identifier: MIT */
/*
 * Cgroup paths of samples. A raw sample carries its task's cgroup v2 id,
 * which is the inode number of the cgroup's directory; its path (from
 * the cgroup2 mount, "/system.slice/docker-ID.scope") names the owner.
 * Paths are found by walking the cgroup2 hierarchy and kept per id for the
 * life of the process: a cgroup created after start is found by the next
 * walk, one removed since keeps the name it had. A miss walks again at
 * most once per second, so a stream of unknown ids costs one walk a
 * second, not one per sample. At most 65536 paths and 16 MiB of them are
 * kept (a delegated subtree can make cgroups at will); past that, new
 * cgroups go unnamed.
 */
#ifndef CPA_UNWIND_CGROUPS_H
#define CPA_UNWIND_CGROUPS_H

#include <stdint.h>

struct cgroups;

/* root: the cgroup2 mount, NULL to find it in /proc/self/mountinfo.
 * Without one (a cgroup v1 host) every lookup misses. */
struct cgroups *cgroups_new(const char *root);
/* The path of cgroup id, relative to the mount ("/" for the root), or
 * NULL when unknown. now_ns is monotonic time, for the walk's rate. */
const char *cgroups_path(struct cgroups *c, uint64_t id, uint64_t now_ns);
/* walks done, paths known */
void cgroups_stats(const struct cgroups *c, uint64_t *walks,
		   uint64_t *known);
void cgroups_free(struct cgroups *c);

#endif
