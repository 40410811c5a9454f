/* SPDX-License-Identifier: MIT */
/* Time, size and CPU-set parsing, folded lines, labels and interning;
 * the primitives: hash table, growth, buffers, LEB128, little-endian
 * fields, error messages, the clocks, writing a whole buffer and the
 * maps iterator; CPython's offsets. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "cpuset.h"
#include "folded.h"
#include "clickhouse.h"
#include "hash.h"
#include "htab.h"
#include "httpc.h"
#include "intern.h"
#include "io.h"
#include "labels.h"
#include "le.h"
#include "leb128.h"
#include "log.h"
#include "name.h"
#include "owner.h"
#include "procfs.h"
#include "promtext.h"
#include "pyoffsets.h"
#include "timeparse.h"
#include "unit.h"

#define S CPA_NSEC_PER_SEC

static void test_durations(void)
{
	uint64_t ns;
	CHECK(cpa_parse_duration_ns("10", &ns) == 0 && ns == 10 * S);
	CHECK(cpa_parse_duration_ns("10s", &ns) == 0 && ns == 10 * S);
	CHECK(cpa_parse_duration_ns("500ms", &ns) == 0 && ns == S / 2);
	CHECK(cpa_parse_duration_ns("250us", &ns) == 0 && ns == 250000);
	CHECK(cpa_parse_duration_ns("5m", &ns) == 0 && ns == 300 * S);
	CHECK(cpa_parse_duration_ns("2h", &ns) == 0 && ns == 7200 * S);
	CHECK(cpa_parse_duration_ns("7d", &ns) == 0 && ns == 7 * 86400 * S);
	CHECK(cpa_parse_duration_ns("1h30m", &ns) == 0 && ns == 5400 * S);
	CHECK(cpa_parse_duration_ns("1.5s", &ns) == 0 && ns == 3 * S / 2);
	CHECK(cpa_parse_duration_ns("", &ns) == -1);
	CHECK(cpa_parse_duration_ns("abc", &ns) == -1);
	CHECK(cpa_parse_duration_ns("10x", &ns) == -1);
	CHECK(cpa_parse_duration_ns("5m10", &ns) == -1);
	CHECK(cpa_parse_duration_ns("-5s", &ns) == -1);
	CHECK(cpa_parse_duration_ns("99999999999999999999d", &ns) == -1);
}

static void test_sizes(void)
{
	uint64_t b;
	CHECK(cpa_parse_size("4096", &b) == 0 && b == 4096);
	CHECK(cpa_parse_size("64K", &b) == 0 && b == 65536);
	CHECK(cpa_parse_size("512M", &b) == 0 && b == 512ull << 20);
	CHECK(cpa_parse_size("2G", &b) == 0 && b == 2ull << 30);
	CHECK(cpa_parse_size("2GiB", &b) == 0 && b == 2ull << 30);
	CHECK(cpa_parse_size("1T", &b) == 0 && b == 1ull << 40);
	CHECK(cpa_parse_size("2X", &b) == -1);
	CHECK(cpa_parse_size("", &b) == -1);
	CHECK(cpa_parse_size("-1", &b) == -1);
	CHECK(cpa_parse_size("99999999999T", &b) == -1);
}

static void test_times(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	/* 2026-11-30 12:00:00 UTC */
	const uint64_t now = 1796040000ull * S;
	uint64_t t;
	CHECK(cpa_parse_time("now", now, &t) == 0 && t == now);
	CHECK(cpa_parse_time("-10m", now, &t) == 0 && t == now - 600 * S);
	CHECK(cpa_parse_time("+5s", now, &t) == 0 && t == now + 5 * S);
	CHECK(cpa_parse_time("@1700000000", now, &t) == 0 &&
	      t == 1700000000ull * S);
	CHECK(cpa_parse_time("@1700000000.5", now, &t) == 0 &&
	      t == 1700000000ull * S + S / 2);
	CHECK(cpa_parse_time("1700000000", now, &t) == 0 &&
	      t == 1700000000ull * S);
	CHECK(cpa_parse_time("10:00", now, &t) == 0 &&
	      t == now - 2 * 3600 * S);
	CHECK(cpa_parse_time("10:00:05", now, &t) == 0 &&
	      t == now - 2 * 3600 * S + 5 * S);
	CHECK(cpa_parse_time("2026-11-30", now, &t) == 0 &&
	      t == now - 12 * 3600 * S);
	CHECK(cpa_parse_time("2026-11-30 10:00", now, &t) == 0 &&
	      t == now - 2 * 3600 * S);
	CHECK(cpa_parse_time("2026-11-30T12:00:00Z", now, &t) == 0 &&
	      t == now);
	CHECK(cpa_parse_time("2026-11-30T14:00:00+02:00", now, &t) == 0 &&
	      t == now);
	CHECK(cpa_parse_time("2026-11-30T07:00:00-0500", now, &t) == 0 &&
	      t == now);
	CHECK(cpa_parse_time("2026-11-30T12:00:00.250Z", now, &t) == 0 &&
	      t == now + S / 4);
	CHECK(cpa_parse_time("25:00", now, &t) == -1);
	CHECK(cpa_parse_time("10:61", now, &t) == -1);
	CHECK(cpa_parse_time("2026-13-01", now, &t) == -1);
	CHECK(cpa_parse_time("2026-11-30X", now, &t) == -1);
	CHECK(cpa_parse_time("yesterday", now, &t) == -1);
	CHECK(cpa_parse_time("", now, &t) == -1);
	CHECK(cpa_parse_time("-", now, &t) == -1);
	CHECK(cpa_parse_time("-100000d", now, &t) == -1);

	char buf[64];
	cpa_format_time(now + 123456789, buf, sizeof(buf));
	CHECK_STR(buf, "2026-11-30 12:00:00.123");
}

static void test_cpusets(void)
{
	struct cpa_cpuset set;
	char err[128];
	CHECK(cpa_cpuset_parse("0", &set, err, sizeof(err)) == 0);
	CHECK(cpa_cpuset_has(&set, 0) && !cpa_cpuset_has(&set, 1));
	CHECK(cpa_cpuset_parse("0,2-3", &set, err, sizeof(err)) == 0);
	CHECK(cpa_cpuset_count(&set) == 3 && cpa_cpuset_has(&set, 3) &&
	      !cpa_cpuset_has(&set, 1));
	CHECK(cpa_cpuset_parse("0-7,64-65\n", &set, err, sizeof(err)) == 0);
	CHECK(cpa_cpuset_count(&set) == 10 && cpa_cpuset_has(&set, 65));
	CHECK(cpa_cpuset_parse("", &set, err, sizeof(err)) == -1);
	CHECK(cpa_cpuset_parse("3-1", &set, err, sizeof(err)) == -1);
	CHECK(strstr(err, "range ends before it starts") != NULL);
	CHECK(cpa_cpuset_parse("1,", &set, err, sizeof(err)) == -1);
	CHECK(cpa_cpuset_parse("a", &set, err, sizeof(err)) == -1);
	CHECK(strstr(err, "character 1") != NULL);
	CHECK(cpa_cpuset_parse("1;2", &set, err, sizeof(err)) == -1);
	CHECK(cpa_cpuset_parse("4096", &set, err, sizeof(err)) == -1);
	CHECK(cpa_cpuset_online(&set) == 0 && cpa_cpuset_count(&set) >= 1);
	CHECK(cpa_cpuset_count(&set) == (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
}

static int parse(const char *line, struct cpa_folded_line *out, char *err)
{
	return cpa_folded_parse(line, strlen(line), out, err, 128);
}

static void test_folded(void)
{
	struct cpa_folded_line l;
	char err[128];
	CHECK(parse("a;b;c 42", &l, err) == 1);
	CHECK(l.stack_len == 5 && !memcmp(l.stack, "a;b;c", 5));
	CHECK(l.count == 42 && !l.two_counts);
	CHECK(parse("a;b 3 7\r", &l, err) == 1);
	CHECK(l.two_counts && l.count == 3 && l.count2 == 7);
	CHECK(l.stack_len == 3);
	CHECK(parse("std::vector<int, alloc> f(int, int);g 9", &l, err) == 1);
	CHECK(l.count == 9 && !l.two_counts);
	CHECK(parse("", &l, err) == 0);
	CHECK(parse("   ", &l, err) == 0);
	CHECK(parse("# comment", &l, err) == 0);
	CHECK(parse("a;b", &l, err) == -1);
	CHECK(strstr(err, "no count") != NULL);
	CHECK(parse("a;b x", &l, err) == -1);
	CHECK(parse("a;b12", &l, err) == -1);
	/* a count with no stack before it */
	CHECK(parse(" 12", &l, err) == -1);
	CHECK(strstr(err, "empty stack before the count") != NULL);
	CHECK(parse("a 99999999999999999999999", &l, err) == -1);
	CHECK(strstr(err, "too large") != NULL);
}

/* clean(IN) is OUT, and OUT is clean */
static void check_clean(const char *in, const char *out)
{
	char s[256];
	size_t n = strlen(in);
	memcpy(s, in, n + 1);
	CHECK(cpa_name_clean(s, n) == !!strcmp(in, out));
	CHECK_STR(s, out);
	CHECK(cpa_name_is_clean(s, n));
	CHECK(cpa_name_is_clean(in, n) == !strcmp(in, out));
}

static void test_names(void)
{
	check_clean("main", "main");
	check_clean("operator new(unsigned long)", "operator new(unsigned long)");
	check_clean("caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x94\xa5", "caf\xc3\xa9 \xe6\x97\xa5\xf0\x9f\x94\xa5");
	check_clean("12345", "12345");
	check_clean("GC Thread#0", "GC Thread#0");
	/* a forged folded line, separators, terminal escapes */
	check_clean("A 999999999999\n", "A 999999999999_");
	check_clean("a;b\r\nc", "a_b__c");
	check_clean("\x1b]0;pwn\x07", "_]0_pwn_");
	check_clean("B\x1b[31mred\x7f", "B_[31mred_");
	check_clean("tab\there", "tab_here");
	/* C1 CSI, bidi override and isolate, line separator: whole */
	check_clean("x\xc2\x9b" "31my", "x__31my");
	check_clean("ab\xe2\x80\xae" "cd", "ab___cd");
	check_clean("\xe2\x81\xa6i", "___i");
	check_clean("l\xe2\x80\xa8", "l___");
	/* broken UTF-8: a byte at a time */
	check_clean("\xff\xfe", "__");
	check_clean("a\xc3", "a_");
	check_clean("\xc0\xaf", "__");		/* overlong '/' */
	check_clean("\xed\xa0\x80", "___");		/* a surrogate */
	check_clean("\xf4\x90\x80\x80", "____");	/* past U+10FFFF */
	check_clean("\xe6\x97x", "__x");
	/* where a folded line would read it otherwise */
	check_clean("A 999999999999", "A_999999999999");
	check_clean("worker ", "worker_");
	check_clean(" lead", "_lead");
	check_clean("#comment", "_comment");
	check_clean("a#b 1x", "a#b 1x");
	check_clean("", "");
}

static void test_labels_and_intern(void)
{
	struct cpa_labels lb;
	char err[160];
	CHECK(cpa_labels_parse("comm,pid,cpu", &lb, err, sizeof(err)) == 0);
	CHECK(lb.n == 3 && lb.order[1] == CPA_LABEL_PID);
	CHECK(cpa_labels_parse("comm,bogus", &lb, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown label 'bogus'") != NULL);
	CHECK(cpa_labels_parse("none", &lb, err, sizeof(err)) == 0 && lb.n == 0);

	/* Build a dictionary through the stream and print folded lines. */
	int fd = memfd_create("labels", 0);
	struct cpa_symwriter sw;
	cpa_symw_init(&sw, fd);
	uint32_t f[3] = {cpa_symw_cstr(&sw, "main"), cpa_symw_cstr(&sw, "run"),
			 cpa_symw_cstr(&sw, "schedule_[k]")};
	uint32_t comm = cpa_symw_cstr(&sw, "app");
	uint32_t thr = cpa_symw_cstr(&sw, "worker");
	uint32_t st = cpa_symw_stack(&sw, f, 3);
	struct cpa_sample s = {.pid = 10, .tid = 11, .cpu = 1, .weight = 5000,
			       .kind = CPA_KIND_OFFCPU_BLOCKED, .stack_id = st,
			       .comm_id = comm, .thread_id = thr};
	cpa_write_sample(&sw.w, &s);
	cpa_write_end(&sw.w);
	cpa_symw_free(&sw);
	lseek(fd, 0, SEEK_SET);
	struct cpa_reader r;
	struct cpa_record rec;
	struct cpa_dict d;
	cpa_dict_init(&d);
	cpa_reader_init(&r, fd, "x", NULL, 0);
	while (cpa_reader_next(&r, &rec) == 1)
		cpa_dict_add(&d, &rec, err, sizeof(err));
	char *out = NULL;
	size_t outlen = 0;
	FILE *mf = open_memstream(&out, &outlen);
	cpa_labels_parse("comm,pid,tid,thread,env,cpu", &lb, err, sizeof(err));
	CHECK(cpa_folded_write_sample(mf, &lb, &d, &s) == 0);
	s.kind = CPA_KIND_ONCPU;
	s.weight = 1;
	cpa_labels_default(&lb);
	CHECK(cpa_folded_write_sample(mf, &lb, &d, &s) == 0);
	s.stack_id = 99;
	CHECK(cpa_folded_write_sample(mf, &lb, &d, &s) == -1);
	fclose(mf);
	CHECK_STR(out, "off-CPU blocked;app;[pid 10];[tid 11];[thread worker];"
		       "[cpu 1];main;run;schedule_[k] 5000\n"
		       "app;main;run;schedule_[k] 1\n");
	free(out);
	cpa_reader_free(&r);
	cpa_dict_free(&d);
	close(fd);

	/* interning stays dense and stable across table growth */
	struct cpa_strtab *t = cpa_strtab_new();
	char key[32];
	int ok = 1;
	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "sym%d", i);
		bool is_new;
		if (cpa_strtab_intern(t, key, strlen(key), &is_new) !=
			    (uint32_t)i + 1 || !is_new)
			ok = 0;
	}
	for (int i = 0; i < 20000; i += 777) {
		snprintf(key, sizeof(key), "sym%d", i);
		bool is_new;
		if (cpa_strtab_intern(t, key, strlen(key), &is_new) !=
			    (uint32_t)i + 1 || is_new)
			ok = 0;
		uint32_t len;
		const char *g = cpa_strtab_get(t, (uint32_t)i + 1, &len);
		if (!g || strcmp(g, key) || len != strlen(key))
			ok = 0;
	}
	CHECK(ok);
	CHECK(cpa_strtab_count(t) == 20000);
	CHECK(cpa_strtab_get(t, 0, NULL) == NULL);
	CHECK(cpa_strtab_get(t, 20001, NULL) == NULL);
	cpa_strtab_free(t);

	struct cpa_stacktab *stt = cpa_stacktab_new();
	ok = 1;
	for (uint32_t i = 0; i < 5000; i++) {
		uint32_t fr[3] = {i, i + 1, i % 7};
		if (cpa_stacktab_intern(stt, fr, 3, NULL) != i + 1)
			ok = 0;
	}
	uint32_t fr[3] = {10, 11, 3}, n;
	bool is_new;
	CHECK(cpa_stacktab_intern(stt, fr, 3, &is_new) == 11 && !is_new);
	CHECK(cpa_stacktab_intern(stt, fr, 2, &is_new) == 5001 && is_new);
	const uint32_t *got = cpa_stacktab_get(stt, 11, &n);
	CHECK(got && n == 3 && got[2] == 3);
	CHECK(ok);
	cpa_stacktab_free(stt);
}

/* A u64-keyed map on the table: keys[id], values beside them. */
struct u64map {
	struct cpa_htab t;
	uint64_t *keys;
	uint32_t n;
	size_t cap;
};

static uint32_t u64map_get(struct u64map *m, uint64_t key, uint64_t h,
			   bool add)
{
	struct cpa_htab_probe pr;
	for (uint32_t id = cpa_htab_first(&m->t, h, &pr); id;
	     id = cpa_htab_next(&m->t, &pr))
		if (m->keys[id] == key)
			return id;
	if (!add)
		return 0;
	CPA_GROW(m->keys, m->cap, (size_t)m->n + 2);
	m->keys[++m->n] = key;
	cpa_htab_add(&m->t, &pr, m->n);
	return m->n;
}

static void test_htab(void)
{
	struct u64map m = {0};
	cpa_htab_init(&m.t, 4);
	size_t first = cpa_htab_bytes(&m.t);
	bool ok = true;
	for (uint64_t k = 0; k < 100000; k++)
		ok &= u64map_get(&m, k * 7919, cpa_hash_u64(k * 7919), true) ==
		      k + 1;
	CHECK(ok);
	CHECK(m.t.count == 100000);
	CHECK(cpa_htab_bytes(&m.t) > first);
	/* at most half full after growing */
	CHECK((uint64_t)m.t.count * 2 <= (uint64_t)m.t.mask + 1);
	ok = true;
	for (uint64_t k = 0; k < 100000; k++)
		ok &= u64map_get(&m, k * 7919, cpa_hash_u64(k * 7919), false) ==
		      k + 1;
	CHECK(ok);
	CHECK(u64map_get(&m, 3, cpa_hash_u64(3), false) == 0);

	/* Every key hashing alike still finds each: the key decides. */
	cpa_htab_clear(&m.t);
	m.n = 0;
	CHECK(u64map_get(&m, 1, 42, false) == 0);
	ok = true;
	for (uint64_t k = 0; k < 300; k++)
		ok &= u64map_get(&m, k, 42, true) == k + 1;
	for (uint64_t k = 0; k < 300; k++)
		ok &= u64map_get(&m, k, 42, false) == k + 1;
	CHECK(ok);
	CHECK(u64map_get(&m, 300, 42, false) == 0);
	/* Same low 32 bits, different high: one slot run, told apart. */
	CHECK(u64map_get(&m, 1000, 42 | 1ull << 40, true) == 301);
	CHECK(u64map_get(&m, 1000, 42 | 1ull << 40, false) == 301);
	cpa_htab_free(&m.t);
	free(m.keys);
}

/* Removes key from m (hashed by h); false when it is not there. */
static bool u64map_remove(struct u64map *m, uint64_t key, uint64_t h)
{
	struct cpa_htab_probe pr;
	for (uint32_t id = cpa_htab_first(&m->t, h, &pr); id;
	     id = cpa_htab_next(&m->t, &pr))
		if (m->keys[id] == key) {
			cpa_htab_remove(&m->t, &pr);
			return true;
		}
	return false;
}

static void test_htab_remove(void)
{
	struct u64map m = {0};
	bool ok = true;

	/* runs that wrap around the end of the slots, homes that collide
	 * and homes that differ: every third key removed, the others found,
	 * the removed ones gone */
	cpa_htab_init(&m.t, 64);
	for (uint64_t k = 0; k < 60; k++)
		ok &= u64map_get(&m, k, (k % 7) + m.t.mask - 3, true) == k + 1;
	for (uint64_t k = 0; k < 60; k += 3)
		ok &= u64map_remove(&m, k, (k % 7) + m.t.mask - 3);
	CHECK(ok);
	CHECK(m.t.count == 40);
	for (uint64_t k = 0; k < 60; k++)
		ok &= u64map_get(&m, k, (k % 7) + m.t.mask - 3, false) ==
		      (k % 3 ? k + 1 : 0);
	CHECK(ok);
	CHECK(!u64map_remove(&m, 0, m.t.mask - 3));
	/* the slots freed are reused: adding and removing forever does not
	 * grow the table */
	size_t bytes = cpa_htab_bytes(&m.t);
	for (uint64_t k = 1000; k < 101000; k++) {
		ok &= u64map_get(&m, k, cpa_hash_u64(k), true) != 0;
		ok &= u64map_remove(&m, k, cpa_hash_u64(k));
	}
	CHECK(ok);
	CHECK(cpa_htab_bytes(&m.t) == bytes);
	CHECK(m.t.count == 40);
	cpa_htab_free(&m.t);
	free(m.keys);
}

static void test_grow(void)
{
	CHECK(cpa_grow_cap(0, 1, 16, 4) == 16);
	CHECK(cpa_grow_cap(16, 17, 16, 4) == 32);
	CHECK(cpa_grow_cap(16, 100, 16, 4) == 128);
	CHECK(cpa_grow_cap(64, 10, 16, 4) == 64);	/* fits already */
	/* overflow: elements whose bytes do not fit a size_t */
	CHECK(cpa_grow_cap(16, SIZE_MAX / 4 + 1, 16, 4) == 0);
	CHECK(cpa_grow_cap(0, SIZE_MAX, 1, 2) == 0);
	CHECK(cpa_grow_cap(0, 1, 1, 0) == 0);
	/* near the top doubling would wrap: it stops at exactly need */
	size_t big = SIZE_MAX / 8 + 1;
	CHECK(cpa_grow_cap(big, big + 1, 1, 4) == big + 1);
	CHECK(cpa_grow_cap(SIZE_MAX / 8, big, 1, 4) == SIZE_MAX / 4 - 1);
	CHECK(cpa_grow_cap(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, 1, 1) ==
	      SIZE_MAX / 2 + 2);

	uint16_t *v = NULL;
	uint8_t cap = 0;	/* a narrow capacity type is fine */
	bool ok = true;
	for (unsigned n = 0; n < 128; n++) {
		CPA_GROW(v, cap, n + 1);
		v[n] = (uint16_t)n;
		ok &= cap >= n + 1;
	}
	for (unsigned n = 0; n < 128; n++)
		ok &= v[n] == n;
	CHECK(ok);
	CHECK(cap == 128);
	free(v);
	uint32_t *z = NULL;
	uint32_t zcap = 0;
	CPA_GROW_ZERO(z, zcap, 5);
	z[4] = 7;
	CPA_GROW_ZERO(z, zcap, 1000);
	CHECK(zcap >= 1000);
	CHECK(z[4] == 7);
	ok = true;
	for (uint32_t i = 5; i < zcap; i++)
		ok &= z[i] == 0;
	CHECK(ok);
	free(z);
}

static void test_buf_and_leb128(void)
{
	static const struct {
		uint64_t v;
		unsigned n;
		uint8_t bytes[10];
	} cases[] = {
		{0, 1, {0}},
		{127, 1, {0x7f}},
		{128, 2, {0x80, 0x01}},
		{624485, 3, {0xe5, 0x8e, 0x26}},
		{UINT64_MAX, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				  0xff, 0xff, 0x01}},
	};
	struct cpa_buf b = {0};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		b.len = 0;
		cpa_buf_uleb128(&b, cases[i].v);
		CHECK(b.len == cases[i].n);
		CHECK(cpa_uleb128_size(cases[i].v) == cases[i].n);
		CHECK(!memcmp(b.p, cases[i].bytes, cases[i].n));
		const uint8_t *p = b.p;
		uint64_t v = 1;
		CHECK(cpa_uleb128(&p, b.p + b.len, &v) && v == cases[i].v);
		CHECK(p == b.p + b.len);
		/* one byte short is a truncated number */
		p = b.p;
		CHECK(!cpa_uleb128(&p, b.p + b.len - 1, &v));
	}
	/* 65 bits, and 11 bytes even of zeros, are not a 64-bit number */
	static const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0x02};
	static const uint8_t longer[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x00};
	const uint8_t *p = over;
	uint64_t v;
	CHECK(!cpa_uleb128(&p, over + sizeof(over), &v));
	p = longer;
	CHECK(!cpa_uleb128(&p, longer + sizeof(longer), &v));
	static const uint8_t padded[] = {0x85, 0x80, 0x00};	/* 5, padded */
	p = padded;
	CHECK(cpa_uleb128(&p, padded + 3, &v) && v == 5);
	static const uint8_t neg[] = {0x7f, 0x80, 0x7f, 0xc0, 0xbb, 0x78};
	int64_t s;
	p = neg;
	CHECK(cpa_sleb128(&p, neg + 1, &s) && s == -1);
	CHECK(cpa_sleb128(&p, neg + 3, &s) && s == -128);
	CHECK(cpa_sleb128(&p, neg + 6, &s) && s == -123456);
	p = neg + 1;
	CHECK(!cpa_sleb128(&p, neg + 2, &s));

	b.len = 0;
	cpa_buf_add(&b, "abc", 3);
	cpa_buf_add(&b, NULL, 0);
	for (int i = 0; i < 10000; i++)
		cpa_buf_add(&b, "xy", 2);
	CHECK(b.len == 20003 && b.cap >= b.len && !memcmp(b.p, "abcxy", 5));
	cpa_buf_free(&b);
	CHECK(b.p == NULL && b.len == 0 && b.cap == 0);
}

static void test_le(void)
{
	uint8_t b[8];
	cpa_put_le16(b, 0x1234);
	CHECK(b[0] == 0x34 && b[1] == 0x12 && cpa_get_le16(b) == 0x1234);
	cpa_put_le32(b, 0xdeadbeef);
	CHECK(b[0] == 0xef && b[3] == 0xde && cpa_get_le32(b) == 0xdeadbeef);
	cpa_put_le64(b, 0x0102030405060708ull);
	CHECK(b[0] == 8 && b[7] == 1);
	CHECK(cpa_get_le64(b) == 0x0102030405060708ull);
}

static void test_fail(void)
{
	char err[64];
	CHECK(cpa_fail(err, sizeof(err), "bad %s", "thing") == -1);
	CHECK_STR(err, "bad thing");
	CHECK(cpa_fail_at(err, sizeof(err), 42, "short %d", 7) == -1);
	CHECK_STR(err, "byte 42: short 7");
	CHECK(cpa_fail_in(err, sizeof(err), "<stdin>", 9, "bad") == -1);
	CHECK_STR(err, "<stdin>: byte 9: bad");
	CHECK(cpa_fail_errno(err, sizeof(err), 2, "%s", "x/meta") == -2);
	CHECK_STR(err, "x/meta: No such file or directory");
	/* a long input name is cut, never overrun */
	char small[12];
	cpa_fail_in(small, sizeof(small), "a-very-long-name", 1, "m");
	CHECK_STR(small, "a-very-long");
	CHECK(cpa_fail(NULL, 0, "nowhere") == -1);
}

/* Container ids and pod UIDs as the runtimes and kubelet name cgroups. */
static void test_owners(void)
{
	const char *id = "0123456789abcdef0123456789abcdef"
			 "0123456789abcdef0123456789abcdef";
	char path[512];
	struct cpa_owner o;
	static const char *const forms[][2] = {
		{"/system.slice/docker-", ".scope"},
		{"/system.slice/cri-containerd-", ".scope"},
		{"/machine.slice/libpod-", ".scope"},
		{"/system.slice/crio-", ".scope"},
		{"/docker/", ""},
	};
	for (size_t i = 0; i < sizeof(forms) / sizeof(*forms); i++) {
		snprintf(path, sizeof(path), "%s%s%s", forms[i][0], id,
			 forms[i][1]);
		cpa_owner_parse(path, &o);
		CHECK_STR(o.container, id);
		CHECK_STR(o.pod, "");
	}
	snprintf(path, sizeof(path), "/kubepods.slice/kubepods-burstable.slice/"
		 "kubepods-burstable-pod1b2c3d4e_aaaa_bbbb_cccc_0123456789ab.slice/"
		 "cri-containerd-%s.scope", id);
	cpa_owner_parse(path, &o);
	CHECK_STR(o.container, id);
	CHECK_STR(o.pod, "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab");
	snprintf(path, sizeof(path), "/kubepods/burstable/"
		 "pod1b2c3d4e-aaaa-bbbb-cccc-0123456789ab/%s", id);
	cpa_owner_parse(path, &o);
	CHECK_STR(o.container, id);
	CHECK_STR(o.pod, "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab");
	/* a guaranteed pod, before its containers exist */
	cpa_owner_parse("/kubepods.slice/kubepods-pod0a0b_0c.slice", &o);
	CHECK_STR(o.pod, "0a0b-0c");
	CHECK_STR(o.container, "");
	/* no owner: a short id, a conmon scope, a pod outside kubepods */
	static const char *const none[] = {
		"/", "/user.slice/user-0.slice/session-1.scope",
		"/system.slice/docker-0123abc.scope",
		"/system.slice/libpod-conmon-0123.scope", "/pod1234",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(*none); i++) {
		cpa_owner_parse(none[i], &o);
		CHECK_STR(o.container, "");
		CHECK_STR(o.pod, "");
	}
	CHECK(cpa_label_is_cgroup("/a") && !cpa_label_is_cgroup("ctr1"));
}

/* The owner line of /proc/PID/cgroup on v2, hybrid and v1 hosts. */
static void test_owner_of_process(void)
{
	const char *id = "0123456789abcdef0123456789abcdef"
			 "0123456789abcdef0123456789abcdef";
	const char *pod = "1b2c3d4e-aaaa-bbbb-cccc-0123456789ab";
	char text[2048], path[512];
	struct cpa_owner o;
	struct cpa_cgroup_line l;
	/* hybrid, Docker's cgroupfs driver: v2 names nothing */
	snprintf(text, sizeof(text),
		 "12:pids:/docker/%s\n9:name=systemd:/system.slice/x.service\n"
		 "4:memory:/docker/%s\n0::/system.slice/containerd.service\n",
		 id, id);
	CHECK(cpa_owner_of_process(text, strlen(text), &o, &l));
	CHECK_STR(o.container, id);
	snprintf(path, sizeof(path), "%.*s", (int)l.path_len, l.path);
	snprintf(text + 1024, 512, "/docker/%s", id);
	CHECK_STR(path, text + 1024);
	CHECK(l.controllers_len == 4 && !memcmp(l.controllers, "pids", 4));
	CHECK(l.hierarchy == 12);
	CHECK(!l.v2);
	/* v1 kubepods (cgroupfs): the line naming pod and container wins
	 * over one naming the pod alone */
	snprintf(text, sizeof(text),
		 "3:cpuset:/kubepods/burstable/pod%s\n"
		 "1:cpu,cpuacct:/kubepods/burstable/pod%s/%s\n0::/\n",
		 pod, pod, id);
	CHECK(cpa_owner_of_process(text, strlen(text), &o, &l));
	CHECK_STR(o.container, id);
	CHECK_STR(o.pod, pod);
	CHECK(l.controllers_len == 11);
	/* the v2 line wins when it names an owner; no trailing newline */
	snprintf(text, sizeof(text),
		 "4:memory:/docker/%s\n0::/system.slice/docker-%s.scope",
		 id, id);
	CHECK(cpa_owner_of_process(text, strlen(text), &o, &l));
	CHECK(l.v2 && l.path_len == strlen("/system.slice/docker-.scope") + 64);
	/* nothing named; malformed lines skipped, never read past the end */
	static const char *const none[] = {
		"", "0::/\n", "4:memory:/user.slice\n0::/init.scope\n",
		"garbage\n:x:/docker/abc\n7:cpu:", "7:cpu:docker",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(*none); i++)
		CHECK(!cpa_owner_of_process(none[i], strlen(none[i]), &o, &l));
	size_t pos = 0;
	const char *two = "1:cpu:/a\n0::/b\n";
	CHECK(cpa_cgroup_line_next(two, strlen(two), &pos, &l) && !l.v2 &&
	      l.path_len == 2);
	CHECK(cpa_cgroup_line_next(two, strlen(two), &pos, &l) && l.v2 &&
	      l.path[1] == 'b');
	CHECK(!cpa_cgroup_line_next(two, strlen(two), &pos, &l));
}

/* A 3.13 _PyRuntime's start: cookie, version, then the offsets 3.13.0
 * builds with (Include/internal/pycore_runtime_init.h), by field index. */
static void py_debug_raw(uint8_t *raw, uint64_t version)
{
	static const struct { unsigned at; uint64_t v; } f[] = {
		{ 5, 632 }, { 9, 7344 }, { 21, 8 }, { 23, 72 }, { 25, 160 },
		{ 29, 8 }, { 30, 0 }, { 31, 56 }, { 33, 70 },
		{ 35, 112 }, { 37, 128 }, { 38, 136 }, { 39, 68 }, { 43, 200 },
		{ 65, 16 }, { 66, 32 }, { 68, 32 }, { 69, 16 }, { 70, 40 },
	};

	memset(raw, 0, CPA_PY_DEBUG_OFFSETS_SIZE);
	memcpy(raw, "xdebugpy", 8);
	cpa_put_le64(raw + 8, version);
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		cpa_put_le64(raw + 8 * f[i].at, f[i].v);
}

static void test_py_offsets(void)
{
	uint8_t raw[CPA_PY_DEBUG_OFFSETS_SIZE];
	struct cpa_py_offsets o;
	const char *err = NULL;

	CHECK(cpa_py_offsets(0x0308) == NULL);
	for (uint16_t v = 0x0309; v <= 0x030d; v++)
		CHECK(cpa_py_offsets(v) && cpa_py_offsets(v)->version == v);
	/* 3.13's own offsets: the walker's from them, the same as the table */
	py_debug_raw(raw, 0x030d00f0);
	CHECK(cpa_py_offsets_debug(raw, sizeof(raw), &o, &err) == 0);
	CHECK(!strcmp(o.source, "_Py_DebugOffsets") && o.version == 0x030d);
	CHECK(o.runtime_interp_head == 632 && o.interp_threads == 7344 &&
	      o.tstate_frame == 72 && o.tstate_tid == 160 &&
	      o.frame_entry == 70 && o.frame_instr == 56);
	const struct cpa_py_offsets *t = cpa_py_offsets(0x030d);
	CHECK(o.tstate_next == t->tstate_next && o.frame_code == t->frame_code &&
	      o.frame_previous == t->frame_previous &&
	      o.shim_owner == t->shim_owner && o.lines == t->lines &&
	      o.code_qualname == t->code_qualname &&
	      o.str_compact_size == t->str_compact_size);
	/* a build that moved a thread field: taken from the interpreter */
	cpa_put_le64(raw + 8 * 25, 168);
	CHECK(cpa_py_offsets_debug(raw, sizeof(raw), &o, &err) == 0 &&
	      o.tstate_tid == 168);
	/* refused, each with its reason */
	CHECK(cpa_py_offsets_debug(raw, 100, &o, &err) == -1 &&
	      !strcmp(err, "no _Py_DebugOffsets"));
	raw[0] = 'y';
	CHECK(cpa_py_offsets_debug(raw, sizeof(raw), &o, &err) == -1 &&
	      !strcmp(err, "no _Py_DebugOffsets"));
	py_debug_raw(raw, 0x030e00f0);
	CHECK(cpa_py_offsets_debug(raw, sizeof(raw), &o, &err) == -1 &&
	      strstr(err, "layout"));
	py_debug_raw(raw, 0x030d00f0);
	cpa_put_le64(raw + 16, 1);
	CHECK(cpa_py_offsets_debug(raw, sizeof(raw), &o, &err) == -1 &&
	      strstr(err, "free-threaded"));
	py_debug_raw(raw, 0x030d00f0);
	cpa_put_le64(raw + 8 * 37, 136);
	CHECK(cpa_py_offsets_debug(raw, sizeof(raw), &o, &err) == -1 &&
	      strstr(err, "code or str"));
	py_debug_raw(raw, 0x030d00f0);
	cpa_put_le64(raw + 8 * 29, 200);
	CHECK(cpa_py_offsets_debug(raw, sizeof(raw), &o, &err) == -1 &&
	      strstr(err, "range"));
}

/* The fleet's stack key must never change: ClickHouse holds it for every
 * stack of every host, across releases. */
static void test_stack_hash(void)
{
	const char *f[] = {"main", "run", "hot_leaf_[k]"};
	uint64_t h = CPA_STACK_HASH_INIT;
	for (int i = 0; i < 3; i++)
		h = cpa_stack_hash_add(h, f[i], strlen(f[i]));
	CHECK(h == 0xf3533a2a7b3e0488ull);
	/* order matters: the same frames the other way are another stack */
	uint64_t r = CPA_STACK_HASH_INIT;
	for (int i = 2; i >= 0; i--)
		r = cpa_stack_hash_add(r, f[i], strlen(f[i]));
	CHECK(r != h);
}

/* ClickHouse's HTTP client: URLs, literals, RowBinary answers. */
static void test_clickhouse(void)
{
	struct cpa_ch ch;
	char err[200];
	CHECK(cpa_ch_init(&ch, "http://u:secret@ch1:9123/?max_threads=2", err,
			  sizeof(err)) == 0);
	CHECK_STR(ch.host, "ch1");
	CHECK_STR(ch.port, "9123");
	CHECK_STR(ch.params, "max_threads=2");
	CHECK_STR(ch.url, "http://u@ch1:9123");	/* never the password */
	CHECK_STR(ch.auth, "Basic dTpzZWNyZXQ=");
	cpa_ch_free(&ch);
	CHECK(cpa_ch_init(&ch, "http://[::1]", err, sizeof(err)) == 0);
	CHECK_STR(ch.host, "::1");
	CHECK_STR(ch.port, "8123");
	cpa_ch_free(&ch);
	CHECK(cpa_ch_init(&ch, "https://ch1", err, sizeof(err)) == -1);
	CHECK(cpa_ch_init(&ch, "http://ch1:80x", err, sizeof(err)) == -1);
	CHECK(strstr(err, "expected http://HOST"));
	CHECK(cpa_ch_init(&ch, "http://ch1/db", err, sizeof(err)) == -1);

	struct cpa_buf b = {0};
	cpa_ch_quote_str(&b, "it's a\\b\n");
	cpa_buf_add(&b, "", 1);
	CHECK_STR((char *)b.p, "'it\\'s a\\\\b\\x0a'");
	b.len = 0;
	cpa_rb_string(&b, "abc", 3);
	cpa_rb_u64(&b, 42);
	cpa_rb_u16(&b, 7);
	struct cpa_rb rb;
	uint32_t len;
	cpa_rb_init(&rb, b.p, b.len);
	const char *s = cpa_rb_get_string(&rb, &len);
	CHECK(len == 3 && !memcmp(s, "abc", 3));
	CHECK(cpa_rb_get_u64(&rb) == 42);
	CHECK(cpa_rb_get_u16(&rb) == 7);
	CHECK(!cpa_rb_more(&rb) && !rb.bad);
	/* a cut answer is noticed, never read past */
	cpa_rb_init(&rb, b.p, 2);
	cpa_rb_get_string(&rb, &len);
	CHECK(rb.bad && len == 0);
	cpa_buf_free(&b);
}

/* A chunked answer larger than one read: the chunk lines that follow a
 * read that filled the buffer are parsed where the buffer is now, not
 * where it was before it grew. */
static void test_http_chunked(void)
{
	enum { CHUNKS = 256, SIZE = 4096 };
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		static const char head[] = "HTTP/1.1 200 OK\r\n"
			"Transfer-Encoding: chunked\r\n\r\n";
		char chunk[SIZE + 16];
		close(sv[0]);
		if (cpa_write_full(sv[1], head, sizeof(head) - 1))
			_exit(1);
		for (int i = 0; i < CHUNKS; i++) {
			int n = snprintf(chunk, sizeof(chunk), "%x\r\n", SIZE);
			memset(chunk + n, i & 0xff, SIZE);
			memcpy(chunk + n + SIZE, "\r\n", 2);
			if (cpa_write_full(sv[1], chunk, (size_t)n + SIZE + 2))
				_exit(1);
		}
		_exit(cpa_write_full(sv[1], "0\r\n\r\n", 5) ? 1 : 0);
	}
	close(sv[1]);
	CHECK(pid > 0);
	struct cpa_http_io io = { .fd = sv[0], .timeout_ms = 10000 };
	struct cpa_buf h = { 0 }, body = { 0 };
	int status = 0, bad = 0, wst = 0;
	bool close_after = false;
	CHECK(cpa_http_read_answer(&io, 65536, 1u << 24, &h, &body, &status,
				   &close_after) == 0);
	CHECK(status == 200);
	CHECK(body.len == (size_t)CHUNKS * SIZE);
	for (size_t j = 0; j < body.len; j++)
		bad += body.p[j] != ((j / SIZE) & 0xff);
	CHECK(bad == 0);
	close(sv[0]);
	CHECK(waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) &&
	      WEXITSTATUS(wst) == 0);
	cpa_buf_free(&h);
	cpa_buf_free(&body);
}

/* /proc/PID/maps lines, and this process's own */
static void test_maps(void)
{
	struct cpa_map m;
	CHECK(cpa_maps_parse("7f1c2a400000-7f1c2a428000 r-xp 00028000 fd:01 "
			     "1835023                    /usr/lib/x86_64-linux-"
			     "gnu/libc.so.6", &m) == 0);
	CHECK(m.start == 0x7f1c2a400000 && m.end == 0x7f1c2a428000);
	CHECK(m.pgoff == 0x28000 && m.inode == 1835023);
	CHECK(m.dev_major == 0xfd && m.dev_minor == 1);
	CHECK_STR(m.perms, "r-xp");
	CHECK(cpa_map_exec(&m));
	CHECK_STR(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	CHECK(m.path_len == strlen(m.path));
	/* no name: the inode ends the line, with or without a space */
	CHECK(cpa_maps_parse("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0",
			     &m) == 0);
	CHECK_STR(m.path, "");
	CHECK(!cpa_map_exec(&m));
	CHECK(cpa_maps_parse("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0 ",
			     &m) == 0);
	CHECK_STR(m.path, "");
	/* a name with spaces, and a file deleted since */
	CHECK(cpa_maps_parse("1000-2000 r-xs 00000000 08:02 77 /tmp/a b (deleted)",
			     &m) == 0);
	CHECK_STR(m.path, "/tmp/a b (deleted)");
	CHECK(m.perms[3] == 's');
	CHECK(cpa_maps_parse("ffffffffff600000-ffffffffff601000 --xp 00000000 "
			     "00:00 0                  [vsyscall]", &m) == 0);
	CHECK_STR(m.path, "[vsyscall]");
	/* not maps lines */
	CHECK(cpa_maps_parse("", &m) == -1);
	CHECK(cpa_maps_parse("1000-2000 r-xp", &m) == -1);
	CHECK(cpa_maps_parse("1000 2000 r-xp 0 00:00 0", &m) == -1);
	CHECK(cpa_maps_parse("2000-1000 r-xp 00000000 00:00 0", &m) == -1);
	CHECK(cpa_maps_parse("1000-2000 r-x 00000000 00:00 0", &m) == -1);
	CHECK(cpa_maps_parse("1000-2000 r-xp 00000000 00:00 x /a", &m) == -1);
	CHECK(cpa_maps_parse("1000-2000 r-xp 00000000 0000 0 /a", &m) == -1);

	/* ours: the code of this function is in an executable mapping of
	 * this program, and the stack is named */
	struct cpa_maps it;
	uintptr_t here = (uintptr_t)&test_maps;
	int code = 0, stack = 0, n = 0;
	CHECK(cpa_maps_open(&it, 0) == 0);
	while (cpa_maps_next(&it, &m)) {
		n++;
		if (m.start <= here && here < m.end && cpa_map_exec(&m) &&
		    m.path[0] == '/' && m.inode)
			code++;
		if (!strcmp(m.path, "[stack]"))
			stack++;
	}
	cpa_maps_close(&it);
	CHECK(n > 3);
	CHECK(code == 1);
	CHECK(stack == 1);
	CHECK(cpa_maps_open(&it, 0x7fffffff) == -ENOENT);
}

/* The clocks: monotonic does not go back; realtime is past 2026-01-01. */
static void test_clock(void)
{
	uint64_t a = cpa_mono_ns(), b = cpa_mono_ns();
	CHECK(b >= a);
	CHECK(cpa_now_ns() > 1767225600ull * CPA_NSEC_PER_SEC);
	struct timespec ts = cpa_timespec(3 * CPA_NSEC_PER_SEC + 5);
	CHECK(ts.tv_sec == 3 && ts.tv_nsec == 5);
	CHECK(cpa_timespec_ns(&ts) == 3 * CPA_NSEC_PER_SEC + 5);
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* Writing all of a buffer through a pipe smaller than it, and errors. */
static void test_write_full(void)
{
	int fds[2];
	CHECK(pipe(fds) == 0);
	CHECK(fcntl(fds[1], F_SETPIPE_SZ, 4096) > 0);
	size_t len = 256 * 1024;
	uint8_t *buf = malloc(len), *got = calloc(1, len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7);
	pid_t pid = fork();
	if (pid == 0) {
		/* a timer without SA_RESTART interrupts the blocked writes,
		 * which then return what they wrote so far, or EINTR */
		struct sigaction sa = { .sa_handler = on_alarm };
		struct itimerval tv = { { 0, 300 }, { 0, 300 } };
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &tv, NULL);
		close(fds[0]);
		_exit(cpa_write_full(fds[1], buf, len) == 0 ? 0 : 1);
	}
	close(fds[1]);
	size_t at = 0;
	ssize_t k;
	/* read slowly, a page at a time, so the writer blocks */
	while (at < len && (k = read(fds[0], got + at,
				    len - at < 4096 ? len - at : 4096)) > 0) {
		at += (size_t)k;
		usleep(100);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK(at == len && !memcmp(buf, got, len));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the reader gone: EPIPE, with SIGPIPE ignored as the tools do */
	CHECK(pipe(fds) == 0);
	close(fds[0]);
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	CHECK(cpa_write_full(fds[1], buf, 10) == -EPIPE);
	signal(SIGPIPE, old);
	close(fds[1]);
	CHECK(cpa_write_full(-1, buf, 10) == -EBADF);
	/* pwrite at an offset, which advances */
	char path[] = "/tmp/cpa-lib-test-XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	CHECK(cpa_pwrite_full(fd, "abc", 3, 5) == 0);
	char back[8] = "";
	CHECK(pread(fd, back, sizeof(back), 0) == 8);
	CHECK(!memcmp(back, "\0\0\0\0\0abc", 8));
	close(fd);
	/* send to a socket pair, and to a peer gone */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	CHECK(cpa_send_full(fds[0], "hello", 5) == 0);
	CHECK(read(fds[1], back, 5) == 5 && !memcmp(back, "hello", 5));
	close(fds[1]);
	CHECK(cpa_send_full(fds[0], "x", 1) == -EPIPE);
	close(fds[0]);
	/* a non-blocking socket: a full buffer waited on, then timed out */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	CHECK(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
	CHECK(cpa_send_full(fds[0], buf, len) == -EAGAIN);
	uint64_t t0 = cpa_mono_ns();
	CHECK(cpa_send_full_within(fds[0], buf, len, 50) == -ETIMEDOUT);
	CHECK(cpa_mono_ns() - t0 >= 50 * CPA_NSEC_PER_MSEC);
	close(fds[0]);
	close(fds[1]);
	/* ...and sent whole to a reader that takes it slowly */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
	CHECK(fcntl(fds[0], F_SETFL, O_NONBLOCK) == 0);
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		_exit(cpa_send_full_within(fds[0], buf, len, 5000) == 0 ? 0 : 1);
	}
	close(fds[0]);
	at = 0;
	while (at < len && (k = read(fds[1], got + at,
				    len - at < 4096 ? len - at : 4096)) > 0) {
		at += (size_t)k;
		usleep(100);
	}
	waitpid(pid, &st, 0);
	CHECK(at == len && !memcmp(buf, got, len));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fds[1]);
	free(buf);
	free(got);
}

/* The exposition writer: escaped label values, a value too long for
 * the set left out whole, cumulative buckets ending in +Inf. */
static void test_promtext(void)
{
	struct cpa_promlabels l;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	static const double le[] = { 0.001, 0.01 };
	static const uint64_t counts[] = { 2, 3 };
	char big[600];

	cpa_prom_family(f, "cpa_x_total", "counter", "Help with a \\ and\na newline.");
	cpa_prom_labels_init(&l);
	cpa_prom_label(&l, "comm", "a\"b\\c\nd");
	cpa_prom_u64(f, "cpa_x_total", &l, 7);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cpa_prom_label(&l, "big", big);
	CHECK(l.cut);
	CHECK(!strstr(l.s, "big="));
	cpa_prom_family(f, "cpa_h_seconds", "histogram", "A histogram.");
	cpa_prom_histogram(f, "cpa_h_seconds", NULL, le, counts, 2, 0.5, 9);
	cpa_prom_double(f, "cpa_d", NULL, HUGE_VAL);
	fclose(f);
	CHECK(strstr(text, "# HELP cpa_x_total Help with a \\\\ and\\na newline.\n"
			   "# TYPE cpa_x_total counter\n") != NULL);
	CHECK(strstr(text, "cpa_x_total{comm=\"a\\\"b\\\\c\\nd\"} 7\n") != NULL);
	CHECK(strstr(text, "cpa_h_seconds_bucket{le=\"0.001\"} 2\n"
			   "cpa_h_seconds_bucket{le=\"0.01\"} 5\n"
			   "cpa_h_seconds_bucket{le=\"+Inf\"} 9\n"
			   "cpa_h_seconds_sum 0.5\ncpa_h_seconds_count 9\n") != NULL);
	CHECK(strstr(text, "cpa_d +Inf\n") != NULL);
	free(text);
}

int main(void)
{
	test_maps();
	test_clock();
	test_write_full();
	test_owners();
	test_owner_of_process();
	test_durations();
	test_sizes();
	test_times();
	test_cpusets();
	test_folded();
	test_names();
	test_labels_and_intern();
	test_htab();
	test_htab_remove();
	test_grow();
	test_buf_and_leb128();
	test_le();
	test_fail();
	test_py_offsets();
	test_stack_hash();
	test_clickhouse();
	test_http_chunked();
	test_promtext();
	return unit_done("lib_test");
}
