/* SPDX-License-Identifier: MIT */
/*
 * gen-cpastore: writes a store as ByteDance's continue-profiling-agent
 * (CPA) writes one, from its format description alone (docs/store-format.md
 * quotes it): for the tests of cpa-query's CPA reader, which shares no
 * code with this writer.
 *
 *   gen-cpastore ROOT < SPEC        a store described line by line
 *   gen-cpastore --stream ROOT < S  the windows of a cpa stream (cpa-query
 *                                   --format stream), as CPA would have
 *                                   stored the same samples
 *
 * SPEC lines (fields of an entry separated by tabs):
 *   conf KEY=VALUE...          conf of the days that follow (freq=49 ...)
 *   day NAME                   a day directory ROOT/NAME (cpa_YYMMDD...)
 *   record START_MS END_MS     a record of the day, flushed on its own
 *   COUNT COMM GROUP_COMM CGROUP CPU PID ENV FRAME;FRAME;...
 *                              an entry of the record (tab-separated)
 *   guard MS                   CPA's zero-length guard record
 *   tear BYTES                 cut BYTES off the end of the day's stack.bin
 *
 * Each record is flushed as CPA flushes it: the new strmap lines, the new
 * idsmap lines, then the record, each file's bytes one zstd frame.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "buf.h"
#include "log.h"
#include "symstream.h"

struct day {
	char dir[4096];
	FILE *strmap, *idsmap, *stack;
	/* interned strings and id lists, linear: fixtures are small */
	char **strs;
	size_t nstrs, capstrs, dumped_strs;
	char **ids;		/* "1;2;3;" */
	size_t nids, capids, dumped_ids;
	struct cpa_buf rec;	/* the record being built */
	uint64_t nentries;
	uint64_t start_ms, end_ms;
	bool open_rec;
};

static char conf_text[2048] = "version: 1.0.0\ncpu_num: 2\nfreq: 49\n"
			      "record_interval: 1\npersistent_day: 7\n"
			      "record_env_name: POD_NAME\nkernel_stack: 0\n"
			      "stack_size: 8192\n";
static const char *root;

static void die(const char *what)
{
	fprintf(stderr, "gen-cpastore: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* One zstd frame of buf appended to f, as CPA's flush ends its stream. */
static void frame(FILE *f, const void *buf, size_t len)
{
	if (!len)
		return;
	size_t bound = ZSTD_compressBound(len);
	void *out = cpa_malloc(bound);
	size_t n = ZSTD_compress(out, bound, buf, len, 1);
	if (ZSTD_isError(n)) {
		fprintf(stderr, "gen-cpastore: zstd: %s\n",
			ZSTD_getErrorName(n));
		exit(1);
	}
	if (fwrite(out, 1, n, f) != n || fflush(f))
		die("write");
	free(out);
}

static uint32_t intern(char ***v, size_t *n, size_t *cap, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return (uint32_t)i + 1;
	CPA_GROW(*v, *cap, *n + 1);
	(*v)[(*n)++] = cpa_strdup(s);
	return (uint32_t)*n;
}

static FILE *open_in(const struct day *d, const char *name)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", d->dir, name);
	FILE *f = fopen(path, "wb");
	if (!f)
		die(path);
	return f;
}

static void day_close(struct day *d)
{
	if (!d->dir[0])
		return;
	fclose(d->strmap);
	fclose(d->idsmap);
	fclose(d->stack);
	for (size_t i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
	for (size_t i = 0; i < d->nids; i++)
		free(d->ids[i]);
	free(d->strs);
	free(d->ids);
	cpa_buf_free(&d->rec);
	memset(d, 0, sizeof(*d));
}

static void day_open(struct day *d, const char *name)
{
	day_close(d);
	snprintf(d->dir, sizeof(d->dir), "%s/%s", root, name);
	if (mkdir(d->dir, 0750) < 0 && errno != EEXIST)
		die(d->dir);
	FILE *c = open_in(d, "conf");
	fputs(conf_text, c);
	fclose(c);
	d->strmap = open_in(d, "strmap");
	d->idsmap = open_in(d, "idsmap");
	d->stack = open_in(d, "stack.bin");
}

static void put(struct cpa_buf *b, uint64_t v, unsigned n)
{
	uint8_t x[8];
	for (unsigned i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	cpa_buf_add(b, x, n);
}

/* Flushes the record: new strings, new id lists, then the record. */
static void record_end(struct day *d)
{
	if (!d->open_rec)
		return;
	struct cpa_buf t = {0};
	char line[8192];
	for (; d->dumped_strs < d->nstrs; d->dumped_strs++) {
		int n = snprintf(line, sizeof(line), "%s %zu\n",
				 d->strs[d->dumped_strs], d->dumped_strs + 1);
		cpa_buf_add(&t, line, (size_t)n);
	}
	frame(d->strmap, t.p, t.len);
	t.len = 0;
	for (; d->dumped_ids < d->nids; d->dumped_ids++) {
		int n = snprintf(line, sizeof(line), "%s %zu\n",
				 d->ids[d->dumped_ids], d->dumped_ids + 1);
		cpa_buf_add(&t, line, (size_t)n);
	}
	frame(d->idsmap, t.p, t.len);
	t.len = 0;
	static const uint8_t head[2] = {0xFA, 0xFB}, foot[2] = {0xFC, 0xFD};
	cpa_buf_add(&t, head, 2);
	put(&t, d->start_ms, 8);
	put(&t, d->end_ms, 8);
	put(&t, d->nentries, 8);
	cpa_buf_add(&t, d->rec.p, d->rec.len);
	cpa_buf_add(&t, foot, 2);
	frame(d->stack, t.p, t.len);
	cpa_buf_free(&t);
	d->rec.len = 0;
	d->nentries = 0;
	d->open_rec = false;
}

static void record_begin(struct day *d, uint64_t start_ms, uint64_t end_ms)
{
	record_end(d);
	d->start_ms = start_ms;
	d->end_ms = end_ms;
	d->open_rec = true;
}

/* CPA's metadata string: comm and group comm, 15 bytes each, padded. */
static void meta(char *out, size_t len, const char *comm, const char *group,
		 unsigned long long cg, unsigned cpu, unsigned pid,
		 const char *env)
{
	snprintf(out, len, "%-15.15s%-15.15s-%llu-%u-%u|%s", comm, group, cg,
		 cpu, pid, env && *env ? env : "SYSTEM");
}

/* An entry: its metadata, then its frames root first. */
static void entry(struct day *d, uint64_t count, const char *meta_str,
		  const char *const *frames, size_t nframes)
{
	char list[16384];
	size_t at = 0;
	uint32_t id = intern(&d->strs, &d->nstrs, &d->capstrs, meta_str);
	at += (size_t)snprintf(list + at, sizeof(list) - at, "%u;", id);
	for (size_t i = 0; i < nframes && at < sizeof(list) - 16; i++) {
		id = intern(&d->strs, &d->nstrs, &d->capstrs, frames[i]);
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%u;",
				       id);
	}
	uint32_t ids = intern(&d->ids, &d->nids, &d->capids, list);
	put(&d->rec, ids, 4);
	put(&d->rec, count, 8);
	d->nentries++;
}

static void tear(struct day *d, long bytes)
{
	record_end(d);
	fflush(d->stack);
	char path[4200];
	snprintf(path, sizeof(path), "%s/stack.bin", d->dir);
	struct stat st;
	if (stat(path, &st) < 0 || truncate(path, st.st_size > bytes
						   ? st.st_size - bytes : 0) < 0)
		die(path);
	fseek(d->stack, 0, SEEK_END);
}

static int spec(void)
{
	struct day d = {0};
	char line[16384];
	unsigned long n = 0;
	while (fgets(line, sizeof(line), stdin)) {
		n++;
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		unsigned long long a, b;
		char name[256];
		if (!strncmp(line, "conf ", 5)) {
			size_t at = 0;
			char *save, *copy = cpa_strdup(line + 5);
			for (char *t = strtok_r(copy, " ", &save); t;
			     t = strtok_r(NULL, " ", &save)) {
				char *eq = strchr(t, '=');
				if (!eq)
					continue;
				*eq = 0;
				at += (size_t)snprintf(conf_text + at,
						       sizeof(conf_text) - at,
						       "%s: %s\n", t, eq + 1);
			}
			free(copy);
		} else if (sscanf(line, "day %255s", name) == 1) {
			record_end(&d);
			day_open(&d, name);
		} else if (sscanf(line, "record %llu %llu", &a, &b) == 2) {
			record_begin(&d, a, b);
		} else if (sscanf(line, "guard %llu", &a) == 1) {
			record_begin(&d, a, a);
			record_end(&d);
		} else if (sscanf(line, "tear %llu", &a) == 1) {
			tear(&d, (long)a);
		} else {
			char *f[8];
			size_t nf = 0;
			char *p = line;
			for (; nf < 8 && p; nf++) {
				f[nf] = p;
				p = strchr(p, '\t');
				if (p)
					*p++ = 0;
			}
			if (nf != 8 || !d.open_rec) {
				fprintf(stderr, "gen-cpastore: line %lu: not "
					"an entry of a record\n", n);
				return 1;
			}
			char m[512];
			meta(m, sizeof(m), f[1], f[2], strtoull(f[3], NULL, 10),
			     (unsigned)atoi(f[4]), (unsigned)atoi(f[5]), f[6]);
			const char *frames[512];
			size_t k = 0;
			char *save;
			for (char *t = strtok_r(f[7], ";", &save); t && k < 512;
			     t = strtok_r(NULL, ";", &save))
				frames[k++] = t;
			entry(&d, strtoull(f[0], NULL, 10), m, frames, k);
		}
	}
	record_end(&d);
	day_close(&d);
	return 0;
}

/* ---- --stream: the windows of a cpa stream --------------------------------- */

struct from_stream {
	struct day d;
	char day_name[32];
	uint64_t day_ns, window_ns, interval_ns;
	const struct cpa_labels *labels;
};

static const char *str_of(const struct cpa_dict *dict, uint32_t id)
{
	const char *s = id ? cpa_dict_string(dict, id, NULL) : NULL;
	return s ? s : "";
}

static int on_meta(void *ctx, const struct cpa_meta *m, char *err,
		   size_t errlen)
{
	struct from_stream *fs = ctx;
	(void)err;
	(void)errlen;
	if (m->key_len == strlen(CPA_META_INTERVAL_NS) &&
	    !memcmp(m->key, CPA_META_INTERVAL_NS, m->key_len)) {
		char v[32];
		snprintf(v, sizeof(v), "%.*s", (int)m->value_len, m->value);
		fs->interval_ns = strtoull(v, NULL, 10);
	}
	return 0;
}

static int on_sample(void *ctx, const struct cpa_dict *dict,
		     const struct cpa_sample *s, uint64_t offset, char *err,
		     size_t errlen)
{
	struct from_stream *fs = ctx;
	(void)offset;
	(void)err;
	(void)errlen;
	uint64_t interval = fs->interval_ns ? fs->interval_ns : 1000000000ull;
	/* the local day of the window: its directory */
	time_t t = (time_t)(s->time_ns / 1000000000ull);
	struct tm tm;
	localtime_r(&t, &tm);
	char name[32];
	snprintf(name, sizeof(name), "cpa_%02d%02d%02d", tm.tm_year % 100,
		 tm.tm_mon + 1, tm.tm_mday);
	if (strcmp(name, fs->day_name)) {
		record_end(&fs->d);
		day_open(&fs->d, name);
		snprintf(fs->day_name, sizeof(fs->day_name), "%s", name);
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		tm.tm_isdst = -1;
		fs->day_ns = (uint64_t)mktime(&tm) * 1000000000ull;
		fs->window_ns = 0;
	}
	uint64_t w = s->time_ns - s->time_ns % interval;
	if (w != fs->window_ns || !fs->d.open_rec) {
		uint64_t ms = (w - fs->day_ns) / 1000000ull;
		record_begin(&fs->d, ms, ms + interval / 1000000ull);
		fs->window_ns = w;
	}
	const char *frames[1024];
	size_t k = 0;
	char marker[64];
	if (s->kind == CPA_KIND_OFFCPU_BLOCKED || s->kind == CPA_KIND_SCHED_PREEMPTED) {
		snprintf(marker, sizeof(marker), "<# OFFCPU SAMPLE: (%c) #>",
			 s->kind == CPA_KIND_SCHED_PREEMPTED ? 'R' : 'S');
		frames[k++] = marker;
	} else if (s->kind != CPA_KIND_ONCPU) {
		return 0;	/* kinds CPA does not record */
	}
	uint32_t n;
	const uint32_t *fr = cpa_dict_stack(dict, s->stack_id, &n);
	for (uint32_t i = 0; fr && i < n && k < 1024; i++)
		frames[k++] = str_of(dict, fr[i]);
	char m[512];
	meta(m, sizeof(m), str_of(dict, s->thread_id), str_of(dict, s->comm_id),
	     (unsigned long long)s->cgroup_id, s->cpu, s->pid,
	     str_of(dict, s->env_id));
	entry(&fs->d, s->weight, m, frames, k);
	return 0;
}

static int stream(void)
{
	struct from_stream fs = {0};
	struct cpa_reader r;
	struct cpa_dict dict;
	char err[512];
	if (cpa_reader_init(&r, 0, "<stdin>", NULL, 0) < 0) {
		fprintf(stderr, "gen-cpastore: %s\n", r.err);
		return 1;
	}
	cpa_dict_init(&dict);
	static const struct cpa_symstream_handler h = {
		.sample = on_sample, .meta = on_meta};
	int ret = 0;
	if (cpa_symstream_read(&r, &dict, &h, &fs, err, sizeof(err)) < 0) {
		fprintf(stderr, "gen-cpastore: %s\n", err);
		ret = 1;
	}
	record_end(&fs.d);
	day_close(&fs.d);
	cpa_dict_free(&dict);
	cpa_reader_free(&r);
	return ret;
}

int main(int argc, char **argv)
{
	bool from_stream = argc == 3 && !strcmp(argv[1], "--stream");
	if (argc != 2 && !from_stream) {
		fprintf(stderr, "usage: gen-cpastore [--stream] ROOT < INPUT\n");
		return 2;
	}
	root = argv[argc - 1];
	if (mkdir(root, 0750) < 0 && errno != EEXIST)
		die(root);
	return from_stream ? stream() : spec();
}
