// SPDX-License-Identifier: MIT
/* Debug files from debuginfod servers, fetched on a thread of their own. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "dbgfetch.h"
#include "hash.h"
#include "htab.h"
#include "log.h"

#if WITH_DEBUGINFOD
#include <elfutils/debuginfod.h>
#else
/* Built without libdebuginfod (configure --without-debuginfod):
 * dbgfetch_new starts no fetcher, so none of these is reached. */
#define DEBUGINFOD_URLS_ENV_VAR "DEBUGINFOD_URLS"
#define DEBUGINFOD_CACHE_PATH_ENV_VAR "DEBUGINFOD_CACHE_PATH"
typedef struct debuginfod_client debuginfod_client;
typedef int (*debuginfod_progressfn_t)(debuginfod_client *, long, long);
static debuginfod_client *debuginfod_begin(void) { return NULL; }
static void debuginfod_end(debuginfod_client *c) { (void)c; }
static void *debuginfod_get_user_data(debuginfod_client *c)
{
	(void)c;
	return NULL;
}
static void debuginfod_set_user_data(debuginfod_client *c, void *d)
{
	(void)c, (void)d;
}
static void debuginfod_set_progressfn(debuginfod_client *c,
				      debuginfod_progressfn_t fn)
{
	(void)c, (void)fn;
}
static int debuginfod_find_debuginfo(debuginfod_client *c,
				     const unsigned char *id, int len,
				     char **path)
{
	(void)c, (void)id, (void)len, (void)path;
	return -ENOSYS;
}
#endif

#define ID_MAX 64		/* longest build id asked for */
/* Build ids asked for: a host has hundreds of stripped objects; the
 * bound keeps processes that write ELF files at will from making
 * cpa-unwind ask a server for each of them. */
#define MAX_IDS 8192
#define RETRY_FIRST_NS CPA_NSEC_PER_SEC
#define RETRY_MAX_NS (300 * CPA_NSEC_PER_SEC)

enum fetch_state { WANTED = 0, IN_FLIGHT, FETCHED };

struct entry {
	uint8_t id[ID_MAX];
	uint8_t len;
	uint8_t state;
	bool answered;		/* one fetch of it has ended */
	uint32_t attempts;
	uint64_t next_ns;	/* CLOCK_MONOTONIC: not tried before */
	char *path;		/* FETCHED: the file in the cache */
};

struct dbgfetch {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* new wants, answers, stopping */
	pthread_t thread;
	bool started, wait;
	int stopping;		/* read by the progress callback: atomic */
	struct entry *entries;	/* [0] unused: htab ids start at 1 */
	uint32_t n, cap;
	struct cpa_htab index;
	uint64_t generation;
	struct dbgfetch_stats st;
};

static uint64_t retry_after(uint32_t attempts)
{
	uint64_t ns = RETRY_FIRST_NS;
	while (--attempts && ns < RETRY_MAX_NS)
		ns *= 2;
	return ns < RETRY_MAX_NS ? ns : RETRY_MAX_NS;
}

/* Index of id, or 0; *pr ready for adding it. */
static uint32_t find(struct dbgfetch *f, const uint8_t *id, size_t len,
		     struct cpa_htab_probe *pr)
{
	uint64_t h = cpa_hash(id, len, 0);
	for (uint32_t i = cpa_htab_first(&f->index, h, pr); i;
	     i = cpa_htab_next(&f->index, pr))
		if (f->entries[i].len == len && !memcmp(f->entries[i].id, id, len))
			return i;
	return 0;
}

/* The next build id due, or 0 with *wake_ns the earliest retry
 * (UINT64_MAX: none). */
static uint32_t next_due(struct dbgfetch *f, uint64_t now, uint64_t *wake_ns)
{
	uint32_t best = 0;
	*wake_ns = UINT64_MAX;
	for (uint32_t i = 1; i <= f->n; i++) {
		const struct entry *e = &f->entries[i];
		if (e->state != WANTED)
			continue;
		if (e->next_ns <= now) {
			if (!best || e->next_ns < f->entries[best].next_ns)
				best = i;
		} else if (e->next_ns < *wake_ns) {
			*wake_ns = e->next_ns;
		}
	}
	return best;
}

/* libdebuginfod calls this while a transfer runs: non-zero cancels it,
 * so stopping never waits for a slow server. */
static int progress(debuginfod_client *client, long a, long b)
{
	(void)a;
	(void)b;
	struct dbgfetch *f = debuginfod_get_user_data(client);
	return __atomic_load_n(&f->stopping, __ATOMIC_RELAXED);
}

static void fetch_one(struct dbgfetch *f, debuginfod_client *client,
		      uint32_t i)
{
	struct entry *e = &f->entries[i];
	uint8_t id[ID_MAX];
	size_t len = e->len;
	memcpy(id, e->id, len);
	e->state = IN_FLIGHT;
	f->st.attempts++;
	pthread_mutex_unlock(&f->lock);

	char *path = NULL;
	int fd = client ? debuginfod_find_debuginfo(client, id, (int)len, &path)
			: -ENOMEM;
	if (fd >= 0)
		close(fd);

	pthread_mutex_lock(&f->lock);
	e = &f->entries[i];	/* the array may have moved */
	e->attempts++;
	e->answered = true;
	if (fd >= 0 && path) {
		e->path = path;
		e->state = FETCHED;
		f->st.fetched++;
		__atomic_store_n(&f->generation, f->generation + 1,
				 __ATOMIC_RELEASE);
		cpa_debug("debuginfod: fetched %s", path);
	} else {
		free(path);
		e->state = WANTED;
		e->next_ns = cpa_mono_ns() + retry_after(e->attempts);
		f->st.failures++;
		char hex[2 * ID_MAX + 1];
		for (size_t k = 0; k < len; k++)
			snprintf(hex + 2 * k, 3, "%02x", id[k]);
		cpa_debug("debuginfod: fetch %u of %s failed (%s); "
			  "again in %llu s", e->attempts, hex,
			  strerror(fd < 0 ? -fd : ENOENT),
			  (unsigned long long)(retry_after(e->attempts) /
					       CPA_NSEC_PER_SEC));
	}
	pthread_cond_broadcast(&f->cond);
}

static void *fetch_main(void *arg)
{
	struct dbgfetch *f = arg;
	/* one session for the thread's life: libdebuginfod reuses its
	 * connections */
	debuginfod_client *client = debuginfod_begin();
	if (client) {
		debuginfod_set_user_data(client, f);
		debuginfod_set_progressfn(client, progress);
	}
	pthread_mutex_lock(&f->lock);
	while (!f->stopping) {
		uint64_t wake;
		uint32_t i = next_due(f, cpa_mono_ns(), &wake);
		if (i) {
			fetch_one(f, client, i);
		} else if (wake == UINT64_MAX) {
			pthread_cond_wait(&f->cond, &f->lock);
		} else {
			struct timespec ts = cpa_timespec(wake);
			pthread_cond_timedwait(&f->cond, &f->lock, &ts);
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (client)
		debuginfod_end(client);
	return NULL;
}

/* mkdir -p, new directories private: the cache says which binaries the
 * host runs. */
static int make_dirs(const char *dir)
{
	char path[4096];
	int n = snprintf(path, sizeof(path), "%s", dir);
	if (n <= 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			break;
	}
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/*
 * libdebuginfod remembers a server's "not found" for cache_miss_s
 * (600 s by default) and asks no server again meanwhile; cpa-unwind
 * keeps its own times for asking again, so that a server which was
 * starting, or was given the file since, is asked on cpa-unwind's
 * schedule.
 */
static int set_retry_policy(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cache_miss_s", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				    O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ssize_t k = write(fd, "0\n", 2);
	close(fd);
	return k == 2 ? 0 : -EIO;
}

struct dbgfetch *dbgfetch_new(const char *cache_dir, bool wait, char *err,
			      size_t errlen)
{
	err[0] = '\0';
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	if (!urls || !urls[strspn(urls, " \t")])
		return NULL;
	if (!WITH_DEBUGINFOD) {
		cpa_warn("DEBUGINFOD_URLS is set, but this cpa-unwind was built "
			 "without debuginfod: no debug files are fetched");
		return NULL;
	}
	int rc = make_dirs(cache_dir);
	if (rc == 0)
		rc = set_retry_policy(cache_dir);
	if (rc < 0) {
		cpa_fail_errno(err, errlen, -rc, "%s", cache_dir);
		return NULL;
	}
	/* read by libdebuginfod on each query; set before any thread runs */
	setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, cache_dir, 1);

	struct dbgfetch *f = cpa_calloc(1, sizeof(*f));
	pthread_condattr_t ca;
	pthread_mutex_init(&f->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->cond, &ca);
	pthread_condattr_destroy(&ca);
	cpa_htab_init(&f->index, 64);
	f->wait = wait;
	/* signals are the main thread's (see elfcache.c's loaders) */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	f->started = pthread_create(&f->thread, NULL, fetch_main, f) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!f->started) {
		cpa_fail(err, errlen, "cannot start the debuginfod thread");
		dbgfetch_free(f);
		return NULL;
	}
	return f;
}

void dbgfetch_free(struct dbgfetch *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	__atomic_store_n(&f->stopping, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (f->started)
		pthread_join(f->thread, NULL);
	for (uint32_t i = 1; i <= f->n; i++)
		free(f->entries[i].path);
	free(f->entries);
	cpa_htab_free(&f->index);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

bool dbgfetch_lookup(struct dbgfetch *f, const uint8_t *id, size_t len,
		     char *path, size_t cap)
{
	if (!f || !len || len > ID_MAX)
		return false;
	struct cpa_htab_probe pr;
	pthread_mutex_lock(&f->lock);
	uint32_t i = find(f, id, len, &pr);
	if (!i && f->n < MAX_IDS) {
		if (f->n + 1 >= f->cap) {
			uint32_t cap2 = f->cap ? f->cap * 2 : 64;
			f->entries = cpa_realloc(f->entries,
						 cap2 * sizeof(*f->entries));
			f->cap = cap2;
		}
		i = ++f->n;
		struct entry *e = &f->entries[i];
		memset(e, 0, sizeof(*e));
		memcpy(e->id, id, len);
		e->len = (uint8_t)len;
		cpa_htab_add(&f->index, &pr, i);
		f->st.wanted++;
		pthread_cond_broadcast(&f->cond);
	} else if (!i) {
		f->st.refused++;
	}
	/* a recording waits for the first answer, not for the retries */
	while (i && f->wait && !f->entries[i].answered && !f->stopping)
		pthread_cond_wait(&f->cond, &f->lock);
	bool ok = i && f->entries[i].state == FETCHED &&
		  (size_t)snprintf(path, cap, "%s", f->entries[i].path) < cap;
	pthread_mutex_unlock(&f->lock);
	return ok;
}

bool dbgfetch_ready(struct dbgfetch *f, const uint8_t *id, size_t len)
{
	if (!f || !len || len > ID_MAX)
		return false;
	struct cpa_htab_probe pr;
	pthread_mutex_lock(&f->lock);
	uint32_t i = find(f, id, len, &pr);
	bool ok = i && f->entries[i].state == FETCHED;
	pthread_mutex_unlock(&f->lock);
	return ok;
}

uint64_t dbgfetch_generation(struct dbgfetch *f)
{
	/* read per sample: no lock */
	return f ? __atomic_load_n(&f->generation, __ATOMIC_ACQUIRE) : 0;
}

void dbgfetch_stats(struct dbgfetch *f, struct dbgfetch_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	*st = f->st;
	pthread_mutex_unlock(&f->lock);
}

const char *dbgfetch_default_cache(char *buf, size_t cap)
{
	const char *d = getenv("CACHE_DIRECTORY");
	if (d && *d) {
		/* systemd lists several directories separated by colons */
		int n = (int)strcspn(d, ":");
		snprintf(buf, cap, "%.*s/debuginfod", n, d);
	} else if ((d = getenv("XDG_CACHE_HOME")) && *d == '/') {
		snprintf(buf, cap, "%s/cpa/debuginfod", d);
	} else if ((d = getenv("HOME")) && *d == '/') {
		snprintf(buf, cap, "%s/.cache/cpa/debuginfod", d);
	} else {
		snprintf(buf, cap, "/var/cache/cpa/debuginfod");
	}
	return buf;
}
