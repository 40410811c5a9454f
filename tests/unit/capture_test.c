/* SPDX-License-Identifier: MIT */
/*
 * cpa-capture's kernel-free parts: the kernel release check, --probe spec
 * parsing, and the output queue that writes records from several channels
 * in time order.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpa-capture.h"
#include "log.h"
#include "stream.h"
#include "unit.h"

volatile int capture_stop;

static uint8_t snap[CPA_MAX_STACK_BYTES];

static void test_release(void)
{
	CHECK(!kernel_nofault_hazard("5.18.19"));
	CHECK(kernel_nofault_hazard("5.19.0"));
	CHECK(kernel_nofault_hazard("6.1.55-amd64"));
	CHECK(kernel_nofault_hazard("6.3.13"));
	CHECK(!kernel_nofault_hazard("6.4.0"));
	CHECK(!kernel_nofault_hazard("6.18.44"));
	CHECK(!kernel_nofault_hazard("4.19.0"));
	CHECK(!kernel_nofault_hazard("7.0"));
	CHECK(!kernel_nofault_hazard("linux"));
	CHECK(!kernel_nofault_hazard(""));
}

static void test_probe_parse(void)
{
	struct probe_spec p;

	probe_parse("tracepoint:syscalls:sys_enter_write", &p);
	CHECK(p.type == PROBE_TRACEPOINT);
	CHECK_STR(p.a, "syscalls");
	CHECK_STR(p.b, "sys_enter_write");
	probe_free(&p);

	/* the path may hold ':', the symbol is after the last one */
	probe_parse("uprobe:/opt/a:b/app:handle_request", &p);
	CHECK(p.type == PROBE_UPROBE);
	CHECK_STR(p.a, "/opt/a:b/app");
	CHECK_STR(p.b, "handle_request");
	probe_free(&p);

	probe_parse("uretprobe:/usr/lib/libc.so.6:malloc", &p);
	CHECK(p.type == PROBE_URETPROBE);
	CHECK_STR(p.b, "malloc");
	probe_free(&p);

	probe_parse("uprobe:/bin/app:0x1a2B", &p);
	CHECK(p.type == PROBE_UPROBE);
	CHECK(p.b == NULL);
	CHECK(p.offset == 0x1a2b);
	probe_free(&p);

	probe_parse("kprobe:vfs_read", &p);
	CHECK(p.type == PROBE_KPROBE);
	CHECK_STR(p.b, "vfs_read");
	probe_free(&p);

	probe_parse("kretprobe:do_sys_openat2", &p);
	CHECK(p.type == PROBE_KRETPROBE);
	probe_free(&p);
}

/* Records queued out of order come out in time order, and only up to
 * the cutoff until the end. */
static void test_output_order(void)
{
	int fds[2];
	struct cpa_raw_sample s;
	struct cpa_task t;
	struct cpa_mmap m;
	static const uint8_t stack[5] = { 1, 2, 3, 4, 5 };
	struct cpa_reader r;
	struct cpa_record rec;
	uint16_t types[8];
	uint64_t times[8];
	int n = 0;
	char err[256];

	CHECK(pipe(fds) == 0);
	CHECK(output_init(fds[1]) == 0);

	memset(&t, 0, sizeof(t));
	t.time_ns = 3000;
	t.pid = t.tid = 42;
	t.event = CPA_TASK_EXIT;
	output_queue_task(&t);

	memset(&s, 0, sizeof(s));
	s.time_ns = 1000;
	s.pid = s.tid = 42;
	s.weight = 1;
	s.stack = stack;
	s.stack_len = sizeof(stack);
	s.n_regs = 3;
	s.regs[CPA_REG_SP] = 0x7ffd0000;
	output_queue_sample(&s);

	memset(&m, 0, sizeof(m));
	m.time_ns = 900;
	m.pid = 42;
	m.start = 0x400000;
	m.len = 0x1000;
	m.path = "/bin/app";
	m.path_len = 8;
	output_queue_mmap(&m);

	output_queue_lost(500, CPA_LOST_RINGBUF, 1, 7);
	output_queue_lost(600, CPA_LOST_RINGBUF, 1, 0);	/* nothing lost */

	CHECK(output_emit(2000) == 0);	/* the exit at 3000 waits */
	CHECK(output_end() == 0);
	output_close(true);
	close(fds[1]);

	CHECK(cpa_reader_init(&r, fds[0], "<pipe>", NULL, 0) == 0);
	while (n < 8 && cpa_reader_next(&r, &rec) == 1) {
		types[n] = rec.type;
		times[n] = 0;
		if (rec.type == CPA_REC_RAW_SAMPLE) {
			struct cpa_raw_sample d;

			CHECK(cpa_decode_raw_sample(&rec, &d, snap, err, sizeof(err)) == 0);
			times[n] = d.time_ns;
			CHECK(d.stack_len == sizeof(stack));
			CHECK(d.stack_len == sizeof(stack) &&
			      !memcmp(d.stack, stack, sizeof(stack)));
			CHECK(d.regs[CPA_REG_SP] == 0x7ffd0000);
		} else if (rec.type == CPA_REC_MMAP) {
			struct cpa_mmap d;

			CHECK(cpa_decode_mmap(&rec, &d, err, sizeof(err)) == 0);
			times[n] = d.time_ns;
			CHECK(d.path_len == 8 && !memcmp(d.path, "/bin/app", 8));
		} else if (rec.type == CPA_REC_TASK) {
			struct cpa_task d;

			CHECK(cpa_decode_task(&rec, &d, err, sizeof(err)) == 0);
			times[n] = d.time_ns;
		} else if (rec.type == CPA_REC_LOST) {
			struct cpa_lost d;

			CHECK(cpa_decode_lost(&rec, &d, err, sizeof(err)) == 0);
			times[n] = d.time_ns;
			CHECK(d.count == 7 && d.cpu == 1);
		}
		n++;
	}
	CHECK(n == 5);
	CHECK(types[0] == CPA_REC_LOST);
	CHECK(types[1] == CPA_REC_MMAP);
	CHECK(types[2] == CPA_REC_RAW_SAMPLE);
	CHECK(types[3] == CPA_REC_TASK);
	CHECK(types[4] == CPA_REC_END);
	/* one offset from CLOCK_MONOTONIC to CLOCK_REALTIME for all */
	CHECK(times[1] - times[0] == 400);
	CHECK(times[2] - times[1] == 100);
	CHECK(times[3] - times[2] == 2000);
	CHECK(r.ended && r.totals.samples == 1 && r.totals.lost == 7);
	cpa_reader_free(&r);
	close(fds[0]);
}

int main(int argc, char **argv)
{
	(void)argc;
	cpa_set_progname(argv[0]);
	test_release();
	test_probe_parse();
	test_output_order();
	return unit_done("capture_test");
}
