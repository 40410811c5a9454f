/* SPDX-License-Identifier: MIT */
/* A walk of /proc: each process's executable and owner, as cpa-capture's
 * --container takes them (lib/format/owner.c). */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "owner.h"
#include "targets.h"

bool targets_needed(const struct job_spec *s)
{
	return job_modes[s->mode].how == HOW_JAVA || s->binary_match_path[0];
}

static bool in_container(const char *pid, const char *cid)
{
	char path[64], text[8192];
	struct cpa_cgroup_line line;
	struct cpa_owner o;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/cgroup", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, text, sizeof(text));
	close(fd);
	if (n <= 0 || !cpa_owner_of_process(text, (size_t)n, &o, &line))
		return false;
	return !strncmp(o.container, cid, strlen(cid));
}

static bool runs(const char *pid, const struct job_spec *s)
{
	char path[64], exe[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = 0;
	if (s->binary_match_path[0])
		return !strcmp(exe, s->binary_match_path);
	base = strrchr(exe, '/');
	return !strcmp(base ? base + 1 : exe, "java");
}

size_t targets_resolve(const struct job_spec *s, char *out, size_t outlen,
		       char *why, size_t whylen)
{
	size_t n = 0, used = 0;
	struct dirent *e;
	DIR *d;

	out[0] = 0;
	snprintf(why, whylen, "no process %s%s%s%s runs %s",
		 s->scope == SCOPE_HOST ? "on the host" :
		 s->scope == SCOPE_PID ? "of the pid" : "in container ",
		 s->scope == SCOPE_CONTAINER ? s->container_id : "", "", "",
		 s->binary_match_path[0] ? s->binary_match_path : "a JVM (java)");
	if (s->scope == SCOPE_PID) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%u", s->pid);
		if (!runs(pid, s))
			return 0;
		snprintf(out, outlen, "%s", pid);
		return 1;
	}
	d = opendir("/proc");
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);

		if (!isdigit((unsigned char)e->d_name[0]) || !runs(e->d_name, s))
			continue;
		if (s->scope == SCOPE_CONTAINER &&
		    !in_container(e->d_name, s->container_id))
			continue;
		if (used + len + 2 > outlen)
			break;	/* the rest would not fit an option */
		used += (size_t)snprintf(out + used, outlen - used, "%s%s",
					 n ? "," : "", e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

bool targets_container_exists(const char *cid)
{
	struct dirent *e;
	bool found = false;
	DIR *d = opendir("/proc");

	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		found = isdigit((unsigned char)e->d_name[0]) &&
			in_container(e->d_name, cid);
	closedir(d);
	return found;
}
