/* SPDX-License-Identifier: MIT */
/*
 * --cgroup and --container, resolved to cgroup v2 ids for the kernel-side
 * filter. A container id is found the way the kernel sees it, through
 * /proc/PID/cgroup, not through a container runtime's API.
 */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "cpa-capture.h"
#include "log.h"

#define CGROUP2_SUPER_MAGIC 0x63677270

/* Where cgroup2 is mounted: /sys/fs/cgroup on unified hosts,
 * /sys/fs/cgroup/unified on hybrid ones. */
static int cgroup2_mount(char *out, size_t len)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	char dev[256], dir[4096], type[64];
	int found = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir, type) == 3) {
		if (!strcmp(type, "cgroup2")) {
			snprintf(out, len, "%s", dir);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* The cgroup id is the kernfs node id, which cgroup2 exposes as the
 * directory's file handle (and, on 64-bit, as its inode number). */
static uint64_t cgroup_id_of(const char *path)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h;
	int mount_id;
	struct stat st;

	h.fh.handle_bytes = sizeof(h.id);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mount_id, 0) == 0 &&
	    h.fh.handle_bytes == sizeof(uint64_t))
		return h.id;
	if (stat(path, &st) == 0)
		return st.st_ino;
	return 0;
}

static uint64_t resolve_cgroup_path(const char *arg, const char *what)
{
	char root[4096], path[8192];
	struct statfs sfs;
	struct stat st;
	uint64_t id;

	if (cgroup2_mount(root, sizeof(root)) < 0)
		cpa_die("%s: no cgroup2 hierarchy is mounted (see "
			"/proc/self/mounts)", what);
	if (arg[0] == '/' && stat(arg, &st) == 0)
		snprintf(path, sizeof(path), "%s", arg);
	else
		snprintf(path, sizeof(path), "%s/%s", root,
			 arg[0] == '/' ? arg + 1 : arg);
	if (stat(path, &st) < 0)
		cpa_die("%s: cgroup '%s' not found (%s: %s)", what, arg, path,
			strerror(errno));
	if (!S_ISDIR(st.st_mode) || statfs(path, &sfs) < 0 ||
	    sfs.f_type != CGROUP2_SUPER_MAGIC)
		cpa_die("%s: '%s' is not a cgroup v2 directory (cgroup2 is "
			"mounted at %s; v1 hierarchies cannot be filtered)",
			what, arg, root);
	id = cgroup_id_of(path);
	if (!id)
		cpa_die("%s: cannot read the id of cgroup '%s'", what, path);
	return id;
}

/* A 64-hex-digit run in a cgroup path, as Docker, containerd and
 * CRI-O name their cgroups (docker-ID.scope, /docker/ID, cri-containerd-ID,
 * crio-ID). Returns its start or NULL. */
static const char *find_container_id(const char *s)
{
	for (const char *p = s; *p; p++) {
		size_t n = 0;

		if (p > s && isxdigit((unsigned char)p[-1]))
			continue;
		while (isxdigit((unsigned char)p[n]) && !isupper((unsigned char)p[n]))
			n++;
		if (n == 64)
			return p;
	}
	return NULL;
}

static uint64_t resolve_container(const char *prefix)
{
	char full[65] = "", v2path[4096] = "";
	size_t plen = strlen(prefix);
	DIR *d = opendir("/proc");
	struct dirent *de;
	bool ambiguous = false;
	char other[65] = "";

	if (!d)
		cpa_die("--container: cannot read /proc: %s", strerror(errno));
	while ((de = readdir(d))) {
		char fn[300], line[4096], v2[4096] = "", id[65] = "";
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(fn, sizeof(fn), "/proc/%s/cgroup", de->d_name);
		f = fopen(fn, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			const char *p = find_container_id(line);

			line[strcspn(line, "\n")] = 0;
			if (!strncmp(line, "0::", 3))
				snprintf(v2, sizeof(v2), "%s", line + 3);
			if (p && !id[0] && !strncmp(p, prefix, plen))
				snprintf(id, sizeof(id), "%.64s", p);
		}
		fclose(f);
		if (!id[0])
			continue;
		if (!full[0]) {
			memcpy(full, id, sizeof(full));
		} else if (strcmp(full, id)) {
			ambiguous = true;
			memcpy(other, id, sizeof(other));
			break;
		}
		/* the cgroup v2 path that names the container */
		if (!v2path[0] && strstr(v2, full))
			snprintf(v2path, sizeof(v2path), "%s", v2);
	}
	closedir(d);
	if (ambiguous)
		cpa_die("--container '%s': ambiguous, matches %.12s and %.12s",
			prefix, full, other);
	if (!full[0])
		cpa_die("--container '%s': no running process is in a "
			"container with that id (searched /proc/*/cgroup)",
			prefix);
	if (!v2path[0])
		cpa_die("--container '%s': container %.12s has no cgroup v2 of "
			"its own (cgroup v1 host?), so it cannot be filtered in "
			"the kernel", prefix, full);
	/* trim anything below the container's own cgroup */
	char *end = strstr(v2path, full) + 64;

	end += strcspn(end, "/");
	*end = 0;
	return resolve_cgroup_path(v2path, "--container");
}

void capture_resolve_cgroups(struct capture_config *cfg)
{
	size_t n = 0;

	cfg->cgroup_ids = cpa_calloc(cfg->n_cgroups + cfg->n_containers + 1,
				     sizeof(*cfg->cgroup_ids));
	for (size_t i = 0; i < cfg->n_cgroups; i++)
		cfg->cgroup_ids[n++] =
			resolve_cgroup_path(cfg->cgroups[i], "--cgroup");
	for (size_t i = 0; i < cfg->n_containers; i++)
		cfg->cgroup_ids[n++] = resolve_container(cfg->containers[i]);
	cfg->n_cgroup_ids = n;
}
