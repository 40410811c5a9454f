/* SPDX-License-Identifier: MIT */
/*
 * cpa-store: keeps the symbolized cpa stream as second-level history.
 *
 * One thread: read what is available, add samples to their windows, and
 * write closed windows when enough have closed or --flush has passed. A
 * failed write (a full disk) keeps the windows in memory, up to
 * --backlog, and retries at every tick, so writing resumes by itself once
 * space returns.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "options.h"
#include "selfstats.h"
#include "timeparse.h"

#include "input.h"
#include "opts.h"
#include "segments.h"
#include "windows.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Windows closed but not yet stored, oldest first after each write. */
struct backlog {
	struct window **w;
	size_t n, cap;
	bool failing;		/* the last write failed */
	uint64_t errors;	/* failed writes */
	uint64_t dropped_windows, dropped_samples;
};

static size_t backlog_bytes(const struct backlog *b)
{
	size_t s = 0;
	for (size_t i = 0; i < b->n; i++)
		s += window_bytes(b->w[i]);
	return s;
}

static void drop_written(struct backlog *b, size_t k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k; i++)
		window_free(b->w[i]);
	memmove(b->w, b->w + k, (b->n - k) * sizeof(*b->w));
	b->n -= k;
}

/* Writes what is closed. Returns false when windows remain unwritten. */
static bool flush(struct store *st, struct input *in, struct windows *ws,
		  struct backlog *b, const struct store_opts *o)
{
	windows_take_closed(ws, &b->w, &b->n, &b->cap);
	if (!b->n)
		return true;
	size_t written;
	char err[512];
	int r = store_write(st, in, b->w, b->n, &written, err, sizeof(err));
	drop_written(b, written);
	if (!r) {
		if (b->failing)
			cpa_warn("writing resumed after %llu failed attempts; "
				 "%llu windows (%llu samples) were dropped",
				 (unsigned long long)b->errors,
				 (unsigned long long)b->dropped_windows,
				 (unsigned long long)b->dropped_samples);
		b->failing = false;
		return true;
	}
	b->errors++;
	if (!b->failing)
		cpa_err("%s; keeping %zu windows in memory and retrying every "
			"%llu ms", err, b->n,
			(unsigned long long)(o->flush_ns / 1000000));
	b->failing = true;
	/* Bounded memory: past --backlog, the oldest windows go. */
	size_t bytes = backlog_bytes(b), k = 0;
	while (k < b->n && bytes > o->backlog_max) {
		bytes -= window_bytes(b->w[k]);
		b->dropped_windows++;
		b->dropped_samples += b->w[k]->samples;
		k++;
	}
	if (k)
		cpa_warn("backlog over %llu bytes: dropped the %zu oldest "
			 "windows", (unsigned long long)o->backlog_max, k);
	drop_written(b, k);
	return false;
}

/* Self statistics (lib/base/selfstats.h), copied from the running totals
 * before each possible report. */
struct counters {
	uint64_t *samples, *samples_in, *lost, *windows, *blocks, *bytes,
		*segments, *deleted, *errors, *dropped, *over_stacks,
		*over_bytes, *deleted_early, *proc_window_max, *names_cleaned,
		*store_bytes;
};

static void counters_init(struct counters *c)
{
	c->samples = cpa_stat("samples");
	/* what moved in from upstream, named as every stage names it
	 * (the watchdog watches it) */
	c->samples_in = cpa_stat("samples_in");
	c->lost = cpa_stat("lost_upstream");
	c->windows = cpa_stat("windows");
	c->blocks = cpa_stat("blocks");
	c->bytes = cpa_stat("bytes_written");
	c->segments = cpa_stat("segments_created");
	c->deleted = cpa_stat("segments_deleted");
	c->errors = cpa_stat("write_errors");
	c->dropped = cpa_stat("dropped_samples");
	c->over_stacks = cpa_stat("over_budget_stacks");
	c->over_bytes = cpa_stat("over_budget_bytes");
	c->deleted_early = cpa_stat("segments_deleted_early");
	c->proc_window_max = cpa_gauge("process_window_bytes_max");
	c->names_cleaned = cpa_stat("names_cleaned");
	/* the directory's size, as retention by --max-size counts it */
	c->store_bytes = cpa_gauge("store_bytes");
}

static void counters_update(struct counters *c, const struct input *in,
			    const struct store *st, const struct backlog *b)
{
	*c->samples = in->samples;
	*c->samples_in = in->samples;
	*c->lost = in->lost;
	*c->windows = st->windows;
	*c->blocks = st->blocks;
	*c->bytes = st->bytes_written;
	*c->segments = st->segments_created;
	*c->deleted = st->segments_deleted;
	*c->errors = b->errors;
	*c->dropped = b->dropped_samples;
	*c->over_stacks = st->over_stacks;
	*c->over_bytes = st->over_bytes;
	*c->deleted_early = st->segments_deleted_early;
	*c->proc_window_max = st->proc_window_max;
	*c->names_cleaned = input_names_cleaned(in);
	*c->store_bytes = store_bytes(st);
}

/*
 * The input's dictionaries start over. Every open window names samples by
 * the old ids, so they are all stored now; what cannot be written (a full
 * disk) would be mislabelled later and is dropped, counted.
 */
static void restart_ids(struct store *st, struct input *in,
			struct windows *ws, struct backlog *b,
			const struct store_opts *o)
{
	windows_close_all(ws);
	if (!flush(st, in, ws, b, o) && b->n) {
		size_t samples = 0;
		for (size_t i = 0; i < b->n; i++)
			samples += b->w[i]->samples;
		b->dropped_windows += b->n;
		b->dropped_samples += samples;
		cpa_warn("dictionary reset while writing fails: dropped %zu "
			 "windows (%zu samples)", b->n, samples);
		drop_written(b, b->n);
	}
	store_forget_input_ids(st);
	input_apply_reset(in);
}

static void write_lost(struct store *st, struct input *in)
{
	char err[512];
	if (store_write_lost(st, in, err, sizeof(err)) < 0)
		cpa_warn("%s; lost windows not yet noted", err);
}

static void sync_store(struct store *st)
{
	int r = store_sync(st);
	if (r < 0)
		cpa_warn("%s: sync: %s", st->o->dir, strerror(-r));
}

int main(int argc, char **argv)
{
	struct store_opts o;
	cpa_options_init(argv[0]);
	store_opts_parse(&o, argc, argv);
	cpa_options_checked();

	/* SA_RESTART: reads resume; poll() still returns early, so the
	 * main loop sees the flag within one wait. */
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct store st;
	store_open(&st, &o);
	store_retention(&st, store_now_ns());

	struct input in;
	input_open(&in, STDIN_FILENO, "<stdin>", o.folded_time_ns);
	struct windows ws;
	windows_init(&ws, o.interval_ns, o.grace_ns);
	struct backlog b = {0};
	struct counters c;
	cpa_selfstats_init(o.selfstats.file, o.selfstats.interval_ns);
	counters_init(&c);

	size_t per_block = (size_t)(o.flush_ns / o.interval_ns);
	if (per_block < 1)
		per_block = 1;
	uint64_t now = cpa_mono_ns(), next_tick = now + o.flush_ns;
	uint64_t last_input = now;
	int status = 0;
	bool done = false;

	while (!stop && !done) {
		bool readable = input_ready(&in);
		if (!readable) {
			uint64_t wait = next_tick > now ? next_tick - now : 0;
			struct pollfd p = {.fd = in.fd, .events = POLLIN};
			int r = poll(&p, 1, (int)((wait + 999999) / 1000000));
			if (r < 0 && errno != EINTR)
				cpa_die("poll: %s", strerror(errno));
			readable = r > 0;
		}
		if (readable) {
			/* A bounded batch, so ticks happen under load. */
			for (int k = 0; k < 4096; k++) {
				struct in_sample s;
				int r = input_next(&in, &s);
				if (r == INPUT_RESET) {
					restart_ids(&st, &in, &ws, &b, &o);
					continue;
				}
				if (r == INPUT_LOST) {
					/* a cut upstream counts none: the
					 * end of coverage shows it */
					if (s.weight)
						store_note_lost(&st, s.time_ns,
								s.weight);
					continue;
				}
				if (r == INPUT_IDLE)
					break;
				if (r <= 0) {
					status = r < 0 ? CPA_EXIT_FAILURE : 0;
					done = true;
					break;
				}
				windows_add(&ws, &s);
				if (!input_ready(&in))
					break;
			}
			last_input = cpa_mono_ns();
		}
		now = cpa_mono_ns();
		if (!b.failing && windows_closed_count(&ws) >= per_block)
			flush(&st, &in, &ws, &b, &o);
		if (now >= next_tick) {
			/* An idle input closes what it left open. */
			if (now - last_input >= o.grace_ns)
				windows_close_all(&ws);
			if (flush(&st, &in, &ws, &b, &o)) {
				write_lost(&st, &in);
				sync_store(&st);
			}
			store_retention(&st, store_now_ns());
			next_tick = now + o.flush_ns;
		}
		counters_update(&c, &in, &st, &b);
		cpa_selfstats_poll();
	}

	/* End of input, bad input or a signal: store everything we have. */
	windows_close_all(&ws);
	if (!flush(&st, &in, &ws, &b, &o)) {
		cpa_err("%zu windows could not be stored", b.n);
		status = CPA_EXIT_FAILURE;
	}
	write_lost(&st, &in);
	sync_store(&st);
	store_retention(&st, store_now_ns());

	counters_update(&c, &in, &st, &b);
	if (o.stats || o.selfstats.file)
		cpa_selfstats_report();
	cpa_selfstats_fini();
	input_close(&in);
	drop_written(&b, b.n);
	free(b.w);
	windows_free(&ws);
	store_close(&st);
	return status;
}
