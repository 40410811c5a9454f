// SPDX-License-Identifier: MIT
/*
 * Loading JIT perf maps off the sample path (perfmap.h): one loader
 * thread reads the maps of every process, a load at a time, from where
 * the last read of that map ended, and hands back the process's whole
 * new table; the sample thread swaps it in between lookups.
 *
 * While a load runs, the sample thread goes on reading the table the
 * load merges into and changes nothing of it; a process that goes
 * meanwhile leaves its table to the load, which frees it.
 */
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

#include "budget.h"
#include "clock.h"
#include "perfmap.h"
#include "procfs.h"
#include "safeopen.h"

#define CHUNK (1u << 20)	/* bytes of a map read at once */
#define REFRESH_NS CPA_NSEC_PER_SEC	/* a grown map is read again after */
#define MISS_MIN_NS (10 * CPA_NSEC_PER_MSEC)	/* reads after misses, at most every */
#define STALE_SLACK_NS (50 * CPA_NSEC_PER_MSEC)	/* clock ticks, rounding */
/* The sample thread's waits for maps, all processes together, take at
 * most this share of its time (and a burst of one --load-wait): a map
 * on a file that reads slowly must not stall every process's samples,
 * one wait per load at a time. A recording (no --load-wait bound) waits
 * for every load. */
#define WAIT_SHARE 50		/* 1/50: 2% */
#define WAIT_UNBOUNDED (3600 * CPA_NSEC_PER_SEC)

enum load_result {
	LOAD_NO_MAP = 0,	/* none, refused, or an earlier process's */
	LOAD_UNCHANGED,		/* nothing new since the last read */
	LOAD_MOVED,		/* read further, no new symbol */
	LOAD_TABLE,		/* syms is the map's new table */
};

struct perfmap_load {
	/* asked */
	uint32_t pid;
	struct symtab base;	/* the process's table, shared, read only */
	uint64_t limit;		/* bytes the table may hold */
	bool whole;		/* read from the start, base not used */
	uint64_t dev, ino, off;
	uint8_t tail[PERFMAP_TAIL], tail_len;
	uint64_t start_ns;	/* the process's start, 0: find it */
	struct safeopen_cred cred;	/* the process's, when it has gone */
	bool have_cred;
	/* answered */
	uint8_t result;
	struct symtab syms;
	uint64_t new_dev, new_ino, new_off, new_mtime;
	uint8_t new_tail[PERFMAP_TAIL], new_tail_len;
	uint64_t bad;
	bool cut, incremental;
	uint64_t read_rt_ns, bytes_read;
	struct safeopen_cred seen_cred;
	bool seen_alive;
	/* the loader's */
	bool running, done, abandoned;
	struct perfmap_load *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a load queued, done, or stopping */
	pthread_t thread;
	bool started, failed, stopping;
	struct perfmap_load *head, *tail;
	uint64_t wait_ns;
	uint64_t wait_credit_ns;	/* the waits' bucket, in ns */
	uint64_t credit_at_ns;		/* monotonic, when last filled */
	struct perfmap_stats st;
} L = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wait_ns = 150000000ull,
};

void perfmap_set_wait(uint64_t wait_ns)
{
	L.wait_ns = wait_ns;
	L.wait_credit_ns = wait_ns;
	L.credit_at_ns = 0;
}

/* The latest a wait that starts now may last until, within the bucket. */
static uint64_t wait_until(uint64_t now_ns, uint64_t deadline_ns)
{
	if (L.wait_ns >= WAIT_UNBOUNDED)
		return deadline_ns;
	if (L.credit_at_ns && now_ns > L.credit_at_ns) {
		L.wait_credit_ns += (now_ns - L.credit_at_ns) / WAIT_SHARE;
		if (L.wait_credit_ns > L.wait_ns)
			L.wait_credit_ns = L.wait_ns;
	}
	L.credit_at_ns = now_ns;
	uint64_t until = now_ns + L.wait_credit_ns;
	return until < deadline_ns ? until : deadline_ns;
}

static void waited(uint64_t from_ns)
{
	uint64_t spent = cpa_mono_ns() - from_ns;
	L.wait_credit_ns = spent < L.wait_credit_ns ? L.wait_credit_ns - spent : 0;
}

/* ---- the loader thread --------------------------------------------------- */

/*
 * The map of a live process, inside its root, as the process itself
 * could read it; of one that has gone, the host's /tmp/perf-PID.map when
 * it is its owner's own file (and readable by the credentials the
 * process had, when it was seen alive).
 */
static int open_map(struct perfmap_load *ld, struct stat *st)
{
	char path[64];
	struct cpa_proc_status ps;
	int fd = -1, rootfd;
	if (cpa_proc_status(ld->pid, &ps) &&
	    safeopen_cred_from(&ps, &ld->seen_cred) == 0) {
		ld->seen_alive = true;
		struct safeopen_rules as_proc = { .as = &ld->seen_cred };
		snprintf(path, sizeof(path), "/tmp/perf-%u.map", ps.nspid);
		fd = safeopen_in_proc_root(ld->pid, path, &as_proc, st, &rootfd);
		if (fd >= 0) {
			close(rootfd);
			return fd;
		}
		if (errno != ENOENT && errno != ESRCH)
			return -1;
		int root = safeopen_proc_root(ld->pid);
		if (root >= 0) {
			close(root);
			return -1;	/* alive, and no map */
		}
	}
	struct safeopen_rules own = {
		.own_file = true, .as = ld->have_cred ? &ld->cred : NULL,
	};
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", ld->pid);
	return safeopen_host(path, &own, st);
}

static bool read_at(int fd, void *buf, size_t len, uint64_t off)
{
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* Whether the file at fd is the one last read, grown: the bytes before
 * where that read ended are still those it ended on. */
static bool only_grew(const struct perfmap_load *ld, int fd,
		      const struct stat *st)
{
	uint8_t now[PERFMAP_TAIL];
	if (ld->whole || ld->dev != (uint64_t)st->st_dev ||
	    ld->ino != (uint64_t)st->st_ino ||
	    (uint64_t)st->st_size < ld->off || ld->off < ld->tail_len)
		return false;
	return read_at(fd, now, ld->tail_len, ld->off - ld->tail_len) &&
	       !memcmp(now, ld->tail, ld->tail_len);
}

/* Whole lines from byte from to the size the file had at the stat, into
 * t while it holds under limit. Returns where the lines read end. */
static uint64_t read_lines(struct perfmap_load *ld, int fd, uint64_t from,
			   uint64_t size, struct symtab *t, uint64_t limit)
{
	char *buf = malloc(CHUNK);
	uint64_t pos = from;
	size_t have = 0;	/* bytes at buf from pos on */
	while (buf && pos + have < size && !ld->cut) {
		size_t want = CHUNK - have;
		if (want > size - pos - have)
			want = (size_t)(size - pos - have);
		ssize_t k = pread(fd, buf + have, want, (off_t)(pos + have));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		ld->bytes_read += (uint64_t)k;
		have += (size_t)k;
		size_t used = perfmap_add_lines(t, buf, have, limit, &ld->bad,
						&ld->cut);
		if (!used && have == CHUNK) {
			used = have;	/* a line longer than a chunk */
			ld->bad++;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
		pos += used;
	}
	free(buf);
	return pos;
}

static void run_load(struct perfmap_load *ld)
{
	struct stat st;
	ld->read_rt_ns = cpa_now_ns();
	int fd = open_map(ld, &st);
	if (fd < 0)
		return;		/* LOAD_NO_MAP */
	/* A map older than the process is an earlier process's that had
	 * the same pid: its addresses name nothing of this one. A JVM asked
	 * for its map writes it anew. The start is known to a clock tick. */
	uint64_t mtime = cpa_timespec_ns(&st.st_mtim);
	if (!ld->start_ns && ld->seen_alive)
		ld->start_ns = cpa_proc_start_realtime_ns(ld->pid);
	if (ld->start_ns && mtime + STALE_SLACK_NS < ld->start_ns) {
		close(fd);
		return;
	}
	ld->incremental = only_grew(ld, fd, &st);
	uint64_t from = ld->incremental ? ld->off : 0;
	ld->new_dev = (uint64_t)st.st_dev;
	ld->new_ino = (uint64_t)st.st_ino;
	ld->new_mtime = mtime;
	if (ld->incremental && (uint64_t)st.st_size == from) {
		ld->result = LOAD_UNCHANGED;
		close(fd);
		return;
	}
	struct symtab add = { 0 };
	uint64_t held = ld->incremental ? symtab_bytes(&ld->base) : 0;
	uint64_t limit = ld->limit > held ? ld->limit - held : 0;
	ld->new_off = read_lines(ld, fd, from, (uint64_t)st.st_size, &add,
				 limit);
	ld->new_tail_len = (uint8_t)(ld->new_off < PERFMAP_TAIL
					     ? ld->new_off : PERFMAP_TAIL);
	if (!read_at(fd, ld->new_tail, ld->new_tail_len,
		     ld->new_off - ld->new_tail_len))
		ld->new_tail_len = 0;	/* next time read it whole */
	close(fd);
	symtab_finish_newest(&add);
	if (!ld->incremental) {
		ld->syms = add;
		ld->result = LOAD_TABLE;
	} else if (!add.n) {
		ld->result = LOAD_MOVED;
	} else {
		ld->result = symtab_merge(&ld->syms, &ld->base, &add) == 0
				     ? LOAD_TABLE : LOAD_MOVED;
		symtab_free(&add);
	}
}

static void free_load(struct perfmap_load *ld)
{
	symtab_free(&ld->syms);
	free(ld);
}

static void *loader_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&L.lock);
	while (!L.stopping) {
		struct perfmap_load *ld = L.head;
		if (!ld) {
			pthread_cond_wait(&L.cond, &L.lock);
			continue;
		}
		L.head = ld->next;
		if (!L.head)
			L.tail = NULL;
		ld->running = true;
		pthread_mutex_unlock(&L.lock);
		run_load(ld);
		pthread_mutex_lock(&L.lock);
		L.st.loads++;
		L.st.incremental += ld->incremental;
		L.st.bytes_read += ld->bytes_read;
		if (ld->abandoned) {
			symtab_free(&ld->base);	/* its process left it */
			free_load(ld);
		} else {
			__atomic_store_n(&ld->done, true, __ATOMIC_RELEASE);
		}
		pthread_cond_broadcast(&L.cond);
	}
	pthread_mutex_unlock(&L.lock);
	return NULL;
}

/* L.lock held. false when no thread could be started. */
static bool start_loader(void)
{
	if (L.started || L.failed)
		return L.started;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&L.cond, &ca);
	pthread_condattr_destroy(&ca);
	/* the statistics timer must interrupt the sample thread, not this */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	L.started = pthread_create(&L.thread, NULL, loader_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	L.failed = !L.started;
	return L.started;
}

void perfmap_loader_stop(void)
{
	pthread_mutex_lock(&L.lock);
	bool started = L.started;
	L.stopping = true;
	if (started)
		pthread_cond_broadcast(&L.cond);
	pthread_mutex_unlock(&L.lock);
	if (started) {
		pthread_join(L.thread, NULL);
		pthread_cond_destroy(&L.cond);
	}
	while (L.head) {
		struct perfmap_load *ld = L.head;
		L.head = ld->next;
		free_load(ld);
	}
	L.tail = NULL;
	/* a new unwinder (the fuzz targets make one per input) starts
	 * the thread again */
	L.started = L.failed = L.stopping = false;
}

/* ---- the sample thread's side -------------------------------------------- */

static void submit(struct perfmap *m, uint32_t pid, uint64_t now_ns)
{
	struct perfmap_load *ld = calloc(1, sizeof(*ld));
	m->tried = true;
	m->checked_ns = now_ns;
	m->waited = false;
	if (!ld)
		return;
	ld->pid = pid;
	ld->base = m->syms;
	ld->limit = m->budget ? m->budget->per_proc : UINT64_MAX;
	ld->whole = m->reread || !m->tail_len;
	ld->dev = m->dev;
	ld->ino = m->ino;
	ld->off = m->off;
	ld->tail_len = m->tail_len;
	memcpy(ld->tail, m->tail, m->tail_len);
	ld->start_ns = m->start_ns;
	if (m->cred) {
		ld->cred = *m->cred;
		ld->have_cred = true;
	}
	m->reread = false;
	pthread_mutex_lock(&L.lock);
	if (!start_loader()) {
		pthread_mutex_unlock(&L.lock);
		free(ld);
		return;
	}
	if (L.tail)
		L.tail->next = ld;
	else
		L.head = ld;
	L.tail = ld;
	pthread_cond_broadcast(&L.cond);
	pthread_mutex_unlock(&L.lock);
	m->load = ld;
}

/* Takes a finished load into m. */
static void adopt(struct perfmap *m)
{
	struct perfmap_load *ld = m->load;
	m->load = NULL;
	m->read_rt_ns = ld->read_rt_ns;
	if (ld->start_ns)
		m->start_ns = ld->start_ns;
	if (ld->seen_alive) {
		if (!m->cred)
			m->cred = malloc(sizeof(*m->cred));
		if (m->cred)
			*m->cred = ld->seen_cred;
	}
	if (ld->result >= LOAD_MOVED) {
		m->dev = ld->new_dev;
		m->ino = ld->new_ino;
		m->mtime_ns = ld->new_mtime;
		m->off = ld->new_off;
		m->tail_len = ld->new_tail_len;
		memcpy(m->tail, ld->new_tail, ld->new_tail_len);
		m->bad_lines += ld->bad;
		if (ld->cut && !m->cut) {
			L.st.cut++;
			if (m->budget)
				m->budget->full[BUDGET_PERFMAP]++;
		}
		m->cut = ld->cut;
	}
	if (ld->result == LOAD_TABLE) {
		uint64_t bytes = symtab_bytes(&ld->syms);
		symtab_free(&m->syms);
		m->syms = ld->syms;
		ld->syms = (struct symtab){ 0 };
		if (m->budget)
			budget_charge(m->budget, BUDGET_PERFMAP,
				      (int64_t)bytes - (int64_t)m->bytes);
		m->bytes = bytes;
	}
	free_load(ld);
}

static bool load_done(const struct perfmap_load *ld)
{
	return __atomic_load_n(&ld->done, __ATOMIC_ACQUIRE);
}

/* Waits for m's load until deadline_ns, once per load; true when it was
 * taken in. */
static bool wait_load(struct perfmap *m, uint64_t deadline_ns)
{
	if (!m->load)
		return false;
	if (!load_done(m->load)) {
		uint64_t now = cpa_mono_ns(), until = wait_until(now, deadline_ns);
		if (m->waited || until <= now)
			return false;
		m->waited = true;
		L.st.waits++;
		struct timespec ts = cpa_timespec(until);
		pthread_mutex_lock(&L.lock);
		while (!m->load->done &&
		       pthread_cond_timedwait(&L.cond, &L.lock, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&L.lock);
		waited(now);
		if (!load_done(m->load)) {
			L.st.timeouts++;
			return false;
		}
	}
	adopt(m);
	return true;
}

int perfmap_refresh(struct perfmap *m, uint32_t pid, uint64_t now_ns)
{
	if (m->load && load_done(m->load))
		adopt(m);
	bool first = !m->tried;
	if (!m->load && (first || m->reread ||
			 (!m->cut && now_ns - m->checked_ns >= REFRESH_NS)))
		submit(m, pid, now_ns);
	/* a process's first map, and one a JVM has just written, are
	 * waited for as an ELF object is */
	if (m->load && (first || m->load->whole))
		wait_load(m, now_ns + L.wait_ns);
	return m->syms.n ? 0 : -1;
}

bool perfmap_missed(struct perfmap *m, uint32_t pid, uint64_t now_ns,
		    uint64_t sample_rt_ns, uint64_t deadline_ns)
{
	if (m->load && load_done(m->load)) {
		adopt(m);
		return true;
	}
	/* read since the sample was taken: the line was not there then; a
	 * process with no map (or one refused) is left to the refresh */
	if (!m->load && !m->cut && m->off && m->read_rt_ns < sample_rt_ns &&
	    now_ns - m->checked_ns >= MISS_MIN_NS)
		submit(m, pid, now_ns);
	return wait_load(m, deadline_ns);
}

void perfmap_load_abandon(struct perfmap *m)
{
	struct perfmap_load *ld = m->load;
	if (!ld)
		return;
	m->load = NULL;
	pthread_mutex_lock(&L.lock);
	if (ld->done) {
		free_load(ld);
	} else if (ld->running) {
		/* the loader reads the table: it is the load's to free */
		ld->abandoned = true;
		m->syms = (struct symtab){ 0 };
	} else {
		struct perfmap_load **pp = &L.head, *prev = NULL;
		while (*pp && *pp != ld) {
			prev = *pp;
			pp = &(*pp)->next;
		}
		if (*pp) {
			*pp = ld->next;
			if (L.tail == ld)
				L.tail = prev;
		}
		free_load(ld);
	}
	pthread_mutex_unlock(&L.lock);
}

void perfmap_stats(struct perfmap_stats *st)
{
	pthread_mutex_lock(&L.lock);
	*st = L.st;
	pthread_mutex_unlock(&L.lock);
}
