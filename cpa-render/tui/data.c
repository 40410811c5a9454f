/* SPDX-License-Identifier: MIT */
/*
 * The samples the terminal UI shows, and where they come from. The UI
 * never opens a store: it runs the query command it was given (cpa-query
 * with the store and its filters) with --from/--to and --format stream
 * for each range it does not hold yet, and keeps every sample with its
 * window's time. Ids of each stream are mapped to the UI's own tables, so
 * ranges fetched one after another share strings, stacks and label sets.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "symstream.h"
#include "timeparse.h"
#include "tui.h"

void tui_data_init(struct tui_data *d, char **query)
{
	memset(d, 0, sizeof(*d));
	d->query = query;
	d->strs = cpa_strtab_new();
	cpa_dict_init(&d->dict);
	d->stacks = cpa_stacktab_new();
	d->labelsets = cpa_stacktab_new();
	d->interval_ns = CPA_NSEC_PER_SEC;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	d->ncpu = n > 0 ? (unsigned)n : 1;
}

void tui_data_free(struct tui_data *d)
{
	cpa_strtab_free(d->strs);
	cpa_dict_free(&d->dict);
	cpa_stacktab_free(d->stacks);
	cpa_stacktab_free(d->labelsets);
	free(d->stack_flags);
	free(d->s);
	free(d->loaded);
	for (size_t i = 0; i < d->nmeta; i++)
		free(d->meta[i]);
	free(d->meta);
	memset(d, 0, sizeof(*d));
}

const uint32_t *tui_data_labelset(const struct tui_data *d, uint32_t ls)
{
	uint32_t n;
	return cpa_stacktab_get(d->labelsets, ls, &n);
}

bool tui_data_kernel_leaf(struct tui_data *d, uint32_t stack)
{
	CPA_GROW_ZERO(d->stack_flags, d->cap_stack_flags, (size_t)stack + 1);
	uint8_t *f = &d->stack_flags[stack];
	if (!(*f & STACK_KNOWN)) {
		uint32_t n, len = 0;
		const uint32_t *fr = cpa_stacktab_get(d->stacks, stack, &n);
		const char *s = n ? cpa_strtab_get(d->strs, fr[n - 1], &len)
				  : NULL;
		*f = STACK_KNOWN;
		if (s && len >= 4 && !memcmp(s + len - 4, "_[k]", 4))
			*f |= STACK_KERNEL_LEAF;
	}
	return *f & STACK_KERNEL_LEAF;
}

static uint32_t intern_string(struct tui_data *d, const char *s, uint32_t len)
{
	bool is_new;
	if (!len)
		return 0;
	uint32_t id = cpa_strtab_intern(d->strs, s, len, &is_new);
	if (is_new)
		cpa_dict_add_string(&d->dict, s, len);	/* same id */
	return id;
}

/* Per stream: its ids to ours. */
struct idmap {
	uint32_t *str, *stk;
	size_t cap_str, cap_stk;
	uint32_t *frames;
	size_t cap_frames;
};

static uint32_t map_string(struct tui_data *d, struct idmap *m,
			   const struct cpa_dict *sd, uint32_t id)
{
	if (!id)
		return 0;
	CPA_GROW_ZERO(m->str, m->cap_str, (size_t)id + 1);
	if (!m->str[id]) {
		uint32_t len;
		const char *s = cpa_dict_string(sd, id, &len);
		m->str[id] = intern_string(d, s, len);
	}
	return m->str[id];
}

static uint32_t map_stack(struct tui_data *d, struct idmap *m,
			  const struct cpa_dict *sd, uint32_t id)
{
	CPA_GROW_ZERO(m->stk, m->cap_stk, (size_t)id + 1);
	if (!m->stk[id]) {
		uint32_t n;
		bool is_new;
		const uint32_t *f = cpa_dict_stack(sd, id, &n);
		CPA_GROW(m->frames, m->cap_frames, (size_t)n + 1);
		for (uint32_t i = 0; i < n; i++)
			m->frames[i] = map_string(d, m, sd, f[i]);
		m->stk[id] = cpa_stacktab_intern(d->stacks, m->frames, n,
						 &is_new);
	}
	return m->stk[id];
}

static void idmap_reset(struct idmap *m)
{
	if (m->str)
		memset(m->str, 0, m->cap_str * sizeof(*m->str));
	if (m->stk)
		memset(m->stk, 0, m->cap_stk * sizeof(*m->stk));
}

/* Keeps "key value", the newest value of each key. */
static void meta_keep(struct tui_data *d, const struct cpa_meta *mt)
{
	char *kv = cpa_malloc(mt->key_len + mt->value_len + 2);
	memcpy(kv, mt->key, mt->key_len);
	kv[mt->key_len] = ' ';
	memcpy(kv + mt->key_len + 1, mt->value, mt->value_len);
	kv[mt->key_len + 1 + mt->value_len] = '\0';
	/* the store's bytes: only printable ones reach the screen */
	for (char *c = kv; *c; c++)
		if ((unsigned char)*c < 32 || (unsigned char)*c > 126)
			*c = '?';
	for (size_t i = 0; i < d->nmeta; i++)
		if (!strncmp(d->meta[i], kv, mt->key_len + 1)) {
			free(d->meta[i]);
			d->meta[i] = kv;
			return;
		}
	if (d->nmeta >= 64) {	/* what a screen shows */
		free(kv);
		return;
	}
	d->meta = cpa_realloc(d->meta, (d->nmeta + 1) * sizeof(*d->meta));
	d->meta[d->nmeta++] = kv;
}

/* A stream being read: its ids to ours. */
struct stream_read {
	struct tui_data *d;
	struct idmap m;
	long added;
};

static int on_meta(void *ctx, const struct cpa_meta *mt, char *err,
		   size_t errlen)
{
	struct tui_data *d = ((struct stream_read *)ctx)->d;
	uint64_t n;

	(void)err, (void)errlen;
	meta_keep(d, mt);
	if (cpa_meta_frequency(mt, &n))
		d->period_ns = CPA_NSEC_PER_SEC / n;
	else if (cpa_meta_is(mt, CPA_META_INTERVAL_NS) && cpa_meta_u64(mt, &n))
		d->interval_ns = n ? n : d->interval_ns;
	else if (cpa_meta_is(mt, CPA_META_CPUS) && cpa_meta_u64(mt, &n) &&
		 n > 0 && n <= CPA_CPUSET_MAX)
		d->ncpu = (unsigned)n;
	return 0;
}

static int on_reset(void *ctx)
{
	idmap_reset(&((struct stream_read *)ctx)->m);
	return 0;
}

static int on_sample(void *ctx, const struct cpa_dict *sd,
		     const struct cpa_sample *s, uint64_t offset, char *err,
		     size_t errlen)
{
	struct stream_read *rd = ctx;
	struct tui_data *d = rd->d;
	struct idmap *m = &rd->m;

	(void)offset, (void)err, (void)errlen;
	if (!s->weight || s->kind >= CPA_KIND_COUNT)
		return 0;
	uint32_t ls[LS_N] = {
		[LS_KIND] = s->kind, [LS_PID] = s->pid,
		[LS_TID] = s->tid, [LS_CPU] = s->cpu,
		[LS_COMM] = map_string(d, m, sd, s->comm_id),
		[LS_THREAD] = map_string(d, m, sd, s->thread_id),
		[LS_CONTAINER] = map_string(d, m, sd, s->container_id),
		[LS_ENV] = map_string(d, m, sd, s->env_id),
		[LS_FREE] = !!(s->flags & CPA_FLAG_FREE),
	};
	bool is_new;
	CPA_GROW(d->s, d->cap, d->n + 1);
	d->s[d->n++] = (struct tui_sample){
		.time_ns = s->time_ns, .weight = s->weight,
		.ls = cpa_stacktab_intern(d->labelsets, ls, LS_N, &is_new),
		.stack = map_stack(d, m, sd, s->stack_id),
	};
	d->kinds |= 1u << s->kind;
	rd->added++;
	return 0;
}

static const struct cpa_symstream_handler stream_handler = {
	.sample = on_sample, .meta = on_meta, .reset = on_reset,
};

static int by_time(const void *a, const void *b)
{
	const struct tui_sample *x = a, *y = b;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/* Keeps d->s in time order after samples [old, n) were appended, so a
 * view reads only its range: the new run is sorted, then merged. */
static void keep_order(struct tui_data *d, size_t old)
{
	size_t n = d->n;
	bool sorted = true;
	for (size_t i = old + 1; i < n && sorted; i++)
		sorted = d->s[i - 1].time_ns <= d->s[i].time_ns;
	if (!sorted)
		qsort(d->s + old, n - old, sizeof(*d->s), by_time);
	if (!old || old == n || d->s[old - 1].time_ns <= d->s[old].time_ns)
		return;
	struct tui_sample *m = cpa_malloc(n * sizeof(*m));
	size_t i = 0, j = old, k = 0;
	while (i < old && j < n)
		m[k++] = d->s[j].time_ns < d->s[i].time_ns ? d->s[j++] : d->s[i++];
	while (i < old)
		m[k++] = d->s[i++];
	while (j < n)
		m[k++] = d->s[j++];
	memcpy(d->s, m, n * sizeof(*m));
	free(m);
}

static long read_stream(struct tui_data *d, int fd, const char *name)
{
	struct cpa_reader r;
	struct cpa_dict sd;
	struct stream_read rd = { .d = d };
	size_t old = d->n;

	if (cpa_reader_init(&r, fd, name, NULL, 0) < 0) {
		snprintf(d->err, sizeof(d->err), "%s", r.err);
		cpa_reader_free(&r);
		return -1;
	}
	cpa_dict_init(&sd);
	if (cpa_symstream_read(&r, &sd, &stream_handler, &rd, d->err,
			       sizeof(d->err)) < 0)
		rd.added = -1;
	keep_order(d, old);
	free(rd.m.str);
	free(rd.m.stk);
	free(rd.m.frames);
	cpa_dict_free(&sd);
	cpa_reader_free(&r);
	return rd.added;
}

int tui_data_read_stream(struct tui_data *d, int fd, const char *name)
{
	if (read_stream(d, fd, name) < 0)
		return -1;
	d->first_ns = UINT64_MAX;
	d->end_ns = 0;
	for (size_t i = 0; i < d->n; i++) {
		if (d->s[i].time_ns < d->first_ns)
			d->first_ns = d->s[i].time_ns;
		if (d->s[i].time_ns + d->interval_ns > d->end_ns)
			d->end_ns = d->s[i].time_ns + d->interval_ns;
	}
	if (!d->n)
		d->first_ns = d->end_ns = 0;
	CPA_GROW(d->loaded, d->cap_loaded, 1);
	d->loaded[0] = (struct tui_span){ 0, UINT64_MAX };
	d->nloaded = 1;
	return 0;
}

/*
 * Runs the query command with extra arguments, its output to *out_fd,
 * its errors into a temporary file that finish_query() reads.
 */
struct child {
	pid_t pid;
	int out, errfd;
};

static int start_query(struct tui_data *d, const char *const *extra,
		       struct child *c)
{
	size_t nq = 0, ne = 0;
	while (d->query[nq])
		nq++;
	while (extra[ne])
		ne++;
	char **argv = cpa_malloc((nq + ne + 1) * sizeof(*argv));
	memcpy(argv, d->query, nq * sizeof(*argv));
	memcpy(argv + nq, extra, ne * sizeof(*argv));
	argv[nq + ne] = NULL;

	int p[2];
	FILE *ef = tmpfile();
	if (!ef || pipe2(p, O_CLOEXEC) < 0) {
		snprintf(d->err, sizeof(d->err), "%s: %s", d->query[0],
			 strerror(errno));
		if (ef)
			fclose(ef);
		free(argv);
		return -1;
	}
	c->errfd = dup(fileno(ef));
	fclose(ef);
	c->pid = fork();
	if (c->pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		dup2(devnull, 0);
		dup2(p[1], 1);
		dup2(c->errfd, 2);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	free(argv);
	close(p[1]);
	if (c->pid < 0) {
		snprintf(d->err, sizeof(d->err), "fork: %s", strerror(errno));
		close(p[0]);
		close(c->errfd);
		return -1;
	}
	c->out = p[0];
	return 0;
}

/* Waits for the query; on failure its first line of errors goes into
 * d->err. Returns its exit status, -1 when it was killed. */
static int finish_query(struct tui_data *d, struct child *c)
{
	int st;
	close(c->out);
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (rc != 0) {
		char line[sizeof(d->err)] = "";
		ssize_t n = pread(c->errfd, line, sizeof(line) - 1, 0);
		if (n > 0) {
			line[n] = '\0';
			line[strcspn(line, "\n")] = '\0';
			snprintf(d->err, sizeof(d->err), "%s", line);
		} else {
			snprintf(d->err, sizeof(d->err), "%s exited with "
				 "status %d", d->query[0], rc);
		}
	}
	close(c->errfd);
	return rc;
}

int tui_data_extent(struct tui_data *d)
{
	static const char *const list[] = { "--list", NULL };
	struct child c;
	int ret = 1;

	if (start_query(d, list, &c) < 0)
		return -1;
	FILE *f = fdopen(dup(c.out), "r");
	char *line = NULL;
	size_t cap = 0;
	while (f && getline(&line, &cap, f) > 0) {
		/* "range 2026-11-30 10:00:00.000 .. 2026-11-30 11:00:00.000
		 * (1h0m0s, N bytes)", in local time as cpa-query prints it */
		char *dots = strstr(line, " .. "), *paren;
		uint64_t from, to;
		if (strncmp(line, "range ", 6) || !dots ||
		    !(paren = strstr(dots, " (")))
			continue;
		*dots = *paren = '\0';
		if (cpa_parse_time(line + 6, 0, &from) == 0 &&
		    cpa_parse_time(dots + 4, 0, &to) == 0 && from < to) {
			d->first_ns = from;
			d->end_ns = to;
			ret = 0;
		}
	}
	free(line);
	if (f)
		fclose(f);
	if (finish_query(d, &c) != 0)
		return -1;
	return ret;
}

static void add_loaded(struct tui_data *d, uint64_t from, uint64_t to)
{
	CPA_GROW(d->loaded, d->cap_loaded, d->nloaded + 1);
	size_t i = 0;
	while (i < d->nloaded && d->loaded[i].from < from)
		i++;
	memmove(d->loaded + i + 1, d->loaded + i,
		(d->nloaded - i) * sizeof(*d->loaded));
	d->loaded[i] = (struct tui_span){ from, to };
	d->nloaded++;
	/* join neighbours that touch */
	size_t o = 0;
	for (size_t k = 1; k < d->nloaded; k++) {
		if (d->loaded[k].from <= d->loaded[o].to) {
			if (d->loaded[k].to > d->loaded[o].to)
				d->loaded[o].to = d->loaded[k].to;
		} else {
			d->loaded[++o] = d->loaded[k];
		}
	}
	d->nloaded = o + 1;
}

/* "@SECONDS.NANOSECONDS", which cpa-query takes as a time. */
static void epoch_arg(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "@%" PRIu64 ".%09" PRIu64,
		 (uint64_t)(ns / CPA_NSEC_PER_SEC),
		 (uint64_t)(ns % CPA_NSEC_PER_SEC));
}

static long fetch(struct tui_data *d, uint64_t from, uint64_t to)
{
	char a[40], b[40];
	const char *args[] = { "--format", "stream", "--from", a, "--to", b,
			       NULL };
	struct child c;

	epoch_arg(a, sizeof(a), from);
	if (to == UINT64_MAX)
		args[4] = NULL;
	else
		epoch_arg(b, sizeof(b), to);
	if (start_query(d, args, &c) < 0)
		return -1;
	long n = read_stream(d, c.out, d->query[0]);
	if (finish_query(d, &c) != 0)
		return -1;
	return n;
}

int tui_data_sums_start(struct tui_data *d, uint64_t from, uint64_t to,
			uint64_t every_ns, const char *labels,
			const char *stacks, uint32_t prune, bool callee)
{
	char a[40], b[40], every[32], cut[16];
	const char *args[] = { "--format", "stream", "--from", a, "--to", b,
			       "--split-every", every, "--labels", labels,
			       NULL, NULL, NULL, NULL, NULL, NULL };
	struct child c;

	/* new tables: what a long range held before is not kept */
	char **query = d->query;
	tui_data_free(d);
	tui_data_init(d, query);
	epoch_arg(a, sizeof(a), from);
	epoch_arg(b, sizeof(b), to);
	snprintf(every, sizeof(every), "%" PRIu64 "ns", every_ns);
	snprintf(cut, sizeof(cut), "%" PRIu32, prune);
	size_t at = 10;
	if (stacks) {
		args[at++] = "--stacks";
		args[at++] = stacks;
	}
	if (prune) {
		args[at++] = "--prune";
		args[at++] = cut;
		if (callee)
			args[at++] = "--callee";
	}
	if (start_query(d, args, &c) < 0)
		return -1;
	d->pending_pid = c.pid;
	d->pending_out = c.out;
	d->pending_err = c.errfd;
	d->first_ns = from;
	d->end_ns = to;
	return 0;
}

int tui_data_sums_finish(struct tui_data *d)
{
	struct child c = { d->pending_pid, d->pending_out, d->pending_err };
	d->pending_pid = 0;
	long n = read_stream(d, c.out, d->query[0]);
	if (finish_query(d, &c) != 0 || n < 0)
		return -1;
	add_loaded(d, d->first_ns, d->end_ns);
	return 0;
}

int tui_data_need(struct tui_data *d, uint64_t from, uint64_t to)
{
	if (!d->query || from >= to)
		return 0;
	/* Windows are selected when they overlap the range: align it to
	 * whole windows, so a window is never fetched twice. */
	from -= from % d->interval_ns;
	if (to % d->interval_ns)
		to += d->interval_ns - to % d->interval_ns;
	/* the gaps first: fetching changes the list */
	struct tui_span gaps[64];
	size_t ng = 0;
	uint64_t at = from;
	for (size_t i = 0; i < d->nloaded && at < to && ng < 63; i++) {
		if (d->loaded[i].to <= at)
			continue;
		if (d->loaded[i].from > at)
			gaps[ng++] = (struct tui_span){ at, d->loaded[i].from < to
						 ? d->loaded[i].from : to };
		at = d->loaded[i].to;
	}
	if (at < to)
		gaps[ng++] = (struct tui_span){ at, to };
	for (size_t g = 0; g < ng; g++) {
		if (fetch(d, gaps[g].from, gaps[g].to) < 0)
			return -1;
		add_loaded(d, gaps[g].from, gaps[g].to);
	}
	return 0;
}

long tui_data_follow(struct tui_data *d)
{
	if (!d->query)
		return 0;
	/* Windows the store commits after the newest the UI holds: the
	 * store writes a window once, when it is closed. */
	uint64_t from = d->end_ns;
	for (size_t i = 0; i < d->nloaded; i++)
		if (d->loaded[i].to != UINT64_MAX && d->loaded[i].to > from)
			from = d->loaded[i].to;
	size_t before = d->n;
	long n = fetch(d, from, UINT64_MAX);
	if (n < 0)
		return -1;
	uint64_t newest = from;
	for (size_t i = before; i < d->n; i++)
		if (d->s[i].time_ns + d->interval_ns > newest)
			newest = d->s[i].time_ns + d->interval_ns;
	add_loaded(d, from, newest);
	if (newest > d->end_ns)
		d->end_ns = newest;
	if (!d->first_ns && n > 0)
		d->first_ns = d->s[before].time_ns;
	return n;
}
