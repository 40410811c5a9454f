// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "hash.h"
#include "htab.h"
#include "log.h"
#include "cgroups.h"

#define WALK_INTERVAL_NS CPA_NSEC_PER_SEC
#define WALK_DEPTH 32		/* kubepods nest 4 deep; systemd 3 */
/* Paths kept, and their bytes: a container with a delegated subtree can
 * make cgroups at will, so past either bound new ones go unnamed. */
#define MAX_CGROUPS (1u << 16)
#define MAX_PATH_BYTES (16u << 20)

struct cg {
	uint64_t id;
	char *path;
};

struct cgroups {
	char *root;		/* NULL: no cgroup2 mount */
	struct cg *e;		/* e[1..n-1] */
	size_t n, cap;
	struct cpa_htab index;
	uint64_t last_walk_ns;
	bool walked;
	uint64_t walks;
	size_t path_bytes;
};

static char *find_cgroup2_mount(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return NULL;
	char *line = NULL, *found = NULL;
	size_t cap = 0;
	while (!found && getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE ... */
		char mnt[4096], type[64];
		const char *dash = strstr(line, " - ");
		if (dash && sscanf(dash, " - %63s", type) == 1 &&
		    !strcmp(type, "cgroup2") &&
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1)
			found = cpa_strdup(mnt);	/* octal escapes: rare */
	}
	free(line);
	fclose(f);
	return found;
}

static struct cg *lookup(struct cgroups *c, uint64_t id,
			 struct cpa_htab_probe *pr)
{
	for (uint32_t i = cpa_htab_first(&c->index, cpa_hash_u64(id), pr); i;
	     i = cpa_htab_next(&c->index, pr))
		if (c->e[i].id == id)
			return &c->e[i];
	return NULL;
}

static void remember(struct cgroups *c, uint64_t id, const char *path)
{
	struct cpa_htab_probe pr;
	struct cg *old = lookup(c, id, &pr);
	if (old) {
		/* ids are not reused while the cgroup lives; a rename
		 * (rare) takes the new name */
		if (strcmp(old->path, path)) {
			c->path_bytes += strlen(path);
			c->path_bytes -= strlen(old->path);
			free(old->path);
			old->path = cpa_strdup(path);
		}
		return;
	}
	size_t len = strlen(path) + 1;
	if (c->n >= MAX_CGROUPS || c->path_bytes + len > MAX_PATH_BYTES)
		return;
	c->path_bytes += len;
	CPA_GROW(c->e, c->cap, c->n + 1);
	c->e[c->n] = (struct cg){id, cpa_strdup(path)};
	cpa_htab_add(&c->index, &pr, (uint32_t)c->n);
	c->n++;
}

/* fd is the cgroup at path (path "" for the root); closes it. */
static void walk(struct cgroups *c, int fd, char *path, size_t len,
		 unsigned depth)
{
	struct stat st;
	if (fstat(fd, &st) == 0)
		remember(c, (uint64_t)st.st_ino, len ? path : "/");
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *de;
	while (depth < WALK_DEPTH && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		size_t k = strlen(de->d_name);
		if (len + 1 + k >= 4096)
			continue;
		int sub = openat(dirfd(d), de->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				 O_CLOEXEC);
		if (sub < 0)
			continue;	/* removed meanwhile */
		path[len] = '/';
		memcpy(path + len + 1, de->d_name, k + 1);
		walk(c, sub, path, len + 1 + k, depth + 1);
		path[len] = 0;
	}
	closedir(d);
}

struct cgroups *cgroups_new(const char *root)
{
	struct cgroups *c = cpa_calloc(1, sizeof(*c));
	c->root = root ? cpa_strdup(root) : find_cgroup2_mount();
	c->n = 1;	/* htab ids are never 0 */
	CPA_GROW(c->e, c->cap, 1);
	cpa_htab_init(&c->index, 256);
	return c;
}

const char *cgroups_path(struct cgroups *c, uint64_t id, uint64_t now_ns)
{
	struct cpa_htab_probe pr;
	struct cg *g = lookup(c, id, &pr);
	if (g)
		return g->path;
	if (!c->root || !id ||
	    (c->walked && now_ns - c->last_walk_ns < WALK_INTERVAL_NS))
		return NULL;
	c->walked = true;
	c->last_walk_ns = now_ns;
	c->walks++;
	int fd = open(c->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		char path[4096] = "";
		walk(c, fd, path, 0, 0);
	}
	g = lookup(c, id, &pr);
	return g ? g->path : NULL;
}

void cgroups_stats(const struct cgroups *c, uint64_t *walks,
		   uint64_t *known)
{
	*walks = c->walks;
	*known = c->n - 1;
}

void cgroups_free(struct cgroups *c)
{
	if (!c)
		return;
	for (size_t i = 1; i < c->n; i++)
		free(c->e[i].path);
	free(c->e);
	cpa_htab_free(&c->index);
	free(c->root);
	free(c);
}
