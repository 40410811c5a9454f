/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Facts about a process read from /proc: when it started (to tell one
 * process from an earlier one that had the same pid), the lines of
 * /proc/PID/status that cpa acts on, and its memory mappings
 * (/proc/PID/maps). The one reader of each file.
 */
#ifndef CPA_PROCFS_H
#define CPA_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * When the process started, in CLOCK_REALTIME nanoseconds (the clock of
 * file times), to the kernel's clock tick; 0 when it cannot be read (the
 * process has exited). The kernel counts a start from boot, so this is
 * rebased on the clocks' difference now.
 */
uint64_t cpa_proc_start_realtime_ns(uint32_t pid);

#define CPA_PROC_MAX_GROUPS 64

/* What cpa reads of /proc/PID/status. */
struct cpa_proc_status {
	uint32_t nspid;		/* the last NSpid: its pid in its namespace */
	uint64_t sigcgt;	/* signals it catches */
	uint32_t fsuid, fsgid;	/* the ids its file accesses are judged by */
	unsigned ngroups;	/* supplementary groups */
	uint32_t groups[CPA_PROC_MAX_GROUPS];
	bool groups_cut;	/* it has more than fit */
	bool have_ids;		/* Uid and Gid were there (not a zombie) */
};

/* Reads it; false when the process is gone. */
bool cpa_proc_status(uint32_t pid, struct cpa_proc_status *st);

/*
 * /proc/PID/maps, a mapping at a time:
 *
 *	struct cpa_maps it;
 *	struct cpa_map m;
 *	if (cpa_maps_open(&it, pid) == 0) {
 *		while (cpa_maps_next(&it, &m))
 *			... m.start, m.path ...
 *		cpa_maps_close(&it);
 *	}
 *
 * A line is "START-END PERMS PGOFF MAJOR:MINOR INODE [PATH]"; one that is
 * not is passed over. m.path is "" for memory without a name, and lives
 * until the next call.
 */
struct cpa_map {
	uint64_t start, end, pgoff, inode;
	uint32_t dev_major, dev_minor;
	char perms[5];		/* "r-xp": read, write, exec, p(rivate)/s(hared) */
	const char *path;	/* the rest of the line, "[vdso]", or "" */
	size_t path_len;
};

struct cpa_maps {
	FILE *f;
	char *line;
	size_t cap;
};

/* 0, or -errno. pid 0 is this process (/proc/self/maps). */
int cpa_maps_open(struct cpa_maps *it, uint32_t pid);
/* true with the next mapping in *m, false at the end */
bool cpa_maps_next(struct cpa_maps *it, struct cpa_map *m);
void cpa_maps_close(struct cpa_maps *it);
/* One line, without its newline, into *m (which points into it); 0, or
 * -1 when it is not a maps line. */
int cpa_maps_parse(const char *line, struct cpa_map *m);

static inline bool cpa_map_exec(const struct cpa_map *m)
{
	return m->perms[2] == 'x';
}

#endif
