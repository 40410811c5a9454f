// SPDX-License-Identifier: MIT
/* Process facts from /proc (see procfs.h). */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"

#define NS_PER_SEC 1000000000ull

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

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
	uint64_t since_boot = ticks / (uint64_t)hz * NS_PER_SEC +
			      ticks % (uint64_t)hz * NS_PER_SEC / (uint64_t)hz;
	uint64_t boot_now = clock_ns(CLOCK_BOOTTIME);
	uint64_t real_now = clock_ns(CLOCK_REALTIME);
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
