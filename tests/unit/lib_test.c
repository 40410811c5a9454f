/* SPDX-License-Identifier: MIT */
/* Time, size and CPU-set parsing, folded lines, labels and interning. */
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpuset.h"
#include "folded.h"
#include "intern.h"
#include "labels.h"
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
	CHECK(parse(" 12", &l, err) == 0 || l.stack_len > 0);
	CHECK(parse("a 99999999999999999999999", &l, err) == -1);
	CHECK(strstr(err, "too large") != NULL);
	char s[] = "a;b\nc";
	cpa_folded_sanitize(s);
	CHECK_STR(s, "a_b_c");
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

int main(void)
{
	test_durations();
	test_sizes();
	test_times();
	test_cpusets();
	test_folded();
	test_labels_and_intern();
	return unit_done("lib_test");
}
