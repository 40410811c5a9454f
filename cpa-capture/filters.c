/* SPDX-License-Identifier: MIT */
/*
 * --cgroup and --container, resolved to cgroup ids for the kernel-side
 * filter. A container id is found the way the kernel sees it, through
 * /proc/PID/cgroup (lib/format/owner.h says which line names it), not through a
 * container runtime's API.
 *
 * cgroup v2 directories become ids of the v2 hierarchy, which BPF reads
 * as the task's dfl_cgrp. On v1 and hybrid hosts a runtime of the
 * cgroupfs driver puts a container in v1 hierarchies only
 * (/sys/fs/cgroup/memory/docker/ID), where the v2 id says nothing: those
 * become ids of one v1 controller's hierarchy, which BPF reads through
 * the task's css of that controller (bpf/filter.bpf.h). Filtering in the
 * kernel, rather than in user space by pid, keeps the cost of the other
 * tasks out (no stack is copied for them) and follows the container's
 * processes and threads born after the capture started.
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
#include <unistd.h>

#include "cpa-capture.h"
#include "log.h"
#include "owner.h"

#define CGROUP_SUPER_MAGIC 0x27e0eb
#define CGROUP2_SUPER_MAGIC 0x63677270
#define CGROUP_FILE_MAX (64u << 10)
#define MAX_SUBSYS 64

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

/* The cgroup id is the kernfs node id, which cgroupfs (v1 and v2 alike)
 * exposes as the directory's file handle (and, on 64-bit, as its inode
 * number). */
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

/*
 * The cgroup v1 controllers of this kernel, from /proc/cgroups: one line
 * per subsystem in the kernel's subsystem id order, with the hierarchy
 * id that /proc/PID/cgroup lines start with (0: not mounted on v1).
 */
struct subsys {
	char name[32];
	int hierarchy;
};

static size_t read_subsystems(struct subsys *ss, size_t max)
{
	FILE *f = fopen("/proc/cgroups", "r");
	char line[256];
	size_t n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%31s %d", ss[n].name, &ss[n].hierarchy) != 2)
			break;
		n++;
	}
	fclose(f);
	return n;
}

/* The subsystem id of the first controller of v1 hierarchy hier, -1 when
 * it has none (a named hierarchy, such as name=systemd). */
static int hierarchy_ssid(int hier)
{
	struct subsys ss[MAX_SUBSYS];
	size_t n = read_subsystems(ss, MAX_SUBSYS);

	for (size_t i = 0; i < n; i++)
		if (hier > 0 && ss[i].hierarchy == hier)
			return (int)i;
	return -1;
}

/* True when the comma-separated list opts has the word w. */
static bool has_option(const char *opts, const char *w)
{
	size_t k = strlen(w);

	for (const char *p = opts; *p;) {
		size_t n = strcspn(p, ",");

		if (n == k && !memcmp(p, w, k))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/*
 * Where cgroup path (relative to its hierarchy's root) of the v1
 * hierarchy of subsystem ssid is on this host: the mount of that
 * controller, less the mount's own root within the hierarchy.
 */
static int v1_directory(int ssid, const char *path, char *out, size_t len)
{
	struct subsys ss[MAX_SUBSYS];
	size_t nss = read_subsystems(ss, MAX_SUBSYS);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int found = -1;

	if (!f || ssid < 0 || (size_t)ssid >= nss) {
		if (f)
			fclose(f);
		return -1;
	}
	while (found < 0 && getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SRC SUPER */
		char root[4096], mnt[4096], type[64], super[1024];
		const char *dash = strstr(line, " - ");

		if (!dash ||
		    sscanf(dash, " - %63s %*s %1023s", type, super) != 2 ||
		    strcmp(type, "cgroup") || !has_option(super, ss[ssid].name) ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2)
			continue;
		size_t rl = strcmp(root, "/") ? strlen(root) : 0;

		if (rl && (strncmp(path, root, rl) ||
			   (path[rl] && path[rl] != '/')))
			continue;	/* the cgroup is outside this mount */
		snprintf(out, len, "%s%s", mnt, path + rl);
		found = 0;
	}
	free(line);
	fclose(f);
	return found;
}

/* A v1 cgroup directory's id into the v1 filter, which selects in one
 * hierarchy: the first one chosen. */
static void add_v1(struct capture_config *cfg, int ssid, const char *dir,
		   const char *what, const char *arg)
{
	if (cfg->cgroup_v1_ssid >= 0 && cfg->cgroup_v1_ssid != ssid)
		cpa_die("%s '%s': its cgroup v1 directory %s is in another "
			"hierarchy than the v1 cgroups selected before (one "
			"v1 hierarchy can be filtered at a time)", what, arg,
			dir);
	uint64_t id = cgroup_id_of(dir);

	if (!id)
		cpa_die("%s: cannot read the id of cgroup '%s'", what, dir);
	cfg->cgroup_v1_ssid = ssid;
	cfg->cgroup_v1_ids[cfg->n_cgroup_v1_ids++] = id;
}

/* The first controller hierarchy of a cgroup v1 directory: that of the
 * mount it is on. */
static int v1_ssid_of_directory(const char *dir)
{
	struct subsys ss[MAX_SUBSYS];
	size_t nss = read_subsystems(ss, MAX_SUBSYS), best_len = 0;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int ssid = -1;

	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		char mnt[4096], type[64], super[1024];
		const char *dash = strstr(line, " - ");

		if (!dash ||
		    sscanf(dash, " - %63s %*s %1023s", type, super) != 2 ||
		    strcmp(type, "cgroup") ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		size_t ml = strlen(mnt);

		if (ml <= best_len || strncmp(dir, mnt, ml) ||
		    (dir[ml] && dir[ml] != '/'))
			continue;
		best_len = ml;
		ssid = -1;
		for (size_t i = 0; i < nss && ssid < 0; i++)
			if (has_option(super, ss[i].name))
				ssid = (int)i;
	}
	free(line);
	fclose(f);
	return ssid;
}

static void resolve_cgroup_path(struct capture_config *cfg, const char *arg,
				const char *what)
{
	char root[4096] = "", path[8192];
	struct statfs sfs;
	struct stat st;
	bool have_v2 = cgroup2_mount(root, sizeof(root)) == 0;

	if (arg[0] == '/' && stat(arg, &st) == 0)
		snprintf(path, sizeof(path), "%s", arg);
	else if (have_v2)
		snprintf(path, sizeof(path), "%s/%s", root,
			 arg[0] == '/' ? arg + 1 : arg);
	else
		cpa_die("%s: cgroup '%s' not found, and no cgroup2 hierarchy "
			"is mounted to look in (see /proc/self/mounts)", what,
			arg);
	if (stat(path, &st) < 0)
		cpa_die("%s: cgroup '%s' not found (%s: %s)", what, arg, path,
			strerror(errno));
	if (!S_ISDIR(st.st_mode) || statfs(path, &sfs) < 0 ||
	    (sfs.f_type != CGROUP2_SUPER_MAGIC &&
	     sfs.f_type != CGROUP_SUPER_MAGIC))
		cpa_die("%s: '%s' is not a cgroup directory (cgroup2 is "
			"mounted at %s, v1 controllers under their own mounts)",
			what, arg, have_v2 ? root : "no place");
	if (sfs.f_type == CGROUP_SUPER_MAGIC) {
		int ssid = v1_ssid_of_directory(path);

		if (ssid < 0)
			cpa_die("%s: '%s' is in a cgroup v1 hierarchy without "
				"a controller (such as name=systemd), which "
				"cannot be filtered in the kernel", what, arg);
		add_v1(cfg, ssid, path, what, arg);
		return;
	}
	uint64_t id = cgroup_id_of(path);

	if (!id)
		cpa_die("%s: cannot read the id of cgroup '%s'", what, path);
	cfg->cgroup_ids[cfg->n_cgroup_ids++] = id;
}

/* The text of /proc/PID/cgroup (pid a /proc entry's name) into buf;
 * its length, 0 when the process is gone. */
static size_t read_proc_cgroup(const char *pid, char *buf, size_t cap)
{
	char fn[300];
	size_t got = 0;
	ssize_t k;

	snprintf(fn, sizeof(fn), "/proc/%s/cgroup", pid);
	int fd = open(fn, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (got < cap && (k = read(fd, buf + got, cap - got)) > 0)
		got += (size_t)k;
	close(fd);
	return got;
}

/* A path up to the end of the component that holds the container id:
 * the container's own cgroup, whatever the process made below it. */
static void container_cgroup(const struct cpa_cgroup_line *l, const char *id,
			     char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)l->path_len, l->path);
	char *end = strstr(out, id);

	if (end) {
		end += CPA_CONTAINER_ID_LEN;
		end[strcspn(end, "/")] = 0;
	}
}

/* What /proc says of the container with id prefix: its full id, and the
 * cgroup that names it in v2 or else in a v1 controller's hierarchy. */
struct container_cgroups {
	char full[CPA_CONTAINER_ID_LEN + 1], other[CPA_CONTAINER_ID_LEN + 1];
	char v2[4096], v1[4096];
	int v1_hier, v1_ssid;
};

static void scan_process(const char *text, size_t len, const char *prefix,
			 int want_ssid, struct container_cgroups *c)
{
	struct cpa_cgroup_line l;
	struct cpa_owner o;
	size_t pos = 0, plen = strlen(prefix);
	char id[CPA_CONTAINER_ID_LEN + 1] = "";

	while (cpa_cgroup_line_next(text, len, &pos, &l)) {
		if (!cpa_owner_parse_n(l.path, l.path_len, &o) ||
		    strncmp(o.container, prefix, plen))
			continue;
		if (!id[0])
			memcpy(id, o.container, sizeof(id));
		else if (strcmp(id, o.container))
			continue;	/* one container per process */
		if (!c->full[0])
			memcpy(c->full, id, sizeof(id));
		if (strcmp(c->full, id)) {
			memcpy(c->other, id, sizeof(id));
			return;
		}
		if (l.v2) {
			if (!c->v2[0])
				container_cgroup(&l, id, c->v2, sizeof(c->v2));
			continue;
		}
		int hier = (int)l.hierarchy;
		int ssid = hierarchy_ssid(hier);

		if (ssid < 0 || c->v1[0] ||
		    (want_ssid >= 0 && ssid != want_ssid))
			continue;
		container_cgroup(&l, id, c->v1, sizeof(c->v1));
		c->v1_hier = hier;
		c->v1_ssid = ssid;
	}
}

static void resolve_container(struct capture_config *cfg, const char *prefix)
{
	struct container_cgroups c = { .v1_ssid = -1 };
	char *buf = cpa_malloc(CGROUP_FILE_MAX);
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		cpa_die("--container: cannot read /proc: %s", strerror(errno));
	while (!c.other[0] && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		size_t len = read_proc_cgroup(de->d_name, buf, CGROUP_FILE_MAX);

		scan_process(buf, len, prefix, cfg->cgroup_v1_ssid, &c);
	}
	closedir(d);
	free(buf);
	if (c.other[0])
		cpa_die("--container '%s': ambiguous, matches %.12s and %.12s",
			prefix, c.full, c.other);
	if (!c.full[0])
		cpa_die("--container '%s': no running process is in a "
			"container with that id (searched /proc/*/cgroup)",
			prefix);
	if (c.v2[0]) {
		resolve_cgroup_path(cfg, c.v2, "--container");
		return;
	}
	char dir[8192];

	if (!c.v1[0] || v1_directory(c.v1_ssid, c.v1, dir, sizeof(dir)) < 0)
		cpa_die("--container '%s': container %.12s has no cgroup of "
			"its own in cgroup v2 or in a mounted v1 controller%s, "
			"so it cannot be filtered in the kernel", prefix,
			c.full, cfg->cgroup_v1_ssid >= 0
					? "'s hierarchy filtered already"
					: "");
	add_v1(cfg, c.v1_ssid, dir, "--container", prefix);
}

void capture_resolve_cgroups(struct capture_config *cfg)
{
	size_t n = cfg->n_cgroups + cfg->n_containers + 1;

	cfg->cgroup_ids = cpa_calloc(n, sizeof(*cfg->cgroup_ids));
	cfg->cgroup_v1_ids = cpa_calloc(n, sizeof(*cfg->cgroup_v1_ids));
	cfg->n_cgroup_ids = cfg->n_cgroup_v1_ids = 0;
	cfg->cgroup_v1_ssid = -1;
	for (size_t i = 0; i < cfg->n_cgroups; i++)
		resolve_cgroup_path(cfg, cfg->cgroups[i], "--cgroup");
	for (size_t i = 0; i < cfg->n_containers; i++)
		resolve_container(cfg, cfg->containers[i]);
}
