/* SPDX-License-Identifier: MIT */
/* Round trips and malformed input for the stream codec (lib/format/stream.c) and
 * the reader dictionary (lib/format/symstream.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stream.h"
#include "symstream.h"
#include "unit.h"

static uint8_t snap[CPA_MAX_STACK_BYTES];

static int memfd_with(const void *buf, size_t len)
{
	int fd = memfd_create("stream_test", 0);
	if (fd < 0 || (len && write(fd, buf, len) != (ssize_t)len)) {
		perror("memfd");
		exit(2);
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Reads fd to its end into a malloc'd buffer. */
static uint8_t *slurp(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc((size_t)end + 1);
	if (pread(fd, buf, (size_t)end, 0) != end)
		exit(2);
	*len = (size_t)end;
	return buf;
}

static struct cpa_raw_sample sample_raw(void)
{
	static uint8_t stack[100];
	struct cpa_raw_sample s;
	memset(&s, 0, sizeof(s));
	for (size_t i = 0; i < sizeof(stack); i++)
		stack[i] = (uint8_t)i;
	s.time_ns = 1700000000123456789ull;
	s.cgroup_id = 42;
	s.weight = 1;
	s.pid = 100;
	s.tid = 101;
	s.cpu = 3;
	s.kind = CPA_KIND_ONCPU;
	s.flags = CPA_RAW_USER_TRUNCATED;
	strcpy(s.comm, "worker");
	strcpy(s.pcomm, "0123456789abcdefXX"); /* truncated to 15 */
	s.n_kernel = 2;
	s.kernel_ips[0] = 0xffffffff81000000ull;
	s.kernel_ips[1] = 0xffffffff81000010ull;
	s.n_user = 3;
	s.user_ips[0] = 0x401000;
	s.user_ips[1] = 0x401100;
	s.user_ips[2] = 0x401200;
	s.n_regs = 3;
	s.regs[0] = 0x401000;
	s.regs[1] = 0x7ffd0000;
	s.regs[2] = 0x7ffd0040;
	s.stack_len = sizeof(stack);
	s.stack = stack;
	return s;
}

static void test_round_trip(void)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	CHECK(cpa_writer_init(&w, fd) == 0);
	struct cpa_raw_sample raw = sample_raw();
	CHECK(cpa_write_meta(&w, "host", "box1") == 0);
	CHECK(cpa_write_raw_sample(&w, &raw) == 0);
	struct cpa_task t = {.time_ns = 5, .pid = 7, .tid = 8, .ppid = 1,
			     .event = CPA_TASK_EXEC, .comm = "sh"};
	CHECK(cpa_write_task(&w, &t) == 0);
	struct cpa_mmap m = {.time_ns = 6, .start = 0x400000, .len = 0x1000,
			     .pgoff = 0, .inode = 99, .pid = 7, .prot = 5,
			     .build_id_len = 3, .build_id = {1, 2, 3},
			     .path = "/bin/sh", .path_len = 7};
	CHECK(cpa_write_mmap(&w, &m) == 0);
	struct cpa_lost l = {.time_ns = 9, .count = 17,
			     .reason = CPA_LOST_RINGBUF, .cpu = 1};
	CHECK(cpa_write_lost(&w, &l) == 0);
	CHECK(cpa_write_string(&w, 1, "main", 4) == 0);
	uint32_t frames[] = {1, 1};
	CHECK(cpa_write_stack(&w, 1, frames, 2) == 0);
	struct cpa_sample smp = {.time_ns = 11, .weight = 1000, .cgroup_id = 3,
				 .pid = 7, .tid = 8, .cpu = 1,
				 .kind = CPA_KIND_OFFCPU_BLOCKED, .stack_id = 1,
				 .comm_id = 1, .thread_id = 1};
	CHECK(cpa_write_sample(&w, &smp) == 0);
	CHECK(cpa_write_record(&w, 200, "xyz", 3) == 0);
	CHECK(cpa_write_end(&w) == 0);
	CHECK(cpa_writer_close(&w) == 0);

	lseek(fd, 0, SEEK_SET);
	struct cpa_reader r;
	CHECK(cpa_reader_init(&r, fd, "rt", NULL, 0) == 0);
	struct cpa_record rec;
	char err[256];
	int types[16], n = 0;
	while (cpa_reader_next(&r, &rec) == 1 && n < 16) {
		types[n++] = rec.type;
		switch (rec.type) {
		case CPA_REC_META: {
			struct cpa_meta mm;
			CHECK(cpa_decode_meta(&rec, &mm, err, sizeof(err)) == 0);
			CHECK(mm.key_len == 4 && !memcmp(mm.key, "host", 4));
			CHECK(mm.value_len == 4 && !memcmp(mm.value, "box1", 4));
			break;
		}
		case CPA_REC_RAW_SAMPLE: {
			struct cpa_raw_sample s;
			CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) == 0);
			CHECK(s.time_ns == raw.time_ns && s.pid == 100 &&
			      s.tid == 101 && s.cpu == 3 && s.cgroup_id == 42);
			CHECK(s.flags == CPA_RAW_USER_TRUNCATED);
			CHECK_STR(s.comm, "worker");
			CHECK_STR(s.pcomm, "0123456789abcde");
			CHECK(s.n_kernel == 2 && s.kernel_ips[1] == raw.kernel_ips[1]);
			CHECK(s.n_user == 3 && s.user_ips[2] == 0x401200);
			CHECK(s.n_regs == 3 && s.regs[2] == 0x7ffd0040);
			CHECK(s.stack_len == 100 && s.stack[99] == 99);
			break;
		}
		case CPA_REC_TASK: {
			struct cpa_task tt;
			CHECK(cpa_decode_task(&rec, &tt, err, sizeof(err)) == 0);
			CHECK(tt.pid == 7 && tt.event == CPA_TASK_EXEC);
			CHECK_STR(tt.comm, "sh");
			break;
		}
		case CPA_REC_MMAP: {
			struct cpa_mmap mm;
			CHECK(cpa_decode_mmap(&rec, &mm, err, sizeof(err)) == 0);
			CHECK(mm.start == 0x400000 && mm.inode == 99);
			CHECK(mm.build_id_len == 3 && mm.build_id[2] == 3);
			CHECK(mm.path_len == 7 && !memcmp(mm.path, "/bin/sh", 7));
			break;
		}
		case CPA_REC_LOST: {
			struct cpa_lost ll;
			CHECK(cpa_decode_lost(&rec, &ll, err, sizeof(err)) == 0);
			CHECK(ll.count == 17 && ll.reason == CPA_LOST_RINGBUF);
			break;
		}
		case CPA_REC_SAMPLE: {
			struct cpa_sample s;
			CHECK(cpa_decode_sample(&rec, &s, err, sizeof(err)) == 0);
			CHECK(s.weight == 1000 && s.stack_id == 1 &&
			      s.kind == CPA_KIND_OFFCPU_BLOCKED);
			break;
		}
		case 200:
			CHECK(rec.len == 3 && !memcmp(rec.payload, "xyz", 3));
			break;
		}
	}
	CHECK(n == 10);
	CHECK(types[0] == CPA_REC_META && types[9] == CPA_REC_END);
	CHECK(r.ended);
	CHECK(r.totals.samples == 2);
	CHECK(r.totals.lost == 17);
	CHECK(r.totals.records == 9);
	CHECK(cpa_reader_next(&r, &rec) == 0);
	cpa_reader_free(&r);
	close(fd);
}

/* Writes a header plus one record of the given type and payload. */
static uint8_t *one_record(uint16_t type, const void *payload, uint32_t len,
			   size_t *total)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	cpa_writer_init(&w, fd);
	cpa_write_record(&w, type, payload, len);
	cpa_writer_close(&w);
	uint8_t *buf = slurp(fd, total);
	close(fd);
	return buf;
}

/* Expects reading buf to fail with an error containing want. */
static void expect_read_error(const void *buf, size_t len, const char *want,
			      int line)
{
	int fd = memfd_with(buf, len);
	struct cpa_reader r;
	struct cpa_record rec;
	int rc = cpa_reader_init(&r, fd, "bad", NULL, 0);
	while (rc == 0) {
		int k = cpa_reader_next(&r, &rec);
		if (k <= 0) {
			rc = k == 0 ? 1 : -1;
			break;
		}
	}
	int ok = rc == -1 && strstr(r.err, want);
	unit_report(ok, __FILE__, line, "read error '%s'", want);
	if (!ok)
		unit_diag("got rc=%d '%s'", rc, r.err);
	cpa_reader_free(&r);
	close(fd);
}
#define EXPECT_READ_ERROR(b, l, w) expect_read_error(b, l, w, __LINE__)

static void test_framing_errors(void)
{
	uint8_t good[64];
	size_t total;
	uint8_t *one = one_record(CPA_REC_META, "k\0v", 3, &total);

	EXPECT_READ_ERROR("", 0, "empty input");
	EXPECT_READ_ERROR("hello world, this is text\n", 26,
			  "byte 0: not a cpa stream");
	memcpy(good, one, 10);
	EXPECT_READ_ERROR(good, 10, "truncated stream header");
	memcpy(good, one, 16);
	good[4] = 9;
	EXPECT_READ_ERROR(good, 16, "stream version 9.4 not supported");
	memcpy(good, one, 16);
	good[8] = 3;
	EXPECT_READ_ERROR(good, 16, "bad header length");
	/* truncated record header: 16 + 5 bytes */
	EXPECT_READ_ERROR(one, 21, "byte 16: truncated record header");
	/* truncated payload */
	EXPECT_READ_ERROR(one, total - 1, "byte 16: truncated meta record");
	/* length over the maximum */
	memcpy(good, one, total);
	cpa_put_le32(good + 20, CPA_RECORD_MAX + 1);
	EXPECT_READ_ERROR(good, total, "exceeds the maximum");
	/* type 0 */
	memcpy(good, one, total);
	good[16] = 0;
	good[17] = 0;
	EXPECT_READ_ERROR(good, total, "record type 0 is invalid");
	free(one);

	/* data after END */
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	cpa_writer_init(&w, fd);
	cpa_write_end(&w);
	cpa_write_meta(&w, "a", "b");
	cpa_writer_close(&w);
	uint8_t *buf = slurp(fd, &total);
	EXPECT_READ_ERROR(buf, total, "data after the end record");
	free(buf);
	close(fd);

	/* a bad END record is reported by the reader itself */
	one = one_record(CPA_REC_END, "short", 5, &total);
	EXPECT_READ_ERROR(one, total, "end record: length 5, expected 24");
	free(one);
}

/* Decodes the single record of buf with decode and expects want. */
typedef int (*decode_fn)(const struct cpa_record *, void *, char *, size_t);

static void expect_decode_error(uint16_t type, const void *payload,
				uint32_t len, decode_fn decode,
				const char *want, int line)
{
	size_t total;
	uint8_t *buf = one_record(type, payload, len, &total);
	int fd = memfd_with(buf, total);
	struct cpa_reader r;
	struct cpa_record rec;
	union {
		struct cpa_raw_sample raw;
		struct cpa_task t;
		struct cpa_mmap m;
		struct cpa_string s;
		struct cpa_stack st;
		struct cpa_sample smp;
		struct cpa_meta meta;
		struct cpa_lost l;
	} out;
	char err[256] = "";
	int ok = cpa_reader_init(&r, fd, "bad", NULL, 0) == 0 &&
		 cpa_reader_next(&r, &rec) == 1 &&
		 decode(&rec, &out, err, sizeof(err)) == -1 &&
		 strstr(err, want) && strstr(err, "byte 16:");
	unit_report(ok, __FILE__, line, "decode error '%s' at byte 16", want);
	if (!ok)
		unit_diag("got '%s' / '%s'", err, r.err);
	cpa_reader_free(&r);
	close(fd);
	free(buf);
}
#define EXPECT_DECODE_ERROR(t, p, l, fn, w)                                   \
	expect_decode_error(t, p, l, (decode_fn)fn, w, __LINE__)

static int decode_raw(const struct cpa_record *rec, struct cpa_raw_sample *s,
		      char *err, size_t errlen)
{
	return cpa_decode_raw_sample(rec, s, snap, err, errlen);
}

static int check_passthrough(const struct cpa_record *rec, void *unused,
			     char *err, size_t errlen)
{
	(void)unused;
	return cpa_record_check(rec, err, errlen);
}

static void test_decode_errors(void)
{
	uint8_t p[4096];
	memset(p, 0, sizeof(p));

	/* raw sample */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 40, decode_raw,
			    "below the fixed part");
	p[72] = 128; /* n_kernel */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 88 + 128 * 8,
			    decode_raw, "at most 127 each");
	p[72] = 1;
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 88, decode_raw,
			    "does not match its counts");
	p[72] = 0;
	p[76] = 9; /* n_regs */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 88 + 72,
			    decode_raw, "9 registers");
	p[76] = 0;
	cpa_put_le32(p + 80, CPA_MAX_STACK_BYTES + 1);
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 88, decode_raw,
			    "stack snapshot of 65537 bytes");
	cpa_put_le32(p + 80, 0);
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 89, decode_raw,
			    "does not match");
	/* wrong type for the decoder */
	EXPECT_DECODE_ERROR(CPA_REC_TASK, p, 40, decode_raw,
			    "expected a raw-sample record");

	/* task */
	EXPECT_DECODE_ERROR(CPA_REC_TASK, p, 39, cpa_decode_task,
			    "length 39, expected 40");
	p[20] = 77;
	EXPECT_DECODE_ERROR(CPA_REC_TASK, p, 40, cpa_decode_task,
			    "unknown task event 77");
	memset(p, 0, 100);

	/* mmap */
	EXPECT_DECODE_ERROR(CPA_REC_MMAP, p, 79, cpa_decode_mmap,
			    "below the fixed part");
	p[52] = 21;
	EXPECT_DECODE_ERROR(CPA_REC_MMAP, p, 80, cpa_decode_mmap,
			    "build id of 21 bytes");
	p[52] = 0;
	p[76] = 5;
	EXPECT_DECODE_ERROR(CPA_REC_MMAP, p, 84, cpa_decode_mmap,
			    "does not match record length");
	p[76] = 4;
	EXPECT_DECODE_ERROR(CPA_REC_MMAP, p, 84, cpa_decode_mmap,
			    "NUL byte in path");
	memcpy(p + 80, "/bin", 4);
	memset(p + 8, 0xff, 8);	 /* start */
	p[16] = 2;		 /* len */
	EXPECT_DECODE_ERROR(CPA_REC_MMAP, p, 84, cpa_decode_mmap,
			    "wraps the address space");
	memset(p, 0, 100);

	/* lost */
	EXPECT_DECODE_ERROR(CPA_REC_LOST, p, 23, cpa_decode_lost,
			    "length 23, expected 24");

	/* string */
	EXPECT_DECODE_ERROR(CPA_REC_STRING, p, 3, cpa_decode_string,
			    "at least 4");
	EXPECT_DECODE_ERROR(CPA_REC_STRING, "\0\0\0\0ab", 6, cpa_decode_string,
			    "string id 0 is reserved");
	EXPECT_DECODE_ERROR(CPA_REC_STRING, "\1\0\0\0a\0b", 7,
			    cpa_decode_string, "NUL byte in string 1");

	/* stack */
	EXPECT_DECODE_ERROR(CPA_REC_STACK, p, 7, cpa_decode_stack,
			    "at least 8");
	EXPECT_DECODE_ERROR(CPA_REC_STACK, p, 8, cpa_decode_stack,
			    "stack id 0 is reserved");
	p[0] = 1;
	cpa_put_le32(p + 4, 2);
	EXPECT_DECODE_ERROR(CPA_REC_STACK, p, 12, cpa_decode_stack,
			    "does not match 2 frames");
	cpa_put_le32(p + 4, CPA_MAX_STACK_DEPTH + 1);
	EXPECT_DECODE_ERROR(CPA_REC_STACK, p, 8, cpa_decode_stack,
			    "4097 frames");
	memset(p, 0, 100);

	/* raw sample with an allocation id: 8 more bytes than its counts */
	cpa_put_le16(p + 38, CPA_RAW_ALLOC_ID);
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 88, decode_raw,
			    "length 88 does not match its counts (expected 96)");
	memset(p, 0, 100);

	/* sample */
	EXPECT_DECODE_ERROR(CPA_REC_SAMPLE, p, 63, cpa_decode_sample,
			    "length 63, expected 64");
	cpa_put_le16(p + 38, CPA_RAW_ALLOC_ID | CPA_FLAG_FREE);
	EXPECT_DECODE_ERROR(CPA_REC_SAMPLE, p, 64, cpa_decode_sample,
			    "raw-sample only flag");
	memset(p, 0, 100);

	/* meta */
	EXPECT_DECODE_ERROR(CPA_REC_META, "abc", 3, cpa_decode_meta,
			    "no NUL after the key");
	EXPECT_DECODE_ERROR(CPA_REC_META, "\0abc", 4, cpa_decode_meta,
			    "empty key");
	EXPECT_DECODE_ERROR(CPA_REC_META, "k\0a\0c", 5, cpa_decode_meta,
			    "NUL byte in value");

	/* a record passed through is checked as its decoder checks it */
	EXPECT_DECODE_ERROR(CPA_REC_META, "abc", 3, check_passthrough,
			    "meta record: no NUL after the key");
	EXPECT_DECODE_ERROR(CPA_REC_RESET, "x", 1, check_passthrough,
			    "reset record: length 1, expected 0");
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 40, check_passthrough,
			    "below the fixed part");
	struct cpa_record rec = {.type = 42, .len = 3,
				 .payload = (const uint8_t *)"abc"};
	char err[160] = "";
	CHECK(cpa_record_check(&rec, err, sizeof(err)) == 0);
	rec.type = CPA_REC_META;
	rec.payload = (const uint8_t *)"k\0v";
	CHECK(cpa_record_check(&rec, err, sizeof(err)) == 0);
}

/* Writes one raw sample with the snapshot stack[0..len) and reads it back;
 * returns the record's payload length, -1 when the read back differs. */
static long round_trip_snapshot(const uint8_t *stack, uint32_t len,
				bool *wire_zruns)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	struct cpa_raw_sample raw = sample_raw(), s;
	struct cpa_reader r;
	struct cpa_record rec;
	char err[256];
	long got = -1;

	raw.stack = stack;
	raw.stack_len = len;
	if (cpa_writer_init(&w, fd) || cpa_write_raw_sample(&w, &raw) ||
	    cpa_write_end(&w) || cpa_writer_close(&w))
		goto out;
	lseek(fd, 0, SEEK_SET);
	if (cpa_reader_init(&r, fd, "zr", NULL, 0) == 0 &&
	    cpa_reader_next(&r, &rec) == 1 &&
	    cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) == 0 &&
	    s.stack_len == len && (!len || !memcmp(s.stack, stack, len)) &&
	    s.flags == raw.flags) {
		*wire_zruns = rec.payload[38] & CPA_RAW_STACK_ZRUNS;
		got = rec.len;
	}
	cpa_reader_free(&r);
out:
	close(fd);
	return got;
}

static void test_zero_runs(void)
{
	static uint8_t stack[CPA_MAX_STACK_BYTES];
	uint32_t fixed = 88 + 8 * (2 + 3 + 3);
	bool z;
	long n;

	/* a fresh thread stack: mostly zeros, some words set, a short zero
	 * run that stays literal, and an odd tail */
	memset(stack, 0, sizeof(stack));
	for (int i = 0; i < 8; i++)
		stack[100 + i] = (uint8_t)(i + 1);
	stack[200] = 7;
	stack[216] = 9;	/* one zero word between: literal */
	stack[4090] = 0xee;
	n = round_trip_snapshot(stack, 4093, &z);
	CHECK(n > 0 && z && n < (long)fixed + 64);

	/* all zeros, and a length below one word */
	memset(stack, 0, 4096);
	n = round_trip_snapshot(stack, 4096, &z);
	CHECK(n > 0 && z && n < (long)fixed + 8);
	n = round_trip_snapshot(stack, 5, &z);
	CHECK(n == fixed + 5 && !z);
	n = round_trip_snapshot(stack, 0, &z);
	CHECK(n == fixed && !z);

	/* no zeros: stored as it is */
	for (uint32_t i = 0; i < 16384; i++)
		stack[i] = (uint8_t)(i * 131 + 7) | 1;
	n = round_trip_snapshot(stack, 16384, &z);
	CHECK(n == fixed + 16384 && !z);

	/* mixtures of every run length, exact whatever the pattern */
	uint32_t x = 12345, bad = 0;
	for (int t = 0; t < 300; t++) {
		uint32_t len = (x = x * 1103515245u + 12345u) % 3000;

		for (uint32_t i = 0; i < len; i += 8) {
			x = x * 1103515245u + 12345u;
			uint64_t v = (x >> 16) % 3 ? 0 : x | 1;
			memcpy(stack + i, &v, len - i < 8 ? len - i : 8);
		}
		if (round_trip_snapshot(stack, len, &z) < 0)
			bad++;
	}
	CHECK(bad == 0);
	n = round_trip_snapshot(stack, CPA_MAX_STACK_BYTES, &z);
	CHECK(n > 0);

	/* a caller that encoded the snapshot itself (cpa-capture does, as
	 * it leaves the ring buffer) writes the same record */
	static uint8_t enc[CPA_MAX_STACK_BYTES];
	memset(stack, 0, 4096);
	stack[64] = 1;
	size_t stored = cpa_stack_zruns(stack, 4096, enc);
	CHECK(stored > 0 && stored < 32);
	struct cpa_raw_sample raw = sample_raw(), d;
	raw.stack = enc;
	raw.stack_len = 4096;
	raw.stack_stored = (uint32_t)stored;
	raw.flags |= CPA_RAW_STACK_ZRUNS;
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	struct cpa_reader r;
	struct cpa_record rec;
	char err[256];
	CHECK(cpa_writer_init(&w, fd) == 0 && cpa_write_raw_sample(&w, &raw) == 0 &&
	      cpa_writer_close(&w) == 0);
	lseek(fd, 0, SEEK_SET);
	CHECK(cpa_reader_init(&r, fd, "pre", NULL, 0) == 0 &&
	      cpa_reader_next(&r, &rec) == 1 &&
	      cpa_decode_raw_sample(&rec, &d, snap, err, sizeof(err)) == 0);
	CHECK(rec.len == fixed + stored && d.stack_len == 4096 &&
	      !memcmp(d.stack, stack, 4096) && d.flags == CPA_RAW_USER_TRUNCATED);
	cpa_reader_free(&r);
	close(fd);
	/* an encoded form longer than the snapshot, or empty, is refused */
	raw.stack_stored = 4097;
	fd = memfd_with(NULL, 0);
	CHECK(cpa_writer_init(&w, fd) == 0 && cpa_write_raw_sample(&w, &raw) < 0);
	cpa_writer_close(&w);
	close(fd);
	raw.stack_stored = 0;
	fd = memfd_with(NULL, 0);
	CHECK(cpa_writer_init(&w, fd) == 0 && cpa_write_raw_sample(&w, &raw) < 0);
	cpa_writer_close(&w);
	close(fd);
}

static void test_zero_run_errors(void)
{
	uint8_t p[256];

	memset(p, 0, sizeof(p));
	p[38] = CPA_RAW_STACK_ZRUNS;
	cpa_put_le32(p + 80, 64);		/* stack_len */
	cpa_put_le32(p + 84, 3);		/* stored */
	p[88] = 4; p[89] = 1; p[90] = 0xaa;	/* 32 zeros + 1 byte: 33 */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 91, decode_raw,
			    "zero-run snapshot of 3 bytes does not decode");
	p[88] = 9;			/* 72 zeros: past stack_len */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 91, decode_raw,
			    "does not decode to stack_len 64");
	p[88] = 7; p[89] = 9;		/* literal runs past the record */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 91, decode_raw,
			    "does not decode");
	p[89] = 0x80;			/* varint cut short */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 91, decode_raw,
			    "does not decode");
	cpa_put_le32(p + 84, 4);		/* stored says more than is there */
	EXPECT_DECODE_ERROR(CPA_REC_RAW_SAMPLE, p, 91, decode_raw,
			    "does not match its counts");
}

static void test_writer_limits(void)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	cpa_writer_init(&w, fd);
	struct cpa_raw_sample s = sample_raw();
	s.n_user = CPA_MAX_FRAMES + 1;
	CHECK(cpa_write_raw_sample(&w, &s) < 0);
	CHECK(w.err != 0);
	/* sticky: later writes fail too, nothing partial is written */
	CHECK(cpa_write_meta(&w, "a", "b") < 0);
	cpa_writer_close(&w);
	close(fd);

	/* EPIPE when the reader is gone */
	int pfd[2];
	CHECK(pipe(pfd) == 0);
	close(pfd[0]);
	signal(SIGPIPE, SIG_IGN);
	cpa_writer_init(&w, pfd[1]);
	CHECK(cpa_write_meta(&w, "a", "b") == 0);
	CHECK(cpa_writer_flush(&w) == -EPIPE);
	cpa_writer_close(&w);
	close(pfd[1]);
}

static void test_dict(void)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_symwriter sw;
	CHECK(cpa_symw_init(&sw, fd) == 0);
	uint32_t a = cpa_symw_cstr(&sw, "main");
	uint32_t b = cpa_symw_cstr(&sw, "leaf");
	CHECK(a == 1 && b == 2);
	CHECK(cpa_symw_cstr(&sw, "main") == 1);
	CHECK(cpa_symw_cstr(&sw, "") == 0);
	uint32_t fr[] = {a, b};
	uint32_t st = cpa_symw_stack(&sw, fr, 2);
	CHECK(st == 1 && cpa_symw_stack(&sw, fr, 2) == 1);
	CHECK(cpa_symw_stack(&sw, fr, 1) == 2);
	struct cpa_sample smp = {.stack_id = st, .comm_id = a, .weight = 3};
	cpa_write_sample(&sw.w, &smp);
	cpa_write_end(&sw.w);
	cpa_symw_free(&sw);

	lseek(fd, 0, SEEK_SET);
	struct cpa_reader r;
	struct cpa_record rec;
	struct cpa_dict d;
	char err[256];
	cpa_dict_init(&d);
	CHECK(cpa_reader_init(&r, fd, "dict", NULL, 0) == 0);
	int strings = 0, stacks = 0, samples = 0;
	while (cpa_reader_next(&r, &rec) == 1) {
		int k = cpa_dict_add(&d, &rec, err, sizeof(err));
		CHECK(k >= 0);
		if (rec.type == CPA_REC_STRING)
			strings++;
		if (rec.type == CPA_REC_STACK)
			stacks++;
		if (rec.type == CPA_REC_SAMPLE) {
			struct cpa_sample s;
			cpa_decode_sample(&rec, &s, err, sizeof(err));
			CHECK(cpa_dict_check_sample(&d, &s, rec.offset, err,
						    sizeof(err)) == 0);
			uint32_t n;
			const uint32_t *f = cpa_dict_stack(&d, s.stack_id, &n);
			CHECK(f && n == 2);
			CHECK_STR(cpa_dict_string(&d, f[1], NULL), "leaf");
			samples++;
		}
	}
	CHECK(strings == 2 && stacks == 2 && samples == 1);
	CHECK(cpa_dict_string(&d, 0, NULL) && !*cpa_dict_string(&d, 0, NULL));
	CHECK(cpa_dict_string(&d, 3, NULL) == NULL);
	struct cpa_sample bad = {.stack_id = 9};
	CHECK(cpa_dict_check_sample(&d, &bad, 5, err, sizeof(err)) == -1);
	CHECK(strstr(err, "undefined stack 9") != NULL);
	bad.stack_id = 1;
	bad.env_id = 7;
	CHECK(cpa_dict_check_sample(&d, &bad, 5, err, sizeof(err)) == -1);
	cpa_reader_free(&r);
	cpa_dict_free(&d);
	close(fd);

	/* out-of-order ids and undefined frames */
	cpa_dict_init(&d);
	uint8_t buf[32];
	struct cpa_record fake = {.type = CPA_REC_STRING, .payload = buf,
				  .len = 5, .offset = 40};
	cpa_put_le32(buf, 2);
	buf[4] = 'x';
	CHECK(cpa_dict_add(&d, &fake, err, sizeof(err)) == -1);
	CHECK(strstr(err, "byte 40: string id 2 out of order") != NULL);
	fake.type = CPA_REC_STACK;
	cpa_put_le32(buf, 1);
	cpa_put_le32(buf + 4, 1);
	cpa_put_le32(buf + 8, 5);
	fake.len = 12;
	CHECK(cpa_dict_add(&d, &fake, err, sizeof(err)) == -1);
	CHECK(strstr(err, "undefined string 5") != NULL);
	cpa_dict_free(&d);

	/* built directly, as a producer without records builds it */
	cpa_dict_init(&d);
	CHECK(cpa_dict_add_string(&d, "main", 4) == 1);
	CHECK(cpa_dict_add_string(&d, "leaf", 4) == 2);
	uint32_t frames[] = {1, 2};
	CHECK(cpa_dict_add_stack(&d, frames, 2) == 1);
	uint32_t undefined[] = {1, 3};
	CHECK(cpa_dict_add_stack(&d, undefined, 2) == 0);
	CHECK(cpa_dict_add_stack(&d, frames, 0) == 2);
	uint32_t n;
	const uint32_t *got = cpa_dict_stack(&d, 1, &n);
	CHECK(got && n == 2 && got[0] == 1 && got[1] == 2);
	CHECK(cpa_dict_stack(&d, 2, &n) && n == 0);
	CHECK(cpa_dict_stack(&d, 3, &n) == NULL);
	CHECK_STR(cpa_dict_string(&d, 2, &n), "leaf");
	CHECK(n == 4);
	cpa_dict_free(&d);
}

/* cpa_reader_ready says whether the next record is already buffered. */
static void test_reader_ready(void)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	cpa_writer_init(&w, fd);
	cpa_write_string(&w, 1, "one", 3);
	cpa_write_string(&w, 2, "two", 3);
	cpa_writer_close(&w);
	size_t len;
	uint8_t *buf = slurp(fd, &len);
	close(fd);

	int pfd[2];
	CHECK(pipe(pfd) == 0);
	/* all but the last byte of the second record */
	CHECK(write(pfd[1], buf, len - 1) == (ssize_t)(len - 1));
	struct cpa_reader r;
	struct cpa_record rec;
	CHECK(cpa_reader_init(&r, pfd[0], "pipe", NULL, 0) == 0);
	CHECK(cpa_reader_next(&r, &rec) == 1 && rec.type == CPA_REC_STRING);
	CHECK(!cpa_reader_ready(&r));
	CHECK(write(pfd[1], buf + len - 1, 1) == 1);
	CHECK(cpa_reader_next(&r, &rec) == 1 && rec.type == CPA_REC_STRING);
	CHECK(!cpa_reader_ready(&r));	/* nothing buffered, not at end */
	close(pfd[1]);
	CHECK(cpa_reader_next(&r, &rec) == 0);
	CHECK(cpa_reader_ready(&r));	/* the end is known */
	cpa_reader_free(&r);
	close(pfd[0]);

	/* a header claiming too long a record fails at once: ready */
	CHECK(pipe(pfd) == 0);
	uint8_t hdr[CPA_RECORD_HEADER_SIZE] = {CPA_REC_STRING};
	cpa_put_le32(hdr + 4, CPA_RECORD_MAX + 1);
	size_t head = len - 2 * (CPA_RECORD_HEADER_SIZE + 7);
	CHECK(write(pfd[1], buf, head) == (ssize_t)head);
	CHECK(write(pfd[1], hdr, sizeof(hdr)) == (ssize_t)sizeof(hdr));
	CHECK(cpa_reader_init(&r, pfd[0], "pipe", NULL, 0) == 0);
	CHECK(cpa_reader_ready(&r));
	CHECK(cpa_reader_next(&r, &rec) == -1);
	CHECK(strstr(r.err, "exceeds the maximum") != NULL);
	cpa_reader_free(&r);
	close(pfd[0]);
	close(pfd[1]);
	free(buf);
}

/* A RESET record starts the dictionaries over on both sides. */
static void test_reset(void)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_symwriter sw;
	cpa_symw_init(&sw, fd);
	uint32_t a = cpa_symw_cstr(&sw, "old");
	uint32_t st = cpa_symw_stack(&sw, &a, 1);
	struct cpa_sample s1 = {.stack_id = st, .comm_id = a, .weight = 1};
	cpa_write_sample(&sw.w, &s1);
	size_t before = cpa_symw_bytes(&sw);
	CHECK(before > 0);
	CHECK(cpa_symw_reset(&sw) == 0);
	uint32_t b = cpa_symw_cstr(&sw, "new");
	CHECK(b == 1);	/* ids start over */
	CHECK(cpa_symw_cstr(&sw, "old") == 2);
	uint32_t st2 = cpa_symw_stack(&sw, &b, 1);
	CHECK(st2 == 1);
	struct cpa_sample s2 = {.stack_id = st2, .comm_id = b, .weight = 2};
	cpa_write_sample(&sw.w, &s2);
	cpa_write_end(&sw.w);
	cpa_symw_free(&sw);

	lseek(fd, 0, SEEK_SET);
	struct cpa_reader r;
	struct cpa_record rec;
	struct cpa_dict d;
	char err[256];
	cpa_dict_init(&d);
	CHECK(cpa_reader_init(&r, fd, "reset", NULL, 0) == 0);
	char *leaves[2] = {NULL, NULL};
	int n = 0, resets = 0;
	while (cpa_reader_next(&r, &rec) == 1) {
		int k = cpa_dict_add(&d, &rec, err, sizeof(err));
		CHECK(k >= 0);
		resets += rec.type == CPA_REC_RESET;
		if (rec.type == CPA_REC_SAMPLE && n < 2) {
			struct cpa_sample s;
			uint32_t nf;
			cpa_decode_sample(&rec, &s, err, sizeof(err));
			const uint32_t *f = cpa_dict_stack(&d, s.stack_id, &nf);
			leaves[n++] = f ? strdup(cpa_dict_string(&d, f[0], NULL))
					: NULL;
		}
	}
	CHECK(resets == 1 && n == 2);
	CHECK_STR(leaves[0], "old");
	CHECK_STR(leaves[1], "new");
	free(leaves[0]);
	free(leaves[1]);
	/* a RESET with a payload is malformed */
	struct cpa_record bad = {.type = CPA_REC_RESET, .len = 1,
				 .payload = (const uint8_t *)"x", .offset = 9};
	CHECK(cpa_dict_add(&d, &bad, err, sizeof(err)) == -1);
	CHECK(strstr(err, "byte 9: reset record") != NULL);
	cpa_reader_free(&r);
	cpa_dict_free(&d);
	close(fd);
}

/* An allocation with its id and stack, then its free: id, no stack. */
static void test_alloc_id(void)
{
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	CHECK(cpa_writer_init(&w, fd) == 0);
	struct cpa_raw_sample alloc = sample_raw();
	alloc.kind = CPA_KIND_HEAP_INUSE;
	alloc.flags = CPA_RAW_ALLOC_ID | CPA_FLAG_ESTIMATE;
	alloc.alloc_id = 0x0123456789abcdefull;
	alloc.weight = 524288;
	struct cpa_raw_sample fr;
	memset(&fr, 0, sizeof(fr));
	fr.kind = CPA_KIND_HEAP_INUSE;
	fr.flags = CPA_FLAG_FREE | CPA_FLAG_ESTIMATE | CPA_RAW_ALLOC_ID;
	fr.alloc_id = alloc.alloc_id;
	fr.weight = 524288;
	fr.pid = 100;
	CHECK(cpa_write_raw_sample(&w, &alloc) == 0);
	CHECK(cpa_write_raw_sample(&w, &fr) == 0);
	/* a symbolized sample never carries the id flag */
	struct cpa_sample smp = {.kind = CPA_KIND_HEAP_INUSE, .weight = 8,
				 .flags = CPA_FLAG_FREE | CPA_RAW_ALLOC_ID};
	CHECK(cpa_write_sample(&w, &smp) == 0);
	CHECK(cpa_write_end(&w) == 0);
	CHECK(cpa_writer_close(&w) == 0);

	lseek(fd, 0, SEEK_SET);
	struct cpa_reader r;
	CHECK(cpa_reader_init(&r, fd, "ids", NULL, 0) == 0);
	CHECK(r.minor == CPA_STREAM_MINOR);
	struct cpa_record rec;
	struct cpa_raw_sample s;
	char err[256];
	CHECK(cpa_reader_next(&r, &rec) == 1);
	/* the id's 8 bytes sit between the fixed part and the kernel IPs */
	CHECK(cpa_get_le64(rec.payload + 88) == alloc.alloc_id);
	CHECK(cpa_get_le64(rec.payload + 96) == alloc.kernel_ips[0]);
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) == 0);
	CHECK(s.alloc_id == 0x0123456789abcdefull);
	CHECK(s.flags == (CPA_RAW_ALLOC_ID | CPA_FLAG_ESTIMATE));
	CHECK(s.kind == CPA_KIND_HEAP_INUSE);
	CHECK(s.weight == 524288);
	CHECK(s.n_kernel == 2);
	CHECK(s.kernel_ips[1] == alloc.kernel_ips[1]);
	CHECK(s.n_user == 3);
	CHECK(s.user_ips[2] == 0x401200);
	CHECK(s.regs[2] == 0x7ffd0040);
	CHECK(s.stack_len == 100);
	CHECK(s.stack[99] == 99);
	CHECK(cpa_record_check(&rec, err, sizeof(err)) == 0);

	CHECK(cpa_reader_next(&r, &rec) == 1);
	CHECK(rec.len == 96);
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) == 0);
	CHECK(s.alloc_id == alloc.alloc_id);
	CHECK(s.flags == (CPA_FLAG_FREE | CPA_FLAG_ESTIMATE | CPA_RAW_ALLOC_ID));
	CHECK(s.n_kernel + s.n_user + s.n_regs == 0);
	CHECK(s.stack_len == 0);
	CHECK(s.stack == NULL);

	CHECK(cpa_reader_next(&r, &rec) == 1);
	struct cpa_sample ds;
	CHECK(cpa_decode_sample(&rec, &ds, err, sizeof(err)) == 0);
	CHECK(ds.flags == CPA_FLAG_FREE);

	/* without the flag a decoded sample's id is 0 */
	struct cpa_raw_sample plain = sample_raw();
	plain.alloc_id = 77;
	CHECK(cpa_reader_next(&r, &rec) == 1 && rec.type == CPA_REC_END);
	cpa_reader_free(&r);
	close(fd);
	fd = memfd_with(NULL, 0);
	cpa_writer_init(&w, fd);
	CHECK(cpa_write_raw_sample(&w, &plain) == 0);
	cpa_writer_close(&w);
	lseek(fd, 0, SEEK_SET);
	CHECK(cpa_reader_init(&r, fd, "plain", NULL, 0) == 0);
	CHECK(cpa_reader_next(&r, &rec) == 1);
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) == 0);
	CHECK(s.alloc_id == 0);
	CHECK(cpa_get_le64(rec.payload + 88) == plain.kernel_ips[0]);
	cpa_reader_free(&r);
	close(fd);
}

static void test_names(void)
{
	for (int k = 0; k < CPA_KIND_COUNT; k++)
		CHECK(cpa_kind_parse(cpa_kind_name(k)) == k);
	CHECK(cpa_kind_parse("bogus") == -1);
	CHECK(cpa_kind_parse("mem-rss") == CPA_KIND_MEM_USAGE);
	CHECK(cpa_kind_parse("mem-usage") == 9);
	CHECK(cpa_kind_parse("heap-alloc") == 10);
	CHECK(cpa_kind_parse("heap-inuse") == 11);
	CHECK(cpa_kind_parse("java-alloc") == 12);
	CHECK(cpa_kind_parse("java-live") == 13);
	CHECK_STR(cpa_kind_marker(CPA_KIND_JAVA_ALLOC), "Java allocated");
	CHECK(cpa_kind_unit(CPA_KIND_JAVA_LIVE) == CPA_UNIT_BYTES);
	CHECK(cpa_kind_nets(CPA_KIND_JAVA_LIVE));
	CHECK(!cpa_kind_nets(CPA_KIND_JAVA_ALLOC));
	CHECK_STR(cpa_kind_marker(CPA_KIND_MEM_VIRT), "memory virtual");
	CHECK_STR(cpa_kind_marker(CPA_KIND_MEM_PHYS), "memory physical");
	CHECK_STR(cpa_kind_marker(CPA_KIND_MEM_USAGE), "memory usage");
	CHECK_STR(cpa_kind_marker(CPA_KIND_HEAP_ALLOC), "heap allocated");
	CHECK_STR(cpa_kind_marker(CPA_KIND_HEAP_INUSE), "heap in use");
	for (int k = CPA_KIND_MEM_VIRT; k <= CPA_KIND_HEAP_INUSE; k++)
		CHECK(cpa_kind_unit(k) == CPA_UNIT_BYTES);
	CHECK(cpa_kind_nets(CPA_KIND_MEM_USAGE));
	CHECK(cpa_kind_nets(CPA_KIND_HEAP_INUSE));
	CHECK(!cpa_kind_nets(CPA_KIND_HEAP_ALLOC));
	CHECK(!cpa_kind_nets(CPA_KIND_MEM_PHYS));
	CHECK_STR(cpa_lost_reason_name(CPA_LOST_ALLOC_TABLE), "alloc-table");
	CHECK_STR(cpa_kind_marker(CPA_KIND_OFFCPU_BLOCKED), "off-CPU blocked");
	CHECK(cpa_kind_marker(CPA_KIND_ONCPU) == NULL);
	CHECK(cpa_kind_unit(CPA_KIND_SCHED_DELAY) == CPA_UNIT_NS);
	CHECK_STR(cpa_lost_reason_name(CPA_LOST_RINGBUF), "ringbuf");
	CHECK(cpa_stream_detect("\x89" "CPA", 4));
	CHECK(!cpa_stream_detect("main;a 1", 8));
	/* prefix bytes already read by format detection are consumed first */
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	cpa_writer_init(&w, fd);
	cpa_write_end(&w);
	cpa_writer_close(&w);
	size_t total;
	uint8_t *buf = slurp(fd, &total);
	int fd2 = memfd_with(buf + 1, total - 1);
	struct cpa_reader r;
	struct cpa_record rec;
	CHECK(cpa_reader_init(&r, fd2, "prefixed", buf, 1) == 0);
	CHECK(cpa_reader_next(&r, &rec) == 1 && rec.type == CPA_REC_END);
	CHECK(cpa_reader_next(&r, &rec) == 0 && r.ended);
	cpa_reader_free(&r);
	free(buf);
	close(fd);
	close(fd2);
}

/* The Python section follows the snapshot, plain or as zero runs, and
 * an n_py the record's length does not hold is refused. */
static void test_py_frames(void)
{
	static uint8_t stack[4096];
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	struct cpa_raw_sample raw = sample_raw(), s;
	struct cpa_reader r;
	struct cpa_record rec;
	char err[256];

	raw.flags |= CPA_RAW_PY_FRAMES;
	raw.py_version = 0x030b;
	raw.n_py = 3;
	raw.py_flags = CPA_PY_BROKEN;
	for (unsigned i = 0; i < 3; i++)
		raw.py[i] = (struct cpa_py_frame){ 0x7f0000001000ull + i,
						    10 * i, i == 2 };
	stack[8] = 1;	/* zero runs around it */
	raw.stack = stack;
	raw.stack_len = sizeof(stack);
	CHECK(cpa_writer_init(&w, fd) == 0);
	CHECK(cpa_write_raw_sample(&w, &raw) == 0);
	raw.stack_len = 5;	/* stored plainly */
	CHECK(cpa_write_raw_sample(&w, &raw) == 0);
	CHECK(cpa_write_end(&w) == 0);
	CHECK(cpa_writer_close(&w) == 0);
	int fd2 = memfd_with(NULL, 0);
	CHECK(cpa_writer_init(&w, fd2) == 0);
	raw.n_py = CPA_MAX_PY_FRAMES + 1;
	CHECK(cpa_write_raw_sample(&w, &raw) < 0);
	cpa_writer_close(&w);
	close(fd2);
	lseek(fd, 0, SEEK_SET);
	CHECK(cpa_reader_init(&r, fd, "py", NULL, 0) == 0);
	for (int k = 0; k < 2; k++) {
		CHECK(cpa_reader_next(&r, &rec) == 1);
		CHECK(cpa_decode_raw_sample(&rec, &s, snap, err,
					    sizeof(err)) == 0);
		CHECK(s.n_py == 3 && s.py_version == 0x030b &&
		      s.py_flags == CPA_PY_BROKEN);
		CHECK(s.py[2].code == 0x7f0000001002ull && s.py[2].instr == 20 &&
		      s.py[2].flags == CPA_PY_FRAME_ENTRY);
		CHECK(s.stack_len == (k ? 5u : 4096u) && (k || s.stack[8] == 1));
		/* one frame more than the record holds */
		uint8_t *p = (uint8_t *)rec.payload;
		size_t at = rec.len - 8 - 3 * 16;
		p[at + 2] = 4;
		CHECK(cpa_decode_raw_sample(&rec, &s, snap, err,
					    sizeof(err)) < 0);
		CHECK(strstr(err, "does not match") != NULL);
		p[at + 2] = 65;
		CHECK(cpa_decode_raw_sample(&rec, &s, snap, err,
					    sizeof(err)) < 0);
		CHECK(strstr(err, "Python frames") != NULL);
	}
	cpa_reader_free(&r);
	close(fd);
}

/* Frames named by the capture (a JVMTI agent's), after the Python
 * section: round trip, and every length checked. */
static void test_named_frames(void)
{
	static const uint8_t named[] = { 6, 0, 'b', 'y', 't', 'e', '[', ']',
					 3, 0, 'a', '.', 'b' };
	int fd = memfd_with(NULL, 0);
	struct cpa_writer w;
	struct cpa_raw_sample raw = sample_raw(), s;
	struct cpa_reader r;
	struct cpa_record rec;
	char err[256];

	raw.flags |= CPA_RAW_NAMED_FRAMES | CPA_RAW_PY_FRAMES;
	raw.n_py = 1;
	raw.n_named = 2;
	raw.named_len = sizeof(named);
	raw.named = named;
	CHECK(cpa_writer_init(&w, fd) == 0);
	CHECK(cpa_write_raw_sample(&w, &raw) == 0);
	CHECK(cpa_write_end(&w) == 0);
	CHECK(cpa_writer_close(&w) == 0);
	lseek(fd, 0, SEEK_SET);
	CHECK(cpa_reader_init(&r, fd, "named", NULL, 0) == 0);
	CHECK(cpa_reader_next(&r, &rec) == 1);
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) == 0);
	CHECK(s.n_named == 2 && s.named_len == sizeof(named) && s.n_py == 1);
	size_t pos = 0;
	uint16_t len;
	const char *f = cpa_named_frame(s.named, &pos, &len);
	CHECK(len == 6 && !memcmp(f, "byte[]", 6));
	f = cpa_named_frame(s.named, &pos, &len);
	CHECK(len == 3 && !memcmp(f, "a.b", 3) && pos == sizeof(named));

	uint8_t *p = (uint8_t *)rec.payload + rec.len - sizeof(named);
	p[8] = 4;	/* the last frame past the section's end */
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) < 0);
	CHECK(strstr(err, "named frame 1 of 4 bytes") != NULL);
	p[8] = 2;	/* a byte left over */
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) < 0);
	CHECK(strstr(err, "take 12 of") != NULL);
	p[8] = 3;
	p[0] = 0;	/* an empty frame */
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) < 0);
	CHECK(strstr(err, "named frame 0 of 0 bytes") != NULL);
	p[0] = 6;
	p[-8] = 3;	/* more frames than the section holds */
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) < 0);
	CHECK(strstr(err, "named frame 2 past") != NULL);
	p[-8] = 2;
	p[-4] = 200;	/* the section longer than the record */
	CHECK(cpa_decode_raw_sample(&rec, &s, snap, err, sizeof(err)) < 0);
	CHECK(strstr(err, "past the record's end") != NULL);
	cpa_reader_free(&r);
	close(fd);
}

/* A writer on a pipe widens it to 1 MiB, so a poll cycle's records go
 * in one write (F_GETPIPE_SZ is Linux's: 1032). */
static void test_pipe_room(void)
{
	struct cpa_writer w;
	int fds[2];

	CHECK(pipe(fds) == 0);
	CHECK(fcntl(fds[1], 1032) < (1 << 20));
	CHECK(cpa_writer_init(&w, fds[1]) == 0);
	CHECK(fcntl(fds[1], 1032) >= (1 << 20));
	w.len = 0;	/* nothing goes to the pipe nobody reads */
	cpa_writer_close(&w);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	test_round_trip();
	test_framing_errors();
	test_decode_errors();
	test_zero_runs();
	test_zero_run_errors();
	test_py_frames();
	test_named_frames();
	test_writer_limits();
	test_pipe_room();
	test_dict();
	test_reader_ready();
	test_reset();
	test_alloc_id();
	test_names();
	return unit_done("stream_test");
}
