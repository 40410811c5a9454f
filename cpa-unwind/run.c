// SPDX-License-Identifier: MIT
/*
 * The record loop: every record of the input to its handler, the output's
 * end, and the exit status. Separate from main.c so the fuzz target can
 * drive it with arbitrary streams.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "selfstats.h"
#include "unwind.h"

/* 0 handled, 1 dropped (err says why), -1 malformed input (err). */
static int handle(struct unwinder *u, struct output *out,
		  const struct cpa_record *rec, char *err, size_t errlen)
{
	switch (rec->type) {
	case CPA_REC_RAW_SAMPLE:
		return unwind_raw_sample(u, rec, err, errlen);
	case CPA_REC_TASK:
		return unwind_task(u, rec, err, errlen);
	case CPA_REC_MMAP:
		return unwind_mmap(u, rec, err, errlen);
	case CPA_REC_LOST: {
		struct cpa_lost l;
		if (cpa_decode_lost(rec, &l, err, errlen) < 0)
			return -1;
		u->st.lost_in += l.count;
		output_lost(out, &l);
		return 0;
	}
	case CPA_REC_END:
		return 0;	/* ours is written with our own totals */
	case CPA_REC_STRING:
	case CPA_REC_STACK:
	case CPA_REC_SAMPLE:
	case CPA_REC_RESET:
		/* Already symbolized input would need its ids remapped into
		 * ours (and a reset passed on would empty downstream's
		 * dictionary under our ids); nothing upstream of cpa-unwind
		 * produces it. */
		return cpa_fail_at(err, errlen, rec->offset,
				   "%s record: input is already symbolized "
				   "(cpa-unwind reads cpa-capture's output)",
				   cpa_record_type_name(rec->type));
	default:
		/* The next stage would refuse a malformed record and stop;
		 * what we pass on (meta, types newer than us) carries no
		 * sample, so a bad one is dropped, said and counted. */
		if (cpa_record_check(rec, err, errlen) < 0) {
			u->st.dropped++;
			return 1;
		}
		u->st.passthrough++;
		output_passthrough(out, rec);
		return 0;
	}
}

/*
 * Waits in poll() rather than in the reader's read(): the statistics timer
 * interrupts poll() but not a restarted read(), so an unwinder idle on an
 * empty pipe still reports, and cpa monitor sees it alive without it ever
 * waking for nothing.
 */
static void wait_input(struct unwinder *u, const struct cpa_reader *r)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	if (r->fd < 0 || r->eof)
		return;
	cpa_selfstats_poll();
	while (poll(&p, 1, -1) < 0 && errno == EINTR) {
		stats_publish(u);
		stats_bench_poll(u, cpa_mono_ns());
		cpa_selfstats_poll();
	}
}

int unwind_stream(struct unwinder *u, struct output *out,
		  struct cpa_reader *r, const char *name)
{
	int status = 0;
	bool malformed = false;
	struct cpa_record rec;
	char err[320];

	for (;;) {
		int k = cpa_reader_next(r, &rec);
		if (k < 0) {
			cpa_err("%s", r->err);
			malformed = true;
			break;
		}
		if (k == 0) {
			if (!r->ended) {
				/* Keep what came and say where it stopped;
				 * downstream sees the gap as a lost record. */
				cpa_reader_warn_unended(r, "upstream cut off");
				/* how many is not known: the count is 0,
				 * and the time is when the cut was seen */
				struct timespec now;
				clock_gettime(CLOCK_REALTIME, &now);
				struct cpa_lost l = {
					.time_ns = (uint64_t)now.tv_sec *
							   1000000000u +
						   (uint64_t)now.tv_nsec,
					.reason = CPA_LOST_UPSTREAM,
					.cpu = UINT32_MAX,
				};
				output_lost(out, &l);
				status = CPA_EXIT_FAILURE;
			}
			break;
		}
		int h = handle(u, out, &rec, err, sizeof(err));
		if (h < 0) {
			cpa_err("%s: %s", name, err);
			malformed = true;
			break;
		}
		if (h > 0) {
			cpa_warn("%s: %s; record dropped", name, err);
			status = CPA_EXIT_FAILURE;
		}
		if (rec.type == CPA_REC_RAW_SAMPLE) {
			elfcache_take_fetched(u->cache);
			/* the processes' caches first: the objects then fit
			 * in what they leave of --max-cache */
			proctab_trim(u->procs);
			elfcache_trim(u->cache);
		}
		/* counters are copied in batches: a report is at most 64
		 * records behind; a due report waits for no batch, as cpa
		 * monitor takes a stage that stops reporting for hung */
		if ((r->records & 63) == 0) {
			stats_publish(u);
			stats_bench_poll(u, cpa_mono_ns());
		}
		cpa_selfstats_poll();
		/* About to wait for input: pass on what we have, so the
		 * store downstream sees samples within a poll cycle of capture. */
		if (cpa_reader_pending(r) == 0) {
			unwind_flush_alloc_lost(u);
			output_flush(out);
		}
		if (output_error(out))
			break;
		if (cpa_reader_pending(r) == 0)
			wait_input(u, r);
	}
	/* Malformed input ends our stream without END, so downstream knows
	 * it is incomplete too; what came before it is kept. */
	unwind_flush_alloc_lost(u);
	if (malformed) {
		output_flush(out);
		status = CPA_EXIT_FAILURE;
	} else {
		output_finish(out);
	}
	int oerr = output_error(out);
	if (oerr && oerr != EPIPE) {
		cpa_err("<stdout>: %s", strerror(oerr));
		status = CPA_EXIT_FAILURE;
	}
	return status;
}
