/* SPDX-License-Identifier: MIT */
/*
 * The output: records from the BPF ring buffer and from the perf
 * side-band rings arrive through different channels, but cpa-unwind needs
 * them in the order they happened (a mapping before the samples that use
 * it, an exit after the last sample of a process). Each poll cycle queues
 * what it drained, sorts it by time and writes what is older than the
 * cutoff; the rest waits one cycle for stragglers from other CPUs.
 */
#include <config.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpa-capture.h"
#include "buf.h"
#include "log.h"
#include "selfstats.h"
#include "timeparse.h"

#define OFFSET_REFRESH_NS (10 * CPA_NSEC_PER_SEC)

struct item {
	uint64_t mono_ns;
	uint64_t seq;		/* arrival order, to keep the sort stable */
	uint16_t type;
	union {
		struct cpa_raw_sample raw;
		struct cpa_task task;
		struct cpa_mmap mmap;
		struct cpa_lost lost;
	} u;
	uint8_t data[];		/* stack bytes or mapping path */
};

static struct cpa_writer writer;
static struct item **queue;
static size_t queue_len, queue_cap;
static uint64_t next_seq;
static int64_t realtime_offset;	/* CLOCK_REALTIME - CLOCK_MONOTONIC */
static struct output_stats stats;

/* the same counts as self statistics (--stats-file, SIGUSR1) */
static struct {
	uint64_t *samples, *samples_out, *kind[CPA_KIND_COUNT];
	uint64_t *lost, *reason[CPA_LOST_REASON_COUNT];
	uint64_t *tasks, *mmaps;
} ctr;

static bool (*sample_filter)(const struct cpa_raw_sample *s);

static void refresh_offset(void);

uint64_t mono_now_ns(void)
{
	return cpa_mono_ns();
}

/* The offset between the clocks, read between two monotonic reads so the
 * error is at most half the time the three reads take. */
static int64_t measure_offset(void)
{
	int64_t best = 0;
	uint64_t best_span = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t a = mono_now_ns();
		uint64_t r = cpa_now_ns();
		uint64_t b = mono_now_ns();

		if (b - a < best_span) {
			best_span = b - a;
			best = (int64_t)(r - (a + (b - a) / 2));
		}
	}
	return best;
}

static void stats_init(void)
{
	char name[64];

	/* the kinds and reasons cpa-capture can produce */
	static const unsigned reasons[] = { CPA_LOST_RINGBUF,
					    CPA_LOST_STACK_COPY,
					    CPA_LOST_PROBE_RATE,
					    CPA_LOST_STATE_FULL, CPA_LOST_PERF };

	ctr.samples = cpa_stat("samples");
	/* what moved downstream, named as every stage names it (the
	 * watchdog watches it) */
	ctr.samples_out = cpa_stat("samples_out");
	for (unsigned k = 0; k <= CPA_KIND_PROBE; k++) {
		snprintf(name, sizeof(name), "samples_%s", cpa_kind_name(k));
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
		ctr.kind[k] = cpa_stat(name);
	}
	ctr.lost = cpa_stat("lost");
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		unsigned r = reasons[i];

		snprintf(name, sizeof(name), "lost_%s", cpa_lost_reason_name(r));
		for (char *p = name; *p; p++)
			if (*p == '-')
				*p = '_';
		ctr.reason[r] = cpa_stat(name);
	}
	ctr.tasks = cpa_stat("task_records");
	ctr.mmaps = cpa_stat("mmap_records");
}

int output_init(int fd)
{
	stats_init();
	refresh_offset();
	return cpa_writer_init(&writer, fd);
}

static void push(struct item *it)
{
	CPA_GROW(queue, queue_cap, queue_len + 1);
	it->seq = next_seq++;
	queue[queue_len++] = it;
}

/* The snapshot is encoded as it leaves the ring buffer: what is queued
 * and written is then the short form, usually a tenth of the bytes, and a
 * poll cycle's queue holds that much less. */
void output_queue_sample(const struct cpa_raw_sample *s)
{
	static uint8_t enc[CPA_MAX_STACK_BYTES];
	const uint8_t *stack = s->stack;
	size_t stored = s->flags & CPA_RAW_STACK_ZRUNS ? s->stack_stored :
							  s->stack_len;
	struct item *it;

	if (s->stack_len && !(s->flags & CPA_RAW_STACK_ZRUNS)) {
		size_t n = cpa_stack_zruns(s->stack, s->stack_len, enc);

		if (n) {
			stack = enc;
			stored = n;
		}
	}
	size_t named = s->flags & CPA_RAW_NAMED_FRAMES ? s->named_len : 0;

	it = cpa_malloc(sizeof(*it) + stored + named);
	it->mono_ns = s->time_ns;
	it->type = CPA_REC_RAW_SAMPLE;
	it->u.raw = *s;
	if (stack != s->stack) {
		it->u.raw.flags |= CPA_RAW_STACK_ZRUNS;
		it->u.raw.stack_stored = (uint32_t)stored;
	}
	if (stored)
		memcpy(it->data, stack, stored);
	it->u.raw.stack = it->data;
	if (named) {
		memcpy(it->data + stored, s->named, named);
		it->u.raw.named = it->data + stored;
	}
	push(it);
}

void output_queue_task(const struct cpa_task *t)
{
	struct item *it = cpa_malloc(sizeof(*it));

	it->mono_ns = t->time_ns;
	if (t->event == CPA_TASK_EXIT)
		it->mono_ns += CAPTURE_EXIT_GRACE_NS;
	it->type = CPA_REC_TASK;
	it->u.task = *t;
	push(it);
}

void output_queue_mmap(const struct cpa_mmap *m)
{
	struct item *it = cpa_malloc(sizeof(*it) + m->path_len);

	it->mono_ns = m->time_ns;
	it->type = CPA_REC_MMAP;
	it->u.mmap = *m;
	memcpy(it->data, m->path, m->path_len);
	it->u.mmap.path = (const char *)it->data;
	push(it);
}

void output_queue_lost(uint64_t mono_ns, uint32_t reason, uint32_t cpu,
		       uint64_t count)
{
	struct item *it;

	if (!count)
		return;
	it = cpa_malloc(sizeof(*it));
	it->mono_ns = mono_ns;
	it->type = CPA_REC_LOST;
	it->u.lost = (struct cpa_lost){ .time_ns = mono_ns, .count = count,
					.reason = reason, .cpu = cpu };
	push(it);
}

void output_set_filter(bool (*keep)(const struct cpa_raw_sample *s))
{
	sample_filter = keep;
}

int output_meta(const char *key, const char *value)
{
	return cpa_write_meta(&writer, key, value);
}

static int by_time(const void *a, const void *b)
{
	const struct item *x = *(const struct item *const *)a;
	const struct item *y = *(const struct item *const *)b;

	if (x->mono_ns != y->mono_ns)
		return x->mono_ns < y->mono_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static uint64_t to_realtime(uint64_t mono)
{
	return (uint64_t)((int64_t)mono + realtime_offset);
}

static int write_item(struct item *it)
{
	switch (it->type) {
	case CPA_REC_RAW_SAMPLE:
		if (sample_filter && !sample_filter(&it->u.raw))
			return 0;
		it->u.raw.time_ns = to_realtime(it->u.raw.time_ns);
		if (it->u.raw.kind < CPA_KIND_COUNT)
			stats.samples[it->u.raw.kind]++;
		if (it->u.raw.kind < CPA_KIND_COUNT && ctr.kind[it->u.raw.kind])
			(*ctr.kind[it->u.raw.kind])++;
		(*ctr.samples)++;
		(*ctr.samples_out)++;
		return cpa_write_raw_sample(&writer, &it->u.raw);
	case CPA_REC_TASK:
		it->u.task.time_ns = to_realtime(it->u.task.time_ns);
		stats.tasks++;
		(*ctr.tasks)++;
		return cpa_write_task(&writer, &it->u.task);
	case CPA_REC_MMAP:
		it->u.mmap.time_ns = to_realtime(it->u.mmap.time_ns);
		stats.mmaps++;
		(*ctr.mmaps)++;
		return cpa_write_mmap(&writer, &it->u.mmap);
	case CPA_REC_LOST:
		it->u.lost.time_ns = to_realtime(it->u.lost.time_ns);
		if (it->u.lost.reason && it->u.lost.reason < CPA_LOST_REASON_COUNT) {
			stats.lost[it->u.lost.reason] += it->u.lost.count;
			if (ctr.reason[it->u.lost.reason])
				*ctr.reason[it->u.lost.reason] += it->u.lost.count;
		}
		*ctr.lost += it->u.lost.count;
		return cpa_write_lost(&writer, &it->u.lost);
	}
	return 0;
}

/* The clocks drift apart when the wall clock is stepped or slewed (NTP),
 * so the offset is measured again every few seconds of a long capture. */
static void refresh_offset(void)
{
	static uint64_t last;
	static bool measured;
	uint64_t now = mono_now_ns();

	if (!measured || now - last >= OFFSET_REFRESH_NS) {
		measured = true;
		realtime_offset = measure_offset();
		last = now;
	}
}

/* A pipe whose reader is gone reports POLLERR even when nothing is being
 * written, so a capture that selects nothing still notices. */
static int reader_gone(void)
{
	struct pollfd p = { .fd = writer.fd, .events = 0 };

	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)))
		return -EPIPE;
	return 0;
}

int output_emit(uint64_t cutoff)
{
	size_t n = 0, kept = 0;
	uint64_t before = writer.records;
	int rc = 0;

	refresh_offset();

	qsort(queue, queue_len, sizeof(*queue), by_time);
	while (n < queue_len && queue[n]->mono_ns < cutoff) {
		if (!rc)
			rc = write_item(queue[n]);
		free(queue[n]);
		n++;
	}
	while (n < queue_len)
		queue[kept++] = queue[n++];
	queue_len = kept;
	/* a write notices a gone reader itself; only an idle cycle asks */
	if (!rc && writer.records == before)
		rc = reader_gone();
	if (!rc)
		rc = cpa_writer_flush(&writer);
	return rc;
}

int output_end(void)
{
	int rc = output_emit(UINT64_MAX);

	if (!rc)
		rc = cpa_write_end(&writer);
	return rc;
}

void output_close(bool flush)
{
	for (size_t i = 0; i < queue_len; i++)
		free(queue[i]);
	free(queue);
	queue = NULL;
	queue_len = queue_cap = 0;
	/* nothing more goes to a broken stdout, or to one that should stay
	 * empty because the capture never started */
	if (!flush || writer.err)
		writer.len = 0;
	if (writer.buf)
		cpa_writer_close(&writer);
}

const struct output_stats *output_stats(void)
{
	return &stats;
}

int output_error(void)
{
	return writer.err;
}
