/* SPDX-License-Identifier: MIT */
/*
 * What was already running when capture started: one TASK record
 * (CPA_TASK_SEEN) per process and one MMAP record per executable
 * mapping, read from /proc, so cpa-unwind has every process's mappings
 * even if the process exits before cpa-unwind looks. Each mapped file's
 * GNU build id is read once (files are shared by many processes) so the
 * records carry it as the kernel's MMAP2 records do.
 */
#include <config.h>

#include <ctype.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpa-capture.h"
#include "buf.h"
#include "log.h"
#include "procfs.h"
#include "safeopen.h"

/* "pid (comm) S ppid ...": comm may hold spaces and parentheses, so it
 * runs to the last ')'. */
static int read_stat(uint32_t pid, char comm[CPA_COMM_LEN], uint32_t *ppid)
{
	char fn[64], buf[1024];
	FILE *f;
	size_t n;
	char *open, *close;

	snprintf(fn, sizeof(fn), "/proc/%u/stat", pid);
	f = fopen(fn, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	open = strchr(buf, '(');
	close = strrchr(buf, ')');
	if (!open || !close || close < open)
		return -1;
	memset(comm, 0, CPA_COMM_LEN);
	n = (size_t)(close - open - 1);
	memcpy(comm, open + 1, n < CPA_COMM_LEN - 1 ? n : CPA_COMM_LEN - 1);
	if (sscanf(close + 1, " %*c %" SCNu32, ppid) != 1)
		*ppid = 0;
	return 0;
}

int procscan_comm(uint32_t pid, uint32_t tid, char comm[CPA_COMM_LEN])
{
	char fn[64];
	FILE *f;
	size_t n;

	snprintf(fn, sizeof(fn), "/proc/%u/task/%u/comm", pid, tid);
	f = fopen(fn, "r");
	if (!f)
		return -1;
	memset(comm, 0, CPA_COMM_LEN);
	n = fread(comm, 1, CPA_COMM_LEN - 1, f);
	fclose(f);
	if (n && comm[n - 1] == '\n')
		comm[n - 1] = 0;
	return 0;
}

/* Build ids already read, by device and inode. */
struct known_file {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint8_t len;
	uint8_t id[CPA_BUILD_ID_MAX];
};
static struct known_file *known;
static size_t n_known, known_cap;

/* The NT_GNU_BUILD_ID note of an ELF64 file, from its PT_NOTE segments.
 * Returns the id's length, 0 when there is none or the file is not ELF64
 * of this machine's byte order. */
static uint8_t read_build_id(int fd, uint8_t id[CPA_BUILD_ID_MAX])
{
	Elf64_Ehdr eh;
	uint8_t buf[4096];

	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 128)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		size_t off = 0, len;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return 0;
		if (ph.p_type != PT_NOTE || ph.p_filesz > sizeof(buf))
			continue;
		len = (size_t)ph.p_filesz;
		if (pread(fd, buf, len, (off_t)ph.p_offset) != (ssize_t)len)
			continue;
		/* notes: header, name and descriptor, each 4-byte aligned */
		while (off + sizeof(Elf64_Nhdr) <= len) {
			Elf64_Nhdr nh;
			size_t name_at, desc_at;

			memcpy(&nh, buf + off, sizeof(nh));
			name_at = off + sizeof(nh);
			desc_at = name_at + ((nh.n_namesz + 3u) & ~3u);
			if (nh.n_namesz > len || nh.n_descsz > len ||
			    desc_at + nh.n_descsz > len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(buf + name_at, "GNU", 4) && nh.n_descsz &&
			    nh.n_descsz <= CPA_BUILD_ID_MAX) {
				memcpy(id, buf + desc_at, nh.n_descsz);
				return (uint8_t)nh.n_descsz;
			}
			off = desc_at + ((nh.n_descsz + 3u) & ~3u);
		}
	}
	return 0;
}

/* Looks the file up by device and inode, reading it through the
 * process's own view (/proc/PID/map_files) the first time. */
static void find_build_id(struct cpa_mmap *m, const struct cpa_map *map)
{
	char fn[96];
	struct known_file *k;
	int fd;

	for (size_t i = 0; i < n_known; i++) {
		if (known[i].inode == m->inode &&
		    known[i].dev_major == map->dev_major &&
		    known[i].dev_minor == map->dev_minor) {
			m->build_id_len = known[i].len;
			memcpy(m->build_id, known[i].id, known[i].len);
			return;
		}
	}
	CPA_GROW(known, known_cap, n_known + 1);
	k = &known[n_known++];
	memset(k, 0, sizeof(*k));
	k->dev_major = map->dev_major;
	k->dev_minor = map->dev_minor;
	k->inode = m->inode;
	snprintf(fn, sizeof(fn), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64,
		 m->pid, map->start, map->end);
	/* the mapping's own file, but the process chose it: a device is
	 * not read (lib/base/safeopen.h) */
	const struct safeopen_rules mapped = { .ino = m->inode };
	struct stat st;
	fd = safeopen_host(fn, &mapped, &st);
	if (fd >= 0) {
		k->len = read_build_id(fd, k->id);
		close(fd);
	}
	m->build_id_len = k->len;
	memcpy(m->build_id, k->id, k->len);
}

static void scan_maps(uint32_t pid, uint64_t when)
{
	struct cpa_maps it;
	struct cpa_map map;

	if (cpa_maps_open(&it, pid) < 0)
		return;
	while (cpa_maps_next(&it, &map)) {
		struct cpa_mmap m;
		/* as perf names JIT code */
		const char *path = *map.path ? map.path : "//anon";

		if (!cpa_map_exec(&map))
			continue;
		memset(&m, 0, sizeof(m));
		m.time_ns = when;
		m.pid = pid;
		m.start = map.start;
		m.len = map.end - map.start;
		m.pgoff = map.pgoff;
		m.inode = map.inode;
		m.prot = (map.perms[0] == 'r' ? PROT_READ : 0) |
			 (map.perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
		m.flags = map.perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		m.path_len = (uint16_t)strnlen(path, CPA_PATH_MAX);
		m.path = path;
		if (m.inode)
			find_build_id(&m, &map);
		output_queue_mmap(&m);
		capture_addons_mapping(&m, true);
	}
	cpa_maps_close(&it);
}

void procscan_emit(const struct capture_config *cfg, uint64_t when)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d) {
		cpa_warn("cannot read /proc: running processes not recorded");
		return;
	}
	while ((de = readdir(d))) {
		struct cpa_task t;
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end || !pid)
			continue;
		if (!capture_process_selected(cfg, (uint32_t)pid))
			continue;
		memset(&t, 0, sizeof(t));
		if (read_stat((uint32_t)pid, t.comm, &t.ppid) < 0)
			continue;	/* exited meanwhile */
		t.time_ns = when;
		t.pid = t.tid = (uint32_t)pid;
		t.event = CPA_TASK_SEEN;
		output_queue_task(&t);
		scan_maps((uint32_t)pid, when);
	}
	closedir(d);
	free(known);
	known = NULL;
	n_known = known_cap = 0;
}
