// SPDX-License-Identifier: MIT
/* Per-process mappings, env labels and their lifetime. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "log.h"
#include "owner.h"
#include "proc.h"
#include "procfs.h"

#define NBUCKETS 1024
#define ENVIRON_MAX (1u << 20)	/* bytes of /proc/PID/environ read */
#define CGROUP_FILE_MAX (64u << 10)	/* of /proc/PID/cgroup */
/* Executable mappings kept per process: real processes have hundreds;
 * the bound keeps a hostile stream from making inserts quadratic. */
#define MAX_MAPPINGS 16384

struct proctab {
	struct proc *buckets[NBUCKETS];
	struct elfcache *cache;
	uint32_t count, max;
	uint64_t clock;		/* lookups, for least-recently-used order */
	struct budget budget;	/* of the processes' own caches */
};

struct proctab *proctab_new(struct elfcache *cache, uint32_t max_procs,
			    uint64_t max_cache)
{
	struct proctab *t = cpa_calloc(1, sizeof(*t));
	t->cache = cache;
	t->max = max_procs;
	budget_init(&t->budget, max_cache);
	if (cache)
		elfcache_share(cache, &t->budget.used);
	return t;
}

struct budget *proctab_budget(struct proctab *t)
{
	return &t->budget;
}

void proc_drop_caches(struct proc *p)
{
	jvm_code_reset(p->jvm.code);
	perfmap_free(&p->jit);
	pycodes_free(p->py);
	p->py = NULL;
}

static void release_mapping(struct proctab *t, struct mapping *m)
{
	if (m->obj && m->kind == MAPPING_FILE)
		elfcache_put(t->cache, m->obj);
	elfcache_abandon(t->cache, m->load);
	m->load = NULL;
	free(m->path);
	m->obj = NULL;
	m->path = NULL;
}

static void proc_free(struct proctab *t, struct proc *p)
{
	proc_clear_mappings(t, p);
	free(p->maps);
	free(p->env);
	free(p->owner_path);
	perfmap_free(&p->jit);
	jvm_proc_free(&p->jvm);
	pycodes_free(p->py);
	free(p);
}

void proctab_free(struct proctab *t)
{
	if (!t)
		return;
	for (unsigned b = 0; b < NBUCKETS; b++) {
		while (t->buckets[b]) {
			struct proc *p = t->buckets[b];
			t->buckets[b] = p->hnext;
			proc_free(t, p);
		}
	}
	free(t);
}

struct proc *proctab_find(struct proctab *t, uint32_t pid)
{
	for (struct proc *p = t->buckets[pid % NBUCKETS]; p; p = p->hnext)
		if (p->pid == pid) {
			p->last_used = ++t->clock;
			return p;
		}
	return NULL;
}

struct proc *proctab_get(struct proctab *t, uint32_t pid)
{
	struct proc *p = proctab_find(t, pid);
	if (p)
		return p;
	p = cpa_calloc(1, sizeof(*p));
	p->pid = pid;
	p->jit.budget = &t->budget;
	p->last_used = ++t->clock;
	p->hnext = t->buckets[pid % NBUCKETS];
	t->buckets[pid % NBUCKETS] = p;
	t->count++;
	return p;
}

void proctab_remove(struct proctab *t, uint32_t pid)
{
	for (struct proc **pp = &t->buckets[pid % NBUCKETS]; *pp;
	     pp = &(*pp)->hnext) {
		if ((*pp)->pid == pid) {
			struct proc *p = *pp;
			*pp = p->hnext;
			proc_free(t, p);
			t->count--;
			return;
		}
	}
}

uint32_t proctab_count(const struct proctab *t)
{
	return t->count;
}

/* The least recently used process whose caches hold anything. */
static struct proc *oldest_caching(struct proctab *t)
{
	struct proc *old = NULL;
	for (unsigned b = 0; b < NBUCKETS; b++)
		for (struct proc *p = t->buckets[b]; p; p = p->hnext)
			if ((pycodes_bytes(p->py) || perfmap_bytes(&p->jit) ||
			     (p->jvm.code && p->jvm.code->bytes)) &&
			    (!old || p->last_used < old->last_used))
				old = p;
	return old;
}

void proctab_trim(struct proctab *t)
{
	/* Rare: each process holds at most budget.per_proc of a kind, so
	 * only many of them together pass the total. */
	while (t->budget.used > t->budget.total) {
		struct proc *old = oldest_caching(t);
		if (!old)
			break;
		proc_drop_caches(old);
		t->budget.dropped++;
	}
	/* Rare (only streams without exit records reach the limit), so a
	 * scan for the oldest is cheaper than keeping a list per lookup. */
	while (t->count > t->max) {
		struct proc *old = NULL;
		for (unsigned b = 0; b < NBUCKETS; b++)
			for (struct proc *p = t->buckets[b]; p; p = p->hnext)
				if (!old || p->last_used < old->last_used)
					old = p;
		if (!old)
			break;
		proctab_remove(t, old->pid);
	}
}

/* ---- mappings ---------------------------------------------------------- */

static enum map_kind kind_of(const char *path)
{
	if (!path[0] || !strncmp(path, "[anon", 5) || !strncmp(path, "//anon", 6) ||
	    !strncmp(path, "/memfd:", 7))
		return MAPPING_ANON;
	if (!strcmp(path, "[vdso]"))
		return MAPPING_VDSO;
	if (path[0] == '[')
		return MAPPING_OTHER;
	return MAPPING_FILE;
}

void proc_clear_mappings(struct proctab *t, struct proc *p)
{
	for (uint32_t i = 0; i < p->nmaps; i++)
		release_mapping(t, &p->maps[i]);
	p->nmaps = 0;
}

static void remove_range(struct proctab *t, struct proc *p, uint64_t start,
			 uint64_t end)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < p->nmaps; i++) {
		struct mapping *m = &p->maps[i];
		if (m->end <= start || m->start >= end) {
			p->maps[k++] = *m;
			continue;
		}
		/* Keep the part outside [start, end) when only one side
		 * overlaps; a mapping split in two keeps its lower part. */
		if (m->start < start) {
			m->end = start;
			p->maps[k++] = *m;
		} else if (m->end > end) {
			m->pgoff += end - m->start;
			m->start = end;
			p->maps[k++] = *m;
		} else {
			release_mapping(t, m);
		}
	}
	p->nmaps = k;
}

/* A new path for m, "(deleted)" dropped: the kernel's note, not part of
 * the name. */
static void set_path(struct mapping *m, const char *path, size_t path_len)
{
	m->path = cpa_strndup(path, path_len);
	size_t n = strlen(m->path);
	if (n > 10 && !strcmp(m->path + n - 10, " (deleted)"))
		m->path[n - 10] = '\0';
	const char *slash = strrchr(m->path, '/');
	m->base = slash ? slash + 1 : m->path;
}

static void rename_mapping(struct mapping *m, const char *name)
{
	free(m->path);
	set_path(m, name, strlen(name));
}

void proc_add_mapping(struct proctab *t, struct proc *p, uint64_t start,
		      uint64_t end, uint64_t pgoff, const char *path,
		      size_t path_len, uint64_t inode, const uint8_t *build_id,
		      uint8_t build_id_len)
{
	if (end <= start)
		return;
	remove_range(t, p, start, end);
	if (p->nmaps >= MAX_MAPPINGS)
		return;
	CPA_GROW(p->maps, p->capmaps, (size_t)p->nmaps + 1);
	uint32_t i = p->nmaps;
	while (i > 0 && p->maps[i - 1].start > start) {
		p->maps[i] = p->maps[i - 1];
		i--;
	}
	struct mapping *m = &p->maps[i];
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->pgoff = pgoff;
	m->inode = inode;
	set_path(m, path, path_len);
	m->kind = (uint8_t)kind_of(m->path);
	if (build_id_len > CPA_BUILD_ID_MAX)
		build_id_len = CPA_BUILD_ID_MAX;
	m->build_id_len = build_id_len;
	if (build_id_len)
		memcpy(m->build_id, build_id, build_id_len);
	p->nmaps++;
}

int proc_read_maps(struct proctab *t, struct proc *p, uint64_t now_ns,
		   bool force)
{
	if (p->proc_read && !force && now_ns - p->maps_read_ns < CPA_NSEC_PER_SEC)
		return 0;
	p->proc_read = true;
	p->maps_read_ns = now_ns;
	struct cpa_maps it;
	struct cpa_map m;
	if (cpa_maps_open(&it, p->pid) < 0)
		return -1;
	while (cpa_maps_next(&it, &m)) {
		if (!cpa_map_exec(&m))
			continue;
		struct mapping *old = proc_find_mapping(p, m.start);
		/* Keep a mapping already known with the same extent: it may
		 * hold a resolved object. Anonymous memory holds none, and
		 * takes the name the process has given it since. */
		if (old && old->start == m.start && old->end == m.end &&
		    old->pgoff == m.pgoff) {
			if (old->kind == MAPPING_ANON && m.path[0] == '[' &&
			    strcmp(old->path, m.path))
				rename_mapping(old, m.path);
			continue;
		}
		proc_add_mapping(t, p, m.start, m.end, m.pgoff, m.path,
				 m.path_len, m.inode, NULL, 0);
	}
	cpa_maps_close(&it);
	return 0;
}

struct elf_obj *proc_mapping_obj(struct proctab *t, struct proc *p,
				 struct mapping *m)
{
	/* Unloaded by --max-cache: found and loaded again as a new object
	 * is, off the sample path. */
	if (m->state == MAPPING_RESOLVED && m->kind == MAPPING_FILE &&
	    !m->obj->loaded) {
		elfcache_put(t->cache, m->obj);
		m->obj = NULL;
		m->state = MAPPING_UNRESOLVED;
	}
	if (m->state == MAPPING_RESOLVED)
		return m->obj;
	if (m->state == MAPPING_FAILED)
		return NULL;
	if (m->kind == MAPPING_VDSO) {
		m->obj = elfcache_vdso(t->cache);
	} else if (m->kind == MAPPING_FILE) {
		/* Loaded off the sample path: until it is, the mapping's
		 * frames are written module+offset. */
		if (!m->load) {
			struct elf_src src = mapping_src(p, m);
			m->load = elfcache_request(t->cache, &src, &m->obj);
		}
		if (m->load) {
			if (!elfcache_collect(t->cache, m->load, &m->obj))
				return NULL;
			m->load = NULL;
		}
	}
	m->state = m->obj ? MAPPING_RESOLVED : MAPPING_FAILED;
	return m->obj;
}

char *proc_read_file(uint32_t pid, const char *name, size_t max,
		     size_t *len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/%s", pid, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = cpa_malloc(max + 1);
	size_t got = 0;
	ssize_t k;
	while (got < max && (k = read(fd, buf + got, max - got)) > 0)
		got += (size_t)k;
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

const char *proc_environ_value(const char *env, size_t len, const char *key,
			       size_t klen, size_t *vlen)
{
	for (size_t off = 0; off < len;) {
		const char *var = env + off;
		size_t n = strnlen(var, len - off);
		if (klen && n > klen && !strncmp(var, key, klen) &&
		    var[klen] == '=') {
			*vlen = n - klen - 1;
			return var + klen + 1;
		}
		off += n + 1;
	}
	return NULL;
}

void proc_read_env(struct proc *p, const char *keys)
{
	if (p->env_read)
		return;
	p->env_read = true;
	size_t got, vlen;
	char *buf = proc_read_file(p->pid, "environ", ENVIRON_MAX, &got);
	if (!buf)
		return;
	/* The first key of the list that the process has wins. */
	for (const char *key = keys; *key && !p->env;) {
		size_t klen = strcspn(key, ",");
		const char *v = proc_environ_value(buf, got, key, klen, &vlen);
		if (v)
			p->env = cpa_strndup(v, vlen);
		key += klen;
		if (*key == ',')
			key++;
	}
	free(buf);
}

void proc_read_owner(struct proc *p)
{
	if (p->owner_read)
		return;
	p->owner_read = true;
	size_t got;
	char *buf = proc_read_file(p->pid, "cgroup", CGROUP_FILE_MAX, &got);
	if (!buf)
		return;
	struct cpa_owner o;
	struct cpa_cgroup_line l;
	if (cpa_owner_of_process(buf, got, &o, &l) && !l.v2)
		p->owner_path = cpa_strndup(l.path, l.path_len);
	free(buf);
}

void proc_forget_read(struct proc *p)
{
	p->proc_read = false;
	p->env_read = false;
	free(p->env);
	p->env = NULL;
	p->owner_read = false;
	free(p->owner_path);
	p->owner_path = NULL;
}
