/* SPDX-License-Identifier: MIT */
/*
 * Per-process state: executable mappings (from the stream's MMAP records,
 * with /proc/PID/maps as the fallback), the recorded env label, the owner
 * from a cgroup v1 hierarchy and the JIT symbol map. Created on first sight, freed on the process's exit record,
 * and bounded in number (least recently used first) for streams that
 * carry no exit records.
 */
#ifndef CPA_UNWIND_PROC_H
#define CPA_UNWIND_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include "budget.h"
#include "elfcache.h"
#include "jvm.h"
#include "perfmap.h"
#include "pycode.h"
#include "stream.h"

enum map_kind {
	MAPPING_FILE = 0,	/* a file: ELF symbols and CFI */
	MAPPING_VDSO,
	MAPPING_ANON,	/* anonymous executable memory: JIT code */
	MAPPING_OTHER,	/* [vsyscall], [uprobes]...: named, never unwound */
};

enum map_state { MAPPING_UNRESOLVED = 0, MAPPING_RESOLVED, MAPPING_FAILED };

struct mapping {
	uint64_t start, end, pgoff;
	uint64_t inode;		/* of the file, 0 when unknown */
	struct elf_obj *obj;	/* referenced once resolved */
	struct elf_load *load;	/* while the loader thread works on it */
	char *path;
	const char *base;	/* basename of path, for module+offset frames */
	uint8_t kind, state;
	uint8_t build_id_len;
	uint8_t build_id[CPA_BUILD_ID_MAX];
};

/* A root frame's return address and the frames beyond it, from a whole
 * DWARF chain (roottail.c). */
#define ROOT_TAIL_MAX 4
#define PROC_ROOT_TAILS 4
struct root_tail {
	uint64_t at;
	uint8_t n;
	uint64_t ips[ROOT_TAIL_MAX];
};

struct proc {
	uint32_t pid;
	struct mapping *maps;	/* sorted by start, disjoint */
	uint32_t nmaps, capmaps;
	bool have_records;	/* mappings came from MMAP records */
	bool proc_read;		/* /proc/PID/maps was read at least once */
	uint64_t maps_read_ns;	/* when /proc/PID/maps was last read */
	bool env_read;
	char *env;		/* --env value, NULL when none */
	bool owner_read;
	/* the v1 cgroup path that names the process's container or pod,
	 * when its v2 path names none; NULL otherwise */
	char *owner_path;
	struct perfmap jit;
	struct jvm_proc jvm;	/* asking a JVM for its perf map */
	struct pycodes *py;	/* Python code objects read (python.c) */
	bool v8_checked;	/* its V8 flags were looked at (node.c) */
	bool v8_exe_checked;	/* whether it is node was looked at */
	uint64_t last_used;	/* sample counter, for LRU bounding */
	struct root_tail tails[PROC_ROOT_TAILS];	/* roottail.c */
	uint8_t n_tails;
	struct proc *hnext;
};

struct proctab;

/* max_cache: --max-cache, which the processes' own caches share with
 * the ELF objects (budget.h). */
struct proctab *proctab_new(struct elfcache *cache, uint32_t max_procs,
			    uint64_t max_cache);
/* The budget of the processes' caches. */
struct budget *proctab_budget(struct proctab *t);
void proctab_free(struct proctab *t);
/* The state of pid, created empty when new. */
struct proc *proctab_get(struct proctab *t, uint32_t pid);
struct proc *proctab_find(struct proctab *t, uint32_t pid);
/* Forgets pid and releases its objects. */
void proctab_remove(struct proctab *t, uint32_t pid);
uint32_t proctab_count(const struct proctab *t);
/* Drops least recently used processes beyond the limit, and the caches
 * of least recently used processes while they hold more than the
 * budget's total. */
void proctab_trim(struct proctab *t);
/* Frees p's own caches (perf map, Python codes): they are read again
 * when needed. */
void proc_drop_caches(struct proc *p);

/* Adds a mapping, replacing what it overlaps (as mmap does). */
void proc_add_mapping(struct proctab *t, struct proc *p, uint64_t start,
		      uint64_t end, uint64_t pgoff, const char *path,
		      size_t path_len, uint64_t inode, const uint8_t *build_id,
		      uint8_t build_id_len);
/* Drops every mapping (exec). */
void proc_clear_mappings(struct proctab *t, struct proc *p);
/*
 * (Re)reads /proc/PID/maps. Rate-limited to once per second per process
 * unless force. Returns 0, -1 when the process is gone.
 */
int proc_read_maps(struct proctab *t, struct proc *p, uint64_t now_ns,
		   bool force);

static inline struct mapping *proc_find_mapping(const struct proc *p,
						uint64_t addr)
{
	uint32_t lo = 0, hi = p->nmaps;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

/* Where the file of mapping m of p can be read from. */
static inline struct elf_src mapping_src(const struct proc *p,
					 const struct mapping *m)
{
	return (struct elf_src){
		.pid = p->pid, .start = m->start, .end = m->end,
		.path = m->path, .inode = m->inode, .build_id = m->build_id,
		.build_id_len = m->build_id_len,
	};
}

/*
 * The loaded object of a file or vdso mapping, resolving it on first use
 * and reloading it if the cache unloaded it; NULL when there is none.
 */
struct elf_obj *proc_mapping_obj(struct proctab *t, struct proc *p,
				 struct mapping *m);

/* Reads the first of the comma-separated keys from /proc/PID/environ
 * into p->env, once. */
void proc_read_env(struct proc *p, const char *keys);
/*
 * Reads /proc/PID/cgroup once (again after an exec) and sets
 * p->owner_path when a v1 line names the owner and the v2 one does not
 * (lib/format/owner.h decides): the sample's cgroup id is the v2 one, so on v1
 * and hybrid hosts a container of the cgroupfs driver is named only
 * here.
 */
void proc_read_owner(struct proc *p);
/* Forgets what was read from /proc for p (exec: another program). */
void proc_forget_read(struct proc *p);
/* /proc/PID/NAME, at most max bytes, NUL-terminated (its length in
 * *len), malloc'd; NULL when it cannot be read. */
char *proc_read_file(uint32_t pid, const char *name, size_t max,
		     size_t *len);
/* The value of key (klen bytes) in an environ block of len bytes, or
 * NULL; its length in *vlen. */
const char *proc_environ_value(const char *env, size_t len, const char *key,
			       size_t klen, size_t *vlen);

#endif
