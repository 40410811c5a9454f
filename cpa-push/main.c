/* SPDX-License-Identifier: MIT */
/*
 * cpa-push: the host's windows into ClickHouse, exactly once.
 *
 * The stream is cpa-query --follow's: each block of the store, then its
 * position. Blocks are batched and inserted (stacks first, then samples,
 * each row carrying its block's position); the cursor file is rewritten
 * after ClickHouse acknowledged. An insert whose fate is unknown (the
 * connection broke, the server died) is settled by asking ClickHouse the
 * largest position it holds of this host, once the insert is surely no
 * longer running: blocks it holds are not sent again, the rest are.
 * While ClickHouse is away nothing is read, so the pipe from cpa-query
 * fills and it waits: the store, written by cpa-store apart, is the
 * buffer, and capture never waits for the push.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clickhouse.h"
#include "hash.h"
#include "log.h"
#include "options.h"
#include "selfstats.h"
#include "stream.h"
#include "symstream.h"
#include "timeparse.h"

#include "batch.h"
#include "cursor.h"
#include "opts.h"
#include "schema.h"
#include "source.h"

static volatile sig_atomic_t stopping;

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

struct push {
	struct push_opts o;
	struct cpa_ch ch;
	char host[256];
	const char *cursor;
	struct batch b;
	uint64_t acked;		/* largest position ClickHouse holds */
	uint64_t last_pos;	/* last position of the stream */
	uint64_t retained_ns;	/* last retention run */
	uint64_t *blocks, *rows, *stacks, *inserts, *bytes, *retries,
		 *skipped, *lag, *acked_end;
	unsigned attempt;
};

/* Sleeps the backoff of the attempt-th failure in a row (1 s doubling to
 * --backoff-max), waking early on a stop signal. */
static void backoff(struct push *p)
{
	uint64_t ns = 1000000000ull << (p->attempt < 20 ? p->attempt : 20);
	if (ns > p->o.backoff_max_ns)
		ns = p->o.backoff_max_ns;
	p->attempt++;
	(*p->retries)++;
	uint64_t end = cpa_now_ns() + ns;
	while (!stopping) {
		uint64_t now = cpa_now_ns();
		if (now >= end)
			break;
		/* a second at a time: the statistics stay fresh meanwhile */
		uint64_t left = end - now;
		if (left > 1000000000)
			left = 1000000000;
		struct timespec ts = { (time_t)(left / 1000000000),
				       (long)(left % 1000000000) };
		nanosleep(&ts, NULL);
		cpa_selfstats_poll();
	}
	if (stopping)
		exit(0);
}

static void retry_line(struct push *p, const char *what)
{
	uint64_t ns = 1000000000ull << (p->attempt < 20 ? p->attempt : 20);
	if (ns > p->o.backoff_max_ns)
		ns = p->o.backoff_max_ns;
	cpa_err("%s; retrying in %llus", what,
		(unsigned long long)(ns / 1000000000));
}

/* Until the tables are there and right; dies if they are not cpa-push's. */
static void ensure_schema(struct push *p)
{
	char err[640];
	for (;;) {
		err[0] = 0;
		int r = schema_ensure(&p->ch, &p->o, true, false, err,
				      sizeof(err));
		if (r == SCHEMA_OK)
			break;
		if (r == SCHEMA_BAD)
			cpa_die("%s", err);
		retry_line(p, err[0] ? err : p->ch.err);
		backoff(p);
	}
	p->attempt = 0;
}

static uint64_t max_pos(struct push *p)
{
	uint64_t pos;
	while (schema_max_pos(&p->ch, &p->o, p->host, &pos) < 0) {
		retry_line(p, p->ch.err);
		backoff(p);
	}
	return pos;
}

/* An insert of this id is still running somewhere in the cluster. */
static int insert_running(struct push *p, const char *id, bool *running)
{
	struct cpa_buf q = {0};
	uint64_t n;
	cpa_ch_add(&q, "SELECT count() FROM ");
	if (p->o.cluster) {
		cpa_ch_add(&q, "cluster(");
		cpa_ch_quote_str(&q, p->o.cluster);
		cpa_ch_add(&q, ", system, processes)");
	} else {
		cpa_ch_add(&q, "system.processes");
	}
	cpa_ch_add(&q, " WHERE query_id = ");
	cpa_ch_quote_str(&q, id);
	cpa_ch_add(&q, " OR initial_query_id = ");
	cpa_ch_quote_str(&q, id);
	if (cpa_ch_numbers(&p->ch, &q, &n, 1) < 0)
		return -1;
	*running = n > 0;
	return 0;
}

/* After an insert failed: waits until it cannot still commit, then
 * returns what ClickHouse holds of this host. */
static uint64_t settle(struct push *p, const char *id)
{
	for (;;) {
		bool running;
		if (insert_running(p, id, &running) < 0) {
			retry_line(p, p->ch.err);
			backoff(p);
			continue;
		}
		if (!running)
			break;
		cpa_debug("insert %s still running; waiting", id);
		backoff(p);
	}
	return max_pos(p);
}

static void save_cursor(struct push *p)
{
	struct push_pos pp;
	char err[4400];
	if (!p->acked)
		return;		/* nothing acknowledged yet */
	pos_unpack(p->acked, &pp);
	while (cursor_write(p->cursor, &pp, err, sizeof(err)) < 0) {
		retry_line(p, err);
		backoff(p);
	}
}

/* The id of an insert, to find it among the running queries: the
 * host's hash (a name is not always URL-safe), the batch, the try. */
static void query_id(const struct push *p, uint64_t last, unsigned try,
		     char *id, size_t len)
{
	snprintf(id, len, "cpa-push-%016" PRIx64 "-%016" PRIx64 "-%u",
		 cpa_hash(p->host, strlen(p->host), 0), last, try);
}

/* Inserts the batch, however many tries it takes. */
static void flush(struct push *p)
{
	struct batch *b = &p->b;
	if (!b->n_blocks)
		return;
	char sql[512], id[128];
	uint64_t last = b->blocks[b->n_blocks - 1].pos;
	uint64_t newest_end = 0;
	for (size_t i = 0; i < b->n_blocks; i++)
		if (b->blocks[i].end_ns > newest_end)
			newest_end = b->blocks[i].end_ns;
	unsigned try = 0;
	bool settled = true;
	for (;; try++) {
		if (!settled) {
			query_id(p, last, try - 1, id, sizeof(id));
			uint64_t held = settle(p, id);
			if (held > p->acked)
				p->acked = held;
			batch_skip_to(b, held);
			settled = true;
			if (!b->n_blocks)
				break;	/* it had gone in */
		}
		query_id(p, last, try, id, sizeof(id));
		char settings[256];
		snprintf(settings, sizeof(settings),
			 "insert_distributed_sync=1&query_id=%s", id);
		/* the stacks first: a reader never meets a row whose stack
		 * is not there; sent again, they merge away */
		if (b->stacks.len) {
			snprintf(sql, sizeof(sql), "INSERT INTO %s.stacks (%s) "
				 "FORMAT RowBinary", p->o.database,
				 schema_stacks_columns);
			if (cpa_ch_exec(&p->ch, sql, b->stacks.p, b->stacks.len,
					"insert_distributed_sync=1") < 0) {
				retry_line(p, p->ch.err);
				backoff(p);
				continue;
			}
			*p->bytes += b->stacks.len;
			*p->stacks += b->nstacks;
			(*p->inserts)++;
			b->stacks.len = 0;
			b->nstacks = 0;
		}
		snprintf(sql, sizeof(sql), "INSERT INTO %s.samples (%s) FORMAT "
			 "RowBinary", p->o.database, schema_samples_columns);
		if (cpa_ch_exec(&p->ch, sql, b->rows.p, b->rows.len,
				settings) < 0) {
			retry_line(p, p->ch.err);
			cpa_ch_disconnect(&p->ch);
			backoff(p);
			settled = false;
			continue;
		}
		*p->bytes += b->rows.len;
		*p->rows += b->nrows;
		*p->blocks += b->n_blocks;
		(*p->inserts)++;
		if (last > p->acked)
			p->acked = last;
		break;
	}
	struct push_pos pp;
	pos_unpack(p->acked, &pp);
	cpa_debug("%llu rows of %zu blocks in %s.samples, up to %s %llu",
		  (unsigned long long)b->nrows, b->n_blocks, p->o.database,
		  pp.seg, (unsigned long long)pp.blocks);
	batch_done(b);
	save_cursor(p);
	p->attempt = 0;
	uint64_t now = cpa_now_ns();
	*p->lag = newest_end && now > newest_end
			  ? (now - newest_end) / 1000000000 : 0;
	/* the lag as it grows while ClickHouse is away: now less this */
	if (newest_end)
		*p->acked_end = newest_end;
}

static void retain(struct push *p)
{
	unsigned dropped;
	uint64_t now = cpa_now_ns();
	if (schema_retain(&p->ch, &p->o, now - p->o.retain_ns, &dropped) < 0)
		cpa_warn("%s (retention is tried again in an hour)", p->ch.err);
	else if (dropped)
		cpa_debug("retention: %u day partitions dropped", dropped);
	p->retained_ns = now;
}

/* The resume point: the cursor file, or what ClickHouse holds of this
 * host when that is further (a kill between an insert and the cursor's
 * rewrite). */
static void resume(struct push *p)
{
	struct push_pos c;
	char err[4400];
	int r = cursor_read(p->cursor, &c, err, sizeof(err));
	if (r < 0)
		cpa_die("%s", err);
	uint64_t packed;
	if (pos_pack(&c, &packed, err, sizeof(err)) < 0)
		cpa_die("%s: %s", p->cursor, err);
	uint64_t held = max_pos(p);
	p->acked = packed > held ? packed : held;
	if (held > packed) {
		struct push_pos h;
		pos_unpack(held, &h);
		cpa_debug("%s holds up to %s %llu of %s, past the cursor",
			  p->ch.url, h.seg, (unsigned long long)h.blocks,
			  p->host);
		save_cursor(p);
	}
}

static void on_position(struct push *p, const struct cpa_dict *d,
			const struct cpa_meta *m, uint64_t offset)
{
	struct push_pos pp;
	char err[200];
	uint64_t v;
	if (pos_parse(m->value, m->value_len, &pp, err, sizeof(err)) < 0 ||
	    pos_pack(&pp, &v, err, sizeof(err)) < 0)
		cpa_die("<input>: byte %llu: %s", (unsigned long long)offset,
			err);
	if (v <= p->acked) {
		/* ClickHouse has it: the stream started before the cursor */
		if (p->b.n_open)
			(*p->skipped)++;
		batch_drop_open(&p->b);
	} else {
		if (p->last_pos && v < p->last_pos)
			cpa_warn("<input>: byte %llu: position %s %llu is "
				 "before the last one", (unsigned long long)
				 offset, pp.seg, (unsigned long long)pp.blocks);
		batch_seal(&p->b, d, v, cpa_now_ns());
	}
	p->last_pos = v;
}

/* Reads the stream and pushes it; returns the exit status. */
static int run(struct push *p, int fd, const char *name)
{
	struct cpa_reader r;
	struct cpa_dict d;
	char err[512];
	if (cpa_reader_init(&r, fd, name, NULL, 0) < 0)
		cpa_die("%s", r.err);
	cpa_dict_init(&d);
	int status = 0;
	for (;;) {
		cpa_selfstats_poll();
		uint64_t now = cpa_now_ns();
		if (p->o.retain_ns && now - p->retained_ns >= 3600000000000ull)
			retain(p);
		if (p->b.n_blocks &&
		    (p->b.nrows >= p->o.batch_rows ||
		     now - p->b.first_ns >= p->o.batch_wait_ns))
			flush(p);
		if (stopping)
			break;
		if (!cpa_reader_ready(&r)) {
			int wait = 1000;
			if (p->b.n_blocks) {
				uint64_t due = p->b.first_ns +
					       p->o.batch_wait_ns;
				now = cpa_now_ns();
				wait = due > now ? (int)((due - now) / 1000000)
						 + 1 : 0;
				if (wait > 1000)
					wait = 1000;
			}
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			if (poll(&pf, 1, wait) <= 0)
				continue;
		}
		struct cpa_record rec;
		int k = cpa_reader_next(&r, &rec);
		if (k < 0)
			cpa_die("%s", r.err);
		if (k == 0) {
			if (!r.ended) {
				cpa_reader_warn_unended(&r, "the blocks "
							"before it are pushed");
				status = 1;
			}
			break;
		}
		int dk = cpa_dict_add(&d, &rec, err, sizeof(err));
		if (dk < 0)
			cpa_die("%s: %s", name, err);
		if (dk > 0) {
			if (rec.type == CPA_REC_RESET) {
				if (p->b.n_open)
					cpa_die("%s: byte %llu: a reset inside "
						"a block", name,
						(unsigned long long)rec.offset);
				batch_dict_reset(&p->b);
			}
			continue;
		}
		if (rec.type == CPA_REC_SAMPLE) {
			struct cpa_sample s;
			if (cpa_decode_sample(&rec, &s, err, sizeof(err)) < 0 ||
			    cpa_dict_check_sample(&d, &s, rec.offset, err,
						  sizeof(err)) < 0)
				cpa_die("%s: %s", name, err);
			batch_add(&p->b, &d, &s);
		} else if (rec.type == CPA_REC_META) {
			struct cpa_meta m;
			if (cpa_decode_meta(&rec, &m, err, sizeof(err)) < 0)
				cpa_die("%s: %s", name, err);
			uint64_t iv;
			if (cpa_meta_is(&m, CPA_META_POSITION))
				on_position(p, &d, &m, rec.offset);
			else if (cpa_meta_is(&m, CPA_META_INTERVAL_NS) &&
				 cpa_meta_u64(&m, &iv) && iv)
				p->b.duration_ns = iv;
		}
	}
	if (!stopping) {
		if (p->b.n_open)
			cpa_warn("%s: %u rows after the last position are not "
				 "pushed (no position: not cpa-query --follow's "
				 "stream?)", name, p->b.n_open);
		flush(p);
	}
	cpa_dict_free(&d);
	cpa_reader_free(&r);
	return status;
}

static void one_shot(struct push *p)
{
	char err[640] = "";
	if (p->o.init) {
		int r = schema_ensure(&p->ch, &p->o, true, true, err,
				      sizeof(err));
		if (r != SCHEMA_OK)
			cpa_die("%s", err[0] ? err : p->ch.err);
		cpa_debug("%s: the tables of %s are in place", p->ch.url,
			  p->o.database);
	}
	if (p->o.retain_ns) {
		unsigned dropped;
		uint64_t now = cpa_now_ns();
		if (schema_retain(&p->ch, &p->o, now - p->o.retain_ns,
				  &dropped) < 0)
			cpa_die("%s", p->ch.err);
		cpa_debug("%u day partitions dropped", dropped);
	}
}

int main(int argc, char **argv)
{
	static struct push p;
	cpa_options_init(argv[0]);
	push_opts_parse(&p.o, argc, argv);
	if (p.o.print_schema) {
		struct cpa_buf b = {0};
		schema_sql(&p.o, &b);
		fwrite(b.p, 1, b.len, stdout);
		cpa_buf_free(&b);
		return 0;
	}
	char err[640];
	if (cpa_ch_init(&p.ch, p.o.url, err, sizeof(err)) < 0)
		cpa_die_usage("invalid --clickhouse: %s", err);
	if (p.o.check) {
		cpa_ch_free(&p.ch);
		return 0;
	}
	p.ch.timeout_ms = (int)(p.o.timeout_ns / 1000000);
	p.ch.idle = cpa_selfstats_poll;
	if (p.o.host)
		snprintf(p.host, sizeof(p.host), "%s", p.o.host);
	else if (gethostname(p.host, sizeof(p.host) - 1) < 0 || !p.host[0])
		cpa_die("gethostname: %s (give --host)", strerror(errno));

	if (!p.o.dir && (p.o.init || p.o.retain_ns)) {
		one_shot(&p);
		cpa_ch_free(&p.ch);
		return 0;
	}

	char cursor[4200];
	if (p.o.cursor)
		snprintf(cursor, sizeof(cursor), "%s", p.o.cursor);
	else
		snprintf(cursor, sizeof(cursor), "%s/push.cursor", p.o.dir);
	p.cursor = cursor;
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	cpa_selfstats_init(p.o.selfstats.file, p.o.selfstats.interval_ns);
	p.blocks = cpa_stat("blocks");
	p.rows = cpa_stat("rows");
	p.stacks = cpa_stat("stacks");
	p.inserts = cpa_stat("inserts");
	p.bytes = cpa_stat("bytes_sent");
	p.retries = cpa_stat("retries");
	p.skipped = cpa_stat("blocks_held_already");
	p.lag = cpa_gauge("lag_s");
	p.acked_end = cpa_gauge("acked_end_ns");
	batch_init(&p.b, p.host);
	if (p.o.job)
		p.b.job = p.o.job;

	ensure_schema(&p);
	resume(&p);
	if (p.o.init)
		cpa_debug("%s: the tables of %s are in place", p.ch.url,
			  p.o.database);

	int fd = STDIN_FILENO;
	pid_t child = 0;
	const char *name = "<stdin>";
	if (p.o.dir) {
		fd = source_spawn(&p.o, cursor, &child);
		name = "cpa-query --follow";
	}
	int status = run(&p, fd, name);
	if (child) {
		kill(child, SIGTERM);
		int ws;
		while (waitpid(child, &ws, 0) < 0 && errno == EINTR)
			;
		if (!stopping && status == 0 && WIFEXITED(ws) &&
		    WEXITSTATUS(ws))
			status = 1;
	}
	/* a job's windows are all in: its marker says so, once */
	if (p.o.job && p.o.once && !stopping && status == 0) {
		while (schema_publish(&p.ch, &p.o, p.host, p.b.duration_ns,
				      cpa_now_ns()) < 0) {
			retry_line(&p, p.ch.err);
			backoff(&p);
		}
		cpa_debug("%s: job %s published", p.ch.url, p.o.job);
	}
	if (p.o.selfstats.file)
		cpa_selfstats_report();
	cpa_selfstats_fini();
	batch_free(&p.b);
	cpa_ch_free(&p.ch);
	return status;
}
