// SPDX-License-Identifier: MIT
/* ELF objects shared across processes, keyed by build id, bounded by LRU. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dbgfetch.h"
#include "elfcache.h"
#include "hash.h"
#include "inline.h"
#include "log.h"
#include "procfs.h"
#include "safeopen.h"

#define NBUCKETS 4096
/* Loader threads: one slow object holds up only the loads queued behind
 * it on its own thread. */
#define LOADER_THREADS 2
#define HASH_WINDOW (4 << 20)	/* bytes of a file mapped at once */

struct elfcache {
	struct elf_obj *by_key[NBUCKETS];
	struct elf_obj *by_stat[NBUCKETS];
	struct elf_obj *lru_head, *lru_tail;	/* head: most recent */
	struct elf_obj *vdso;
	uint64_t max_bytes;
	const uint64_t *shared;	/* of max_bytes, held by others */
	uint64_t max_object;	/* what one object may cost */
	struct elfcache_stats st;
	uint64_t deadline_ns;	/* of the sample being unwound */
	struct debug_sources dbg;
	struct dbgfetch *fetch;
	uint64_t fetch_gen;	/* of the fetcher, when last looked at */
	bool fetch_due;		/* an object may await a fetched file */
	enum elfobj_inlines inlines;	/* when loads read them */

	/* the loader thread and its queue (see "the loader thread") */
	pthread_mutex_t lock;
	bool inline_running;	/* one inline table is read at a time */
	pthread_cond_t cond;
	pthread_t loaders[LOADER_THREADS];
	unsigned nloaders;
	bool loader_failed, stopping;
	struct elf_load *queue, *queue_tail;
	struct elf_load *finished;	/* loaded objects not yet adopted */
};

static void stop_loader(struct elfcache *c);

static unsigned key_bucket(const uint8_t *key, size_t len)
{
	return (unsigned)(cpa_hash(key, len, 0) % NBUCKETS);
}

static unsigned stat_bucket(uint64_t dev, uint64_t ino)
{
	return (unsigned)(cpa_hash_u64(dev * 0x9e3779b97f4a7c15ull ^ ino) %
			  NBUCKETS);
}

/* 'B' + build id (hashed when longer than fits), or 'H' + content hash. */
static size_t make_key(uint8_t *key, char kind, const uint8_t *id, size_t len)
{
	key[0] = (uint8_t)kind;
	if (len <= ELFOBJ_KEY_MAX - 1) {
		memcpy(key + 1, id, len);
		return len + 1;
	}
	uint64_t h = cpa_hash(id, len, 0);
	memcpy(key + 1, &h, sizeof(h));
	return 1 + sizeof(h);
}

static struct elf_obj *find_key(struct elfcache *c, const uint8_t *key,
				size_t len)
{
	for (struct elf_obj *o = c->by_key[key_bucket(key, len)]; o; o = o->hnext)
		if (o->key_len == len && !memcmp(o->key, key, len))
			return o;
	return NULL;
}

static struct elf_obj *find_stat(struct elfcache *c, const struct stat *st)
{
	unsigned b = stat_bucket(st->st_dev, st->st_ino);
	uint64_t mt = cpa_timespec_ns(&st->st_mtim);
	for (struct elf_obj *o = c->by_stat[b]; o; o = o->snext)
		if (o->st_dev == st->st_dev && o->st_ino == st->st_ino &&
		    o->st_size == (uint64_t)st->st_size && o->st_mtime_ns == mt)
			return o;
	return NULL;
}

static void lru_unlink(struct elfcache *c, struct elf_obj *o)
{
	if (o->lru_prev)
		o->lru_prev->lru_next = o->lru_next;
	else
		c->lru_head = o->lru_next;
	if (o->lru_next)
		o->lru_next->lru_prev = o->lru_prev;
	else
		c->lru_tail = o->lru_prev;
	o->lru_prev = o->lru_next = NULL;
}

static void lru_push(struct elfcache *c, struct elf_obj *o)
{
	o->lru_prev = NULL;
	o->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = o;
	c->lru_head = o;
	if (!c->lru_tail)
		c->lru_tail = o;
}

void elfcache_touch(struct elfcache *c, struct elf_obj *o)
{
	if (c->lru_head == o || o == c->vdso)
		return;
	lru_unlink(c, o);
	lru_push(c, o);
}

static void insert(struct elfcache *c, struct elf_obj *o)
{
	unsigned kb = key_bucket(o->key, o->key_len);
	o->hnext = c->by_key[kb];
	c->by_key[kb] = o;
	if (o->st_ino) {
		unsigned sb = stat_bucket(o->st_dev, o->st_ino);
		o->snext = c->by_stat[sb];
		c->by_stat[sb] = o;
	}
	lru_push(c, o);
	c->st.objects++;
	c->st.bytes += o->bytes;
}

static void unlink_chains(struct elfcache *c, struct elf_obj *o)
{
	struct elf_obj **pp = &c->by_key[key_bucket(o->key, o->key_len)];
	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == o) {
			*pp = o->hnext;
			break;
		}
	if (o->st_ino) {
		pp = &c->by_stat[stat_bucket(o->st_dev, o->st_ino)];
		for (; *pp; pp = &(*pp)->snext)
			if (*pp == o) {
				*pp = o->snext;
				break;
			}
	}
}

/* Unloads o; a job reading its inlined instances is left to finish and
 * be dropped (attach_inlines). */
static void unload(struct elf_obj *o)
{
	elfobj_unload(o);
}

static void destroy(struct elfcache *c, struct elf_obj *o)
{
	unlink_chains(c, o);
	lru_unlink(c, o);
	c->st.objects--;
	c->st.bytes -= o->bytes;
	unload(o);
	free(o);
}

struct elfcache *elfcache_new(uint64_t max_bytes, uint64_t max_object)
{
	struct elfcache *c = calloc(1, sizeof(*c));
	if (c) {
		pthread_condattr_t ca;
		pthread_mutex_init(&c->lock, NULL);
		/* deadlines are CLOCK_MONOTONIC, as cpa_mono_ns() */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cond, &ca);
		pthread_condattr_destroy(&ca);
		c->max_bytes = max_bytes;
		/* not capped by max_bytes when asked for: an object bigger
		 * than the whole cache then passes through it (main.c makes
		 * the default the cache's size) */
		c->max_object = max_object;
		c->dbg.dir = DEBUG_DIR_DEFAULT;
	}
	return c;
}

void elfcache_free(struct elfcache *c)
{
	if (!c)
		return;
	stop_loader(c);
	while (c->lru_head)
		destroy(c, c->lru_head);
	if (c->vdso) {
		unload(c->vdso);
		free(c->vdso);
	}
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* ---- opening files ----------------------------------------------------- */

/*
 * The routes to a mapped file, best first:
 *  0. /proc/PID/map_files/START-END, the kernel's handle on the mapping
 *     itself (deleted files, other mount namespaces); it needs
 *     CAP_SYS_ADMIN, which cpa monitor does not give cpa-unwind;
 *  1. the path resolved inside the process's root (safeopen.h);
 *  2. the path on the host, only once the process is gone (a short-lived
 *     process unwound after its exit) and only when the mapping says
 *     what the file must be: an inode checked here, or a build id that
 *     the caller checks. A live process's paths are never looked up on
 *     the host: its root is where they are.
 * *rootfd receives the directory in which the object's .gnu_debuglink
 * names are looked up, or -1; the caller closes it.
 */
static int open_route(const struct elf_src *src, int route, int *rootfd,
		      struct stat *st)
{
	char path[64];
	int fd, root;
	const struct safeopen_rules mapped = { .ino = src->inode };
	*rootfd = -1;
	switch (route) {
	case 0:
		if (!src->pid)
			return -1;
		snprintf(path, sizeof(path), "/proc/%u/map_files/%lx-%lx",
			 src->pid, (unsigned long)src->start,
			 (unsigned long)src->end);
		fd = safeopen_host(path, 0, st);
		if (fd >= 0)
			*rootfd = safeopen_proc_root(src->pid);
		return fd;
	case 1:
		if (src->path[0] != '/')
			return -1;
		return safeopen_in_proc_root(src->pid, src->path, &mapped, st,
					     rootfd);
	case 2:
		if (src->path[0] != '/')
			return -1;
		root = safeopen_proc_root(src->pid);
		if (root >= 0 || (errno != ENOENT && errno != ESRCH)) {
			if (root >= 0)
				close(root);
			return -1;
		}
		if (!src->build_id_len && !src->inode) {
			safeopen_count(SAFEOPEN_UNVERIFIED);
			return -1;
		}
		fd = safeopen_host(src->path, &mapped, st);
		if (fd >= 0)
			*rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		return fd;
	default:
		return -1;
	}
}

static void close_route(int fd, int rootfd)
{
	if (fd >= 0)
		close(fd);
	if (rootfd >= 0)
		close(rootfd);
}

static void src_dir(const struct elf_src *src, char *dir, size_t len)
{
	snprintf(dir, len, "%s", src->path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	else
		dir[0] = '\0';
}

/* Key of the file open at fd: its build id, else a hash of its bytes. */
static size_t file_key(int fd, const struct stat *st, uint8_t *key, bool *is_elf)
{
	uint8_t id[ELFOBJ_BUILD_ID_MAX];
	size_t len = 0;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	*is_elf = elf && elf_kind(elf) == ELF_K_ELF;
	if (*is_elf)
		len = elfobj_read_build_id(elf, id, sizeof(id));
	if (elf)
		elf_end(elf);
	if (len)
		return make_key(key, 'B', id, len);
	uint64_t h = 0;
	/* in windows, each unmapped once hashed: a big file must not stay
	 * resident for the sake of its key */
	for (off_t off = 0; off < st->st_size; off += HASH_WINDOW) {
		size_t n = st->st_size - off < HASH_WINDOW
				     ? (size_t)(st->st_size - off)
				     : HASH_WINDOW;
		void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, off);
		if (m == MAP_FAILED) {
			h = cpa_hash_u64((uint64_t)st->st_ino ^
					 (uint64_t)st->st_size);
			break;
		}
		h = cpa_hash(m, n, h);
		munmap(m, n);
	}
	return make_key(key, 'H', (const uint8_t *)&h, sizeof(h));
}

static void charge(struct elfcache *c, struct elf_obj *o, size_t before)
{
	c->st.bytes += o->bytes;
	c->st.bytes -= before;
}

/* Loads o from fd; touches nothing of the cache (the loader calls it). */
static void load_file(struct elfcache *c, struct elf_obj *o, int fd,
		      int rootfd, const struct elf_src *src)
{
	char dir[PATH_MAX];
	src_dir(src, dir, sizeof(dir));
	if (elfobj_load(o, fd, rootfd, dir, &c->dbg, c->max_object,
			c->inlines) < 0 &&
	    !o->loaded) {
		/* Keep the failure: an object that cannot be parsed is
		 * remembered as such instead of being retried per frame. */
		o->loaded = true;
	}
}

/* An object's inlined instances, read: counted. */
static void count_inlines(struct elfcache *c, const struct elf_obj *o)
{
	if (o->inl.nranges)
		c->st.inline_tables++;
	else if (o->inl_state == INLINE_OVER_BUDGET ||
		 o->inl_state == INLINE_FAILED)
		c->st.inline_refused++;
}

static void account_load(struct elfcache *c, struct elf_obj *o,
			 const struct elf_src *src, uint64_t ns)
{
	if (o->fail)
		c->st.fails[o->fail]++;
	c->st.cfi_refused_fdes += o->cfi.refused_fdes;
	count_inlines(c, o);
	cpa_debug("loaded %s (pid %u): %u symbols%s, %u unwind rows from %u "
		  "FDEs%s%s", src->path, src->pid, o->syms.n,
		  o->debug_file ? " (debug file)" : "", o->cfi.n, o->cfi.fdes,
		  o->fail ? ", failed: " : "",
		  o->fail ? elfobj_fail_name(o->fail) : "");
	c->st.loads++;
	c->st.load_ns += ns;
}

/* ---- the loader thread -------------------------------------------------- */

/*
 * Finding and loading a new object (opening the file, reading its build
 * id or hashing it, its symbols, CFI and debug file) is the slow part of
 * unwinding, and the file is chosen by the process: it runs on loader
 * threads so that the sample path waits for it only until the sample's
 * deadline (--load-wait), then writes the object's frames unnamed and
 * asks again with later samples.
 *
 * An object that --max-cache unloaded is loaded again the same way,
 * found again through the same routes and rules (its path may since
 * name another file): a slow object must not stall every process's
 * samples each time it comes back.
 *
 * The cache itself stays the sample thread's: only it inserts, evicts
 * and touches objects. The loader reads the hash chains (and o->loaded)
 * to skip objects already loaded, so those chains and o->loaded change
 * only under c->lock; the loader hands back a new object that nobody
 * else sees until the sample thread inserts it, or moves its tables into
 * the unloaded object of the same key.
 */
struct elf_load {
	struct elf_src src;	/* path and build_id point into this */
	char *path;
	uint8_t build_id[ELFOBJ_BUILD_ID_MAX];
	/* a job reading the inlined instances of the cached object of key,
	 * within inl_budget, not a load: see "inlined instances" */
	bool inline_job;
	uint8_t inl_state;
	size_t inl_budget, inl_dwarf_bytes;
	struct inline_table inl;
	/* the loader's answer */
	struct elf_obj *obj;	/* a new object, loaded, not in the cache */
	uint8_t key[ELFOBJ_KEY_MAX];
	uint8_t key_len;	/* the file's key (cached or new); 0: none */
	uint8_t fail;		/* why there is none */
	uint64_t load_ns;
	bool done, abandoned;
	bool waited;		/* the sample thread's: waited for once */
	struct elf_load *next;
	struct elf_load *fnext;	/* in c->finished */
};

static void free_load(struct elf_load *ld)
{
	if (ld->obj) {
		unload(ld->obj);
		free(ld->obj);
	}
	inline_table_free(&ld->inl);
	free(ld->path);
	free(ld);
}

static struct elf_obj *new_object(const uint8_t *key, size_t len,
				  const struct stat *st)
{
	struct elf_obj *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	memcpy(o->key, key, len);
	o->key_len = (uint8_t)len;
	o->st_dev = st->st_dev;
	o->st_ino = st->st_ino;
	o->st_size = (uint64_t)st->st_size;
	o->st_mtime_ns = cpa_timespec_ns(&st->st_mtim);
	o->bytes = sizeof(*o);
	return o;
}

/* The file's key, and whether the cache has it loaded under that key
 * (an unloaded object is loaded again). */
static bool cached_key(struct elfcache *c, const struct stat *st, int fd,
		       uint8_t *key, size_t *len, bool *is_elf)
{
	*is_elf = true;
	pthread_mutex_lock(&c->lock);
	struct elf_obj *o = find_stat(c, st);
	bool loaded = o && o->loaded;
	if (o) {
		*len = o->key_len;
		memcpy(key, o->key, *len);
	}
	pthread_mutex_unlock(&c->lock);
	if (o)
		return loaded;
	*len = file_key(fd, st, key, is_elf);
	pthread_mutex_lock(&c->lock);
	o = find_key(c, key, *len);
	loaded = o && o->loaded;
	pthread_mutex_unlock(&c->lock);
	return loaded;
}

/* A file found by one route, and its key (cached_key). */
struct keyed_file {
	int fd, rootfd;
	struct stat st;
	uint8_t key[ELFOBJ_KEY_MAX];
	size_t len;
	bool is_elf, cached;
};

/* The file of src by route into *f; its fd, -1 when the route has none. */
static int open_keyed(struct elfcache *c, const struct elf_src *src,
		      int route, struct keyed_file *f)
{
	f->fd = open_route(src, route, &f->rootfd, &f->st);
	if (f->fd >= 0)
		f->cached = cached_key(c, &f->st, f->fd, f->key, &f->len,
				       &f->is_elf);
	return f->fd;
}

/* On the loader thread: finds the file of ld->src and, when the cache
 * does not have it, loads it into a new object. */
static void run_load(struct elfcache *c, struct elf_load *ld)
{
	const struct elf_src *src = &ld->src;
	uint8_t key[ELFOBJ_KEY_MAX];
	size_t klen = src->build_id_len ? make_key(key, 'B', src->build_id,
						   src->build_id_len) : 0;
	int mismatch = 0;
	for (int route = 0; route < 3; route++) {
		struct keyed_file f;
		if (open_keyed(c, src, route, &f) < 0)
			continue;
		/* A path that holds another build of the file is the wrong
		 * file: try the next route. */
		if (klen && (f.len != klen || memcmp(f.key, key, klen))) {
			close_route(f.fd, f.rootfd);
			mismatch = f.is_elf ? ELFOBJ_FAIL_MISMATCH
					    : ELFOBJ_FAIL_NOT_ELF;
			continue;
		}
		memcpy(ld->key, f.key, f.len);
		ld->key_len = (uint8_t)f.len;
		if (!f.cached) {
			struct elf_obj *o = new_object(f.key, f.len, &f.st);
			uint64_t t0 = cpa_mono_ns();
			if (!o) {
				ld->fail = ELFOBJ_FAIL_NOMEM;
			} else if (!f.is_elf) {
				o->loaded = true;
				o->fail = ELFOBJ_FAIL_NOT_ELF;
			} else {
				load_file(c, o, f.fd, f.rootfd, src);
			}
			ld->obj = o;
			ld->load_ns = cpa_mono_ns() - t0;
		}
		close_route(f.fd, f.rootfd);
		return;
	}
	ld->fail = mismatch ? mismatch : ELFOBJ_FAIL_OPEN;
}

/*
 * Inlined instances: an object loads without them, so that its symbols
 * and CFI serve samples at once; when it has DWARF (inl_state
 * INLINE_PENDING), the sample thread then queues a job for a loader
 * (elfcache_queue_inlines, when frames.c finds the object worth it),
 * which opens the file again by the same routes, reads the table, one
 * job at a time and after the loads queued (libdw holds the whole DWARF,
 * decompressed, while it reads: two at once would double that), and
 * hands it back through the finished list; the sample thread gives it to
 * the object of that key if it is still loaded and waiting for one
 * (attach_inlines), between samples. A recording reads them in the load
 * instead, from the same open file (ELFOBJ_INLINES_NOW): its samples wait
 * for loads, and come out whole and the same every run.
 */
static void run_inline(struct elfcache *c, struct elf_load *ld)
{
	const struct elf_src *src = &ld->src;
	ld->inl_state = INLINE_FAILED;
	for (int route = 0; route < 3; route++) {
		struct keyed_file f;
		if (open_keyed(c, src, route, &f) < 0)
			continue;
		if (f.len != ld->key_len || memcmp(f.key, ld->key, f.len)) {
			close_route(f.fd, f.rootfd);
			continue;	/* another file by now */
		}
		char dir[PATH_MAX];
		src_dir(src, dir, sizeof(dir));
		uint64_t t0 = cpa_mono_ns();
		ld->inl_state = (uint8_t)elfobj_read_inlines(
			&ld->inl, f.fd, f.rootfd, dir, &c->dbg, ld->inl_budget);
		ld->load_ns = cpa_mono_ns() - t0;
		close_route(f.fd, f.rootfd);
		return;
	}
}

/*
 * Gives the pages of what was just freed back to the system. A load's
 * scratch (section copies, unsorted symbols) and an evicted object's
 * tables are freed in the middle of a loader's or the main thread's
 * arena, where glibc keeps them resident; on a host whose binaries come
 * and go, that kept cpa-unwind's resident set at several times
 * --max-cache. Called after a load and after the cache let objects go,
 * never per sample.
 */
static void release_freed(void)
{
	malloc_trim(0);
}

/* Takes ld out of c->finished, if there; c->lock held. */
static void unfinish(struct elfcache *c, struct elf_load *ld)
{
	for (struct elf_load **pp = &c->finished; *pp; pp = &(*pp)->fnext)
		if (*pp == ld) {
			*pp = ld->fnext;
			break;
		}
}

/* The next job for a loader, taken out of the queue: the first load,
 * else, when none runs, the inline job of the least DWARF (a program's
 * own table is not held up behind its libc's debug file; see "inlined
 * instances"); NULL when there is none to run. c->lock held. */
static struct elf_load *next_job(struct elfcache *c)
{
	struct elf_load **pick = NULL, *prev = NULL, *pick_prev = NULL;
	for (struct elf_load **pp = &c->queue; *pp; pp = &(*pp)->next) {
		if (!(*pp)->inline_job) {
			pick = pp;
			pick_prev = prev;
			break;
		}
		if (!c->inline_running &&
		    (!pick ||
		     (*pp)->inl_dwarf_bytes < (*pick)->inl_dwarf_bytes)) {
			pick = pp;
			pick_prev = prev;
		}
		prev = *pp;
	}
	if (!pick)
		return NULL;
	struct elf_load *ld = *pick;
	*pick = ld->next;
	if (c->queue_tail == ld)
		c->queue_tail = pick_prev;
	if (ld->inline_job)
		c->inline_running = true;
	return ld;
}

static void *loader_main(void *arg)
{
	struct elfcache *c = arg;
	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		struct elf_load *ld = next_job(c);
		if (!ld) {
			pthread_cond_wait(&c->cond, &c->lock);
			continue;
		}
		pthread_mutex_unlock(&c->lock);
		if (ld->inline_job)
			run_inline(c, ld);
		else
			run_load(c, ld);
		release_freed();
		pthread_mutex_lock(&c->lock);
		if (ld->inline_job)
			c->inline_running = false;
		ld->done = true;
		if (ld->abandoned) {
			free_load(ld);
		} else if (ld->obj || ld->inline_job) {
			ld->fnext = c->finished;
			__atomic_store_n(&c->finished, ld, __ATOMIC_RELAXED);
		}
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

void elfcache_set_deadline(struct elfcache *c, uint64_t deadline_ns)
{
	c->deadline_ns = deadline_ns;
}

/* The object the cache has loaded under the record's build id: no file
 * I/O. An unloaded one is left to the loader. */
static struct elf_obj *find_by_record(struct elfcache *c,
				      const struct elf_src *src)
{
	uint8_t key[ELFOBJ_KEY_MAX];
	if (!src->build_id_len)
		return NULL;
	size_t klen = make_key(key, 'B', src->build_id, src->build_id_len);
	struct elf_obj *o = find_key(c, key, klen);
	if (o && o->loaded) {
		c->st.hits++;
		o->refs++;
		elfcache_touch(c, o);
		return o;
	}
	return NULL;
}

/* Queues ld for a loader thread, or, when there is none to be had,
 * loads it here. true when queued. */
static bool submit(struct elfcache *c, struct elf_load *ld)
{
	pthread_mutex_lock(&c->lock);
	bool queued = c->nloaders > 0;
	ld->done = false;
	ld->next = NULL;
	if (queued) {
		if (c->queue_tail)
			c->queue_tail->next = ld;
		else
			c->queue = ld;
		c->queue_tail = ld;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	if (!queued) {
		run_load(c, ld);
		ld->done = true;
	}
	return queued;
}

/* A load of src, its strings copied; NULL when out of memory. */
static struct elf_load *new_load(struct elfcache *c, const struct elf_src *src)
{
	struct elf_load *ld = calloc(1, sizeof(*ld));
	if (ld)
		ld->path = strdup(src->path);
	if (!ld || !ld->path) {
		free(ld);
		c->st.fails[ELFOBJ_FAIL_NOMEM]++;
		return NULL;
	}
	ld->src = *src;
	ld->src.path = ld->path;
	ld->src.build_id_len = src->build_id_len < sizeof(ld->build_id)
				       ? src->build_id_len : 0;
	if (ld->src.build_id_len)
		memcpy(ld->build_id, src->build_id, ld->src.build_id_len);
	ld->src.build_id = ld->build_id;
	return ld;
}

/* Starts the loader threads if they are not running. */
static void start_loaders(struct elfcache *c)
{
	pthread_mutex_lock(&c->lock);
	/* Loaders block every signal: the statistics timer must interrupt
	 * the main thread's wait for input, or an idle cpa-unwind stops
	 * reporting and cpa monitor takes it for hung. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (c->nloaders < LOADER_THREADS && !c->loader_failed) {
		if (pthread_create(&c->loaders[c->nloaders], NULL, loader_main,
				   c) == 0)
			c->nloaders++;
		else
			c->loader_failed = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_mutex_unlock(&c->lock);
}

struct elf_load *elfcache_request(struct elfcache *c, const struct elf_src *src,
				  struct elf_obj **obj)
{
	*obj = find_by_record(c, src);
	if (*obj)
		return NULL;
	struct elf_load *ld = new_load(c, src);
	if (!ld)
		return NULL;
	start_loaders(c);
	submit(c, ld);
	return ld;
}

/* On the sample thread: a read table goes to the object of its key when
 * that is loaded and waits for one; ld is freed. */
static void attach_inlines(struct elfcache *c, struct elf_load *ld)
{
	struct elf_obj *o = find_key(c, ld->key, ld->key_len);
	c->st.inline_ns += ld->load_ns;
	if (o && o->loaded && o->inl_state == INLINE_QUEUED) {
		o->inl = ld->inl;
		memset(&ld->inl, 0, sizeof(ld->inl));
		o->inl_state = ld->inl_state;
		count_inlines(c, o);
		elfcache_charge(c, o, o->inl.bytes);
	}
	free_load(ld);
}

void elfcache_queue_inlines(struct elfcache *c, struct elf_obj *o,
			    const struct elf_src *src)
{
	if (o->inl_state != INLINE_PENDING || o == c->vdso)
		return;
	struct elf_load *ld = new_load(c, src);
	if (!ld)
		return;
	ld->inline_job = true;
	memcpy(ld->key, o->key, o->key_len);
	ld->key_len = o->key_len;
	ld->inl_budget = o->bytes < c->max_object ? c->max_object - o->bytes : 0;
	ld->inl_dwarf_bytes = o->inl_dwarf_bytes;
	o->inl_state = INLINE_QUEUED;
	start_loaders(c);
	if (!submit(c, ld))
		attach_inlines(c, ld);	/* no loader thread: read here */
}

/* On the sample thread: the object a loader made goes into the cache;
 * ld keeps its key. Returns the cached object of that key. */
static struct elf_obj *take_object(struct elfcache *c, struct elf_load *ld)
{
	struct elf_obj *n = ld->obj;
	struct elf_obj *o = find_key(c, ld->key, ld->key_len);
	ld->obj = NULL;
	account_load(c, n, &ld->src, ld->load_ns);
	if (o && !o->loaded) {
		/* the reload of an object --max-cache unloaded */
		size_t before = o->bytes;
		pthread_mutex_lock(&c->lock);
		elfobj_move_load(o, n);
		pthread_mutex_unlock(&c->lock);
		charge(c, o, before);
		c->st.reloads++;
	}
	if (o) {
		/* moved into o, or o was loaded twice meanwhile (two
		 * processes, one file) */
		unload(n);
		free(n);
	} else {
		pthread_mutex_lock(&c->lock);
		insert(c, n);
		pthread_mutex_unlock(&c->lock);
		o = n;
	}
	return o;
}

/*
 * Takes what the loaders finished into the cache between samples, not
 * only when a sample of the mapping that asked comes again: a process
 * that exited first or was not sampled there again held its object
 * outside --max-cache, and every other process mapping the same file
 * loaded one more copy of it meanwhile (on a build host, where every
 * clang maps libLLVM, malloc held 60 to 90 MB beyond the cache and the
 * dictionaries).
 */
static void adopt_finished(struct elfcache *c)
{
	if (!__atomic_load_n(&c->finished, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&c->lock);
	struct elf_load *ld = c->finished;
	c->finished = NULL;
	pthread_mutex_unlock(&c->lock);
	while (ld) {
		struct elf_load *next = ld->fnext;
		ld->fnext = NULL;
		if (ld->inline_job)
			attach_inlines(c, ld);
		else
			take_object(c, ld);
		ld = next;
	}
}

/* On the sample thread: the loader's answer made an object of the cache. */
static struct elf_obj *adopt(struct elfcache *c, struct elf_load *ld)
{
	struct elf_obj *o;
	if (ld->obj) {
		o = take_object(c, ld);
	} else {
		o = ld->key_len ? find_key(c, ld->key, ld->key_len) : NULL;
		if (!o || !o->loaded) {
			c->st.fails[ld->fail ? ld->fail : ELFOBJ_FAIL_OPEN]++;
			return NULL;
		}
		c->st.hits++;
	}
	/* its debug file may have arrived since the loader asked */
	if (o->dbg_fetching)
		c->fetch_due = true;
	o->refs++;
	elfcache_touch(c, o);
	return o;
}

/*
 * The loader found the object loaded, but --max-cache unloaded it before
 * this sample collected it: ld goes back to the loader (and is not waited
 * for again), which loads it anew. true when it did.
 */
static bool unloaded_meanwhile(struct elfcache *c, struct elf_load *ld)
{
	if (ld->obj || !ld->key_len)
		return false;
	struct elf_obj *o = find_key(c, ld->key, ld->key_len);
	if (o && o->loaded)
		return false;
	ld->key_len = 0;
	ld->fail = 0;
	return submit(c, ld);
}

bool elfcache_collect(struct elfcache *c, struct elf_load *ld,
		      struct elf_obj **obj)
{
	pthread_mutex_lock(&c->lock);
	/* Waited for once, to the deadline of one sample: a process whose
	 * object is slow to load has many samples, which must not each
	 * wait for it. */
	if (!ld->done && !ld->waited) {
		ld->waited = true;
		struct timespec ts = cpa_timespec(c->deadline_ns);
		while (!ld->done &&
		       pthread_cond_timedwait(&c->cond, &c->lock, &ts) !=
			       ETIMEDOUT)
			;
	}
	bool done = ld->done;
	if (done)
		unfinish(c, ld);
	pthread_mutex_unlock(&c->lock);
	if (done && unloaded_meanwhile(c, ld))
		done = false;
	if (!done) {
		c->st.load_waits++;
		return false;
	}
	*obj = adopt(c, ld);
	free_load(ld);
	return true;
}

void elfcache_abandon(struct elfcache *c, struct elf_load *ld)
{
	if (!ld)
		return;
	pthread_mutex_lock(&c->lock);
	bool done = ld->done;
	if (done)
		unfinish(c, ld);
	if (!done) {
		/* still queued: take it out; running: the loader frees it */
		struct elf_load **pp = &c->queue, *prev = NULL;
		while (*pp && *pp != ld) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		if (*pp) {
			*pp = ld->next;
			if (c->queue_tail == ld)
				c->queue_tail = prev;
			done = true;
		} else {
			ld->abandoned = true;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (done)
		free_load(ld);
}

static void stop_loader(struct elfcache *c)
{
	pthread_mutex_lock(&c->lock);
	c->stopping = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < c->nloaders; i++)
		pthread_join(c->loaders[i], NULL);
	while (c->queue) {
		struct elf_load *ld = c->queue;
		c->queue = ld->next;
		free_load(ld);
	}
	/* finished inline jobs are the cache's own; loads, the mappings' */
	for (struct elf_load **pp = &c->finished; *pp;) {
		struct elf_load *ld = *pp;
		if (ld->inline_job) {
			*pp = ld->fnext;
			free_load(ld);
		} else {
			pp = &ld->fnext;
		}
	}
}

/* The vdso is the same image in every process of this kernel: ours. */
struct elf_obj *elfcache_vdso(struct elfcache *c)
{
	if (c->vdso)
		return c->vdso;
	c->vdso = calloc(1, sizeof(*c->vdso));
	if (!c->vdso)
		return NULL;
	c->vdso->loaded = true;
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	struct cpa_maps it;
	struct cpa_map m;
	size_t size = 0;
	if (base && cpa_maps_open(&it, 0) == 0) {
		while (cpa_maps_next(&it, &m))
			if (m.start == base && !strcmp(m.path, "[vdso]"))
				size = m.end - m.start;
		cpa_maps_close(&it);
	}
	if (size)
		elfobj_load_image(c->vdso, (const void *)base, size,
				  c->max_object);
	return c->vdso;
}

void elfcache_charge(struct elfcache *c, struct elf_obj *o, size_t n)
{
	o->bytes += n;
	if (o != c->vdso)
		c->st.bytes += n;
}

void elfcache_put(struct elfcache *c, struct elf_obj *o)
{
	if (o && o != c->vdso && o->refs)
		o->refs--;
}

void elfcache_share(struct elfcache *c, const uint64_t *used)
{
	c->shared = used;
}

void elfcache_trim(struct elfcache *c)
{
	adopt_finished(c);
	uint64_t others = c->shared ? *c->shared : 0;
	uint64_t max = others < c->max_bytes ? c->max_bytes - others : 0;
	if (c->st.bytes <= max)
		return;
	/* the loader reads the chains and o->loaded */
	pthread_mutex_lock(&c->lock);
	struct elf_obj *o = c->lru_tail;
	uint64_t was = c->st.bytes;
	while (c->st.bytes > max && o) {
		struct elf_obj *prev = o->lru_prev;
		if (o->refs == 0) {
			destroy(c, o);
			c->st.evictions++;
		} else if (o->loaded && o->bytes > sizeof(*o)) {
			size_t before = o->bytes;
			unload(o);
			charge(c, o, before);
			c->st.unloads++;
		}
		o = prev;
	}
	pthread_mutex_unlock(&c->lock);
	if (c->st.bytes < was)
		release_freed();
}

static bool fetched(void *ctx, const uint8_t *id, size_t len, char *path,
		    size_t cap)
{
	return dbgfetch_lookup(ctx, id, len, path, cap);
}

void elfcache_set_inlines(struct elfcache *c, enum elfobj_inlines when)
{
	c->inlines = when;
}

void elfcache_set_debug(struct elfcache *c, const char *dir,
			struct dbgfetch *fetch)
{
	c->dbg.dir = dir;
	c->dbg.fetched = fetch ? fetched : NULL;
	c->dbg.ctx = fetch;
	c->fetch = fetch;
}

/*
 * An object loaded while its debug file was being fetched is unloaded
 * once the file is in the cache, as --max-cache unloads: the next sample
 * that needs it has it loaded again, on a loader thread, this time with
 * the debug file's names.
 */
void elfcache_take_fetched(struct elfcache *c)
{
	if (!c->fetch)
		return;
	uint64_t gen = dbgfetch_generation(c->fetch);
	if (gen == c->fetch_gen && !c->fetch_due)
		return;
	c->fetch_gen = gen;
	c->fetch_due = false;
	pthread_mutex_lock(&c->lock);
	for (unsigned b = 0; b < NBUCKETS; b++)
		for (struct elf_obj *o = c->by_key[b]; o; o = o->hnext) {
			if (!o->loaded || !o->dbg_fetching ||
			    !dbgfetch_ready(c->fetch, o->build_id,
					    o->build_id_len))
				continue;
			size_t before = o->bytes;
			unload(o);
			charge(c, o, before);
			c->st.refetched++;
		}
	pthread_mutex_unlock(&c->lock);
}

void elfcache_stats(const struct elfcache *c, struct elfcache_stats *st)
{
	*st = c->st;
}

static void forget_out_ids(struct elf_obj *o)
{
	if (o && o->out_ids)
		memset(o->out_ids, 0,
		       (o->syms.n ? o->syms.n : 1) * sizeof(*o->out_ids));
	if (o)
		inline_forget_out_ids(&o->inl);
}

void elfcache_forget_out_ids(struct elfcache *c)
{
	for (unsigned b = 0; b < NBUCKETS; b++)
		for (struct elf_obj *o = c->by_key[b]; o; o = o->hnext)
			forget_out_ids(o);
	forget_out_ids(c->vdso);
}
