// SPDX-License-Identifier: MIT
/* Process facts from /proc (see procfs.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "procfs.h"

uint64_t cpa_proc_start_realtime_ns(uint32_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields resume after the
	 * last ')', with state as field 3 and starttime as field 22 */
	const char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long long ticks;
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
		   "%*u %*u %*d %*d %*d %*d %*d %*d %llu", &ticks) != 1)
		return 0;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		return 0;
	uint64_t since_boot = ticks / (uint64_t)hz * CPA_NSEC_PER_SEC +
			      ticks % (uint64_t)hz * CPA_NSEC_PER_SEC / (uint64_t)hz;
	uint64_t boot_now = cpa_clock_ns(CLOCK_BOOTTIME);
	uint64_t real_now = cpa_clock_ns(CLOCK_REALTIME);
	if (since_boot > boot_now || boot_now - since_boot > real_now)
		return 0;
	return real_now - (boot_now - since_boot);
}

/* "Uid:\tR\tE\tS\tFS": the fourth number, the one files are judged by */
static bool fourth_id(const char *s, uint32_t *out)
{
	unsigned long v[4];
	if (sscanf(s, "%lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4)
		return false;
	*out = (uint32_t)v[3];
	return true;
}

bool cpa_proc_status(uint32_t pid, struct cpa_proc_status *st)
{
	char path[64], line[1024];
	bool uid = false, gid = false;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	memset(st, 0, sizeof(*st));
	st->nspid = pid;
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *s, *e;
		if (!strncmp(line, "SigCgt:", 7)) {
			st->sigcgt = strtoull(line + 7, NULL, 16);
		} else if (!strncmp(line, "NSpid:", 6)) {
			for (s = line + 6;; s = e) {
				unsigned long v = strtoul(s, &e, 10);
				if (e == s)
					break;
				st->nspid = (uint32_t)v;
			}
		} else if (!strncmp(line, "Uid:", 4)) {
			uid = fourth_id(line + 4, &st->fsuid);
		} else if (!strncmp(line, "Gid:", 4)) {
			gid = fourth_id(line + 4, &st->fsgid);
		} else if (!strncmp(line, "Groups:", 7)) {
			for (s = line + 7;; s = e) {
				unsigned long g = strtoul(s, &e, 10);
				if (e == s)
					break;
				if (st->ngroups < CPA_PROC_MAX_GROUPS)
					st->groups[st->ngroups++] = (uint32_t)g;
				else
					st->groups_cut = true;
			}
		}
	}
	fclose(f);
	st->have_ids = uid && gid;
	return true;
}

/* A hex or decimal field and the separator after it; NULL when absent. */
static const char *field(const char *p, int base, char sep, uint64_t *v)
{
	char *end;

	if (!(base == 16 ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)))
		return NULL;
	errno = 0;
	*v = strtoull(p, &end, base);
	if (errno || *end != sep)
		return NULL;
	return end + 1;
}

int cpa_maps_parse(const char *line, struct cpa_map *m)
{
	const char *p = line;
	uint64_t major, minor;

	if (!(p = field(p, 16, '-', &m->start)) ||
	    !(p = field(p, 16, ' ', &m->end)))
		return -1;
	for (int i = 0; i < 4; i++, p++) {
		if (!*p || *p == ' ')
			return -1;
		m->perms[i] = *p;
	}
	m->perms[4] = '\0';
	if (*p++ != ' ' || !(p = field(p, 16, ' ', &m->pgoff)) ||
	    !(p = field(p, 16, ':', &major)) || !(p = field(p, 16, ' ', &minor)))
		return -1;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	/* the inode ends the line when there is no name */
	char *end;
	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	m->inode = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' '))
		return -1;
	p = end;
	while (*p == ' ')
		p++;
	m->path = p;
	m->path_len = strlen(p);
	return m->end >= m->start ? 0 : -1;
}

int cpa_maps_open(struct cpa_maps *it, uint32_t pid)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	memset(it, 0, sizeof(*it));
	it->f = fopen(path, "re");
	return it->f ? 0 : -errno;
}

bool cpa_maps_next(struct cpa_maps *it, struct cpa_map *m)
{
	ssize_t len;

	while ((len = getline(&it->line, &it->cap, it->f)) > 0) {
		if (it->line[len - 1] == '\n')
			it->line[--len] = '\0';
		if (cpa_maps_parse(it->line, m) == 0)
			return true;
	}
	return false;
}

void cpa_maps_close(struct cpa_maps *it)
{
	if (it->f)
		fclose(it->f);
	free(it->line);
	memset(it, 0, sizeof(*it));
}
