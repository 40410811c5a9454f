/* SPDX-License-Identifier: MIT */
/* Unit tests of the store format: codec pieces, then a segment written
 * and read back, then a torn tail. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "unit.h"

#define S 1000000000ull

/* CRC-32 a bit at a time, as the polynomial defines it. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffffu;
	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
	}
	return c ^ 0xffffffffu;
}

static void test_codec(void)
{
	CHECK(cpa_store_crc32("123456789", 9) == 0xcbf43926u);
	/* eight bytes a step, from any alignment, and the bytes left over */
	uint8_t buf[1031];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + (i >> 3));
	for (size_t at = 0; at < 8; at++)
		for (size_t len = 0; len + at <= sizeof(buf); len += 97)
			CHECK(cpa_store_crc32(buf + at, len) ==
			      crc32_bitwise(buf + at, len));

	uint8_t h[CPA_STORE_FILE_HEADER];
	uint16_t maj, min;
	uint64_t iv, st;
	char err[256];
	cpa_store_header_encode(h, CPA_STORE_DATA, S, 3600 * S);
	CHECK(cpa_store_header_decode(h, sizeof(h), CPA_STORE_DATA, &maj, &min,
				      &iv, &st, err, sizeof(err)) == 0);
	CHECK(maj == CPA_STORE_MAJOR && iv == S && st == 3600 * S);
	CHECK(cpa_store_header_decode(h, sizeof(h), CPA_STORE_INDEX, &maj,
				      &min, &iv, &st, err, sizeof(err)) == -1);
	CHECK_STR(err, "byte 0: not a cpa store index file (bad magic)");
	CHECK(cpa_store_header_decode(h, 20, CPA_STORE_DATA, &maj, &min, &iv,
				      &st, err, sizeof(err)) == -1);
	h[8] = CPA_STORE_MAJOR + 1;
	CHECK(cpa_store_header_decode(h, sizeof(h), CPA_STORE_DATA, &maj, &min,
				      &iv, &st, err, sizeof(err)) == -2);
	h[8] = CPA_STORE_MAJOR;
	h[20] ^= 1;
	CHECK(cpa_store_header_decode(h, sizeof(h), CPA_STORE_DATA, &maj, &min,
				      &iv, &st, err, sizeof(err)) == -1);

	/* compared whole: padding zeroed on both sides */
	struct cpa_store_index_entry e, d;
	memset(&e, 0, sizeof(e));
	memset(&d, 0, sizeof(d));
	e.cover_from = 1;
	e.cover_to = 2;
	e.min_start = 10 * S;
	e.max_end = 12 * S;
	e.data_off = 64;
	e.dict_off = 64;
	e.data_len = 100;
	e.n_windows = 2;
	uint8_t ie[CPA_STORE_INDEX_ENTRY];
	cpa_store_index_encode(ie, &e);
	CHECK(cpa_store_index_decode(ie, &d, err, sizeof(err)) == 0);
	CHECK(!memcmp(&e, &d, sizeof(e)));
	ie[33] ^= 0x40;
	CHECK(cpa_store_index_decode(ie, &d, err, sizeof(err)) == -1);

	struct cpa_buf blk = {0}, raw = {0};
	const char text[] = "a block of text a block of text a block of text";
	CHECK(cpa_store_block_pack(&blk, text, sizeof(text), 3, err,
				   sizeof(err)) == 0);
	CHECK(cpa_store_block_unpack(blk.p, blk.len, &raw, err,
				     sizeof(err)) == 0);
	CHECK(raw.len == sizeof(text) && !memcmp(raw.p, text, raw.len));
	CHECK(cpa_store_block_unpack(blk.p, blk.len - 1, &raw, err,
				     sizeof(err)) == -1);
	blk.p[blk.len - 1] ^= 1;
	CHECK(cpa_store_block_unpack(blk.p, blk.len, &raw, err,
				     sizeof(err)) == -1);
	CHECK_STR(err, "block checksum mismatch");
	cpa_buf_free(&blk);
	cpa_buf_free(&raw);

	char **kv;
	const char meta[] = "format=1.0\n# comment\n\nhost=a\nhost=b\n";
	CHECK(cpa_store_meta_parse(meta, strlen(meta), &kv, err,
				   sizeof(err)) == 0);
	CHECK_STR(cpa_store_meta_get(kv, "host"), "b");
	CHECK(cpa_store_meta_get(kv, "kernel") == NULL);
	cpa_store_meta_free(kv);
	CHECK(cpa_store_meta_parse("ok=1\nbad line\n", 14, &kv, err,
				   sizeof(err)) == -1);
	CHECK_STR(err, "line 2: expected key=value");

	char name[CPA_STORE_NAME_MAX];
	cpa_store_segment_name(1764496800 * S, 0, name, sizeof(name));
	CHECK_STR(name, "20251130T100000Z");
	cpa_store_segment_name(1764496800 * S, 2, name, sizeof(name));
	CHECK_STR(name, "20251130T100000Z-2");
	CHECK(cpa_store_is_segment_name("20251130T100000Z"));
	CHECK(cpa_store_is_segment_name("20251130T100000Z-12"));
	CHECK(!cpa_store_is_segment_name("20251130T100000Z-"));
	CHECK(!cpa_store_is_segment_name("20251130T100000"));
	CHECK(!cpa_store_is_segment_name("lock"));
	CHECK(!cpa_store_is_segment_name(".20251130T100000Z.tmp"));
}

struct seen {
	uint64_t start[8];
	uint64_t weight[8];
	uint32_t n[8];
	int windows;
};

static int on_window(void *arg, uint64_t start, const struct cpa_store_entry *e,
		     uint32_t n)
{
	struct seen *s = arg;
	if (s->windows < 8) {
		s->start[s->windows] = start;
		s->n[s->windows] = n;
		for (uint32_t i = 0; i < n; i++)
			s->weight[s->windows] += e[i].weight;
	}
	s->windows++;
	return 0;
}

static void test_segment(const char *dir)
{
	char err[512];
	struct cpa_segment_writer *sw = cpa_segment_create(
		dir, "20251130T100000Z", 1764496800 * S, S, "host=test\n", err,
		sizeof(err));
	CHECK(sw != NULL);
	if (!sw)
		return;
	/* a second segment of the same name is refused */
	CHECK(cpa_segment_create(dir, "20251130T100000Z", 1764496800 * S, S,
				 NULL, err, sizeof(err)) == NULL);
	uint32_t f[3] = {cpa_segment_string(sw, "main", 4),
			 cpa_segment_string(sw, "work", 4),
			 cpa_segment_string(sw, "leaf", 4)};
	uint32_t st1 = cpa_segment_stack(sw, f, 3);
	uint32_t st2 = cpa_segment_stack(sw, f, 2);
	struct cpa_store_labelset ls = {.pid = 7, .tid = 8, .cpu = 1,
					.comm = cpa_segment_string(sw, "app", 3)};
	uint32_t l1 = cpa_segment_labelset(sw, &ls);
	CHECK(cpa_segment_labelset(sw, &ls) == l1);
	ls.cpu = 2;
	uint32_t l2 = cpa_segment_labelset(sw, &ls);
	CHECK(l2 != l1);

	uint64_t t0 = 1764496800 * S;
	/* unsorted, with a repeated pair that must be merged */
	struct cpa_store_entry e1[] = {{l2, st1, 5}, {l1, st2, 1}, {l1, st1, 2},
				       {l1, st2, 3}};
	struct cpa_store_entry e2[] = {{l1, st1, 10}};
	struct cpa_store_window w[] = {{t0 + 3 * S, 1, 1, e2},
				       {t0 + S, 4, 4, e1}};
	CHECK(cpa_segment_append(sw, w, 2, t0, t0 + 4 * S, err,
				 sizeof(err)) == 0);
	/* a second block that adds a dictionary entry */
	uint32_t st3 = cpa_segment_stack(sw, f + 1, 2);
	struct cpa_store_entry e3[] = {{l1, st3, 4}};
	struct cpa_store_window w3[] = {{t0 + 5 * S, 1, 1, e3}};
	CHECK(cpa_segment_append(sw, w3, 1, t0 + 4 * S, t0 + 6 * S, err,
				 sizeof(err)) == 0);
	CHECK(cpa_segment_max_end(sw) == t0 + 6 * S);
	cpa_segment_close(sw);

	char path[256];
	snprintf(path, sizeof(path), "%s/20251130T100000Z", dir);
	struct cpa_segment_info si;
	CHECK(cpa_segment_info_read(path, &si, err, sizeof(err)) == 0);
	CHECK(si.n_idx == 2 && si.torn_bytes == 0);
	CHECK(si.min_start == t0 + S && si.max_end == t0 + 6 * S);
	CHECK_STR(cpa_store_meta_get(si.meta, "host"), "test");
	struct cpa_segment_reader r;
	CHECK(cpa_segment_reader_open(&r, &si, err, sizeof(err)) == 0);
	struct seen s = {0};
	for (size_t i = 0; i < si.n_idx; i++)
		CHECK(cpa_segment_reader_block(&r, i, on_window, &s, err,
					       sizeof(err)) == 0);
	CHECK(s.windows == 3);
	CHECK(s.start[0] == t0 + S && s.n[0] == 3 && s.weight[0] == 11);
	CHECK(s.start[1] == t0 + 3 * S && s.weight[1] == 10);
	CHECK(s.start[2] == t0 + 5 * S && s.weight[2] == 4);
	uint32_t n;
	const uint32_t *fr = cpa_dict_stack(&r.dict.d, st3, &n);
	CHECK(fr && n == 2);
	if (fr)
		CHECK_STR(cpa_dict_string(&r.dict.d, fr[1], NULL), "leaf");
	CHECK(r.dict.labelsets[l2].cpu == 2 && r.dict.labelsets[l2].pid == 7);
	cpa_segment_reader_close(&r);
	cpa_segment_info_free(&si);

	/* a torn last entry: the first commit stays readable */
	char file[300];
	snprintf(file, sizeof(file), "%s/index", path);
	CHECK(truncate(file, CPA_STORE_FILE_HEADER +
			       CPA_STORE_INDEX_ENTRY + 10) == 0);
	CHECK(cpa_segment_info_read(path, &si, err, sizeof(err)) == 0);
	CHECK(si.n_idx == 1 && si.torn_bytes == 10);
	CHECK(si.valid_data < si.data_size);
	cpa_segment_info_free(&si);
}

/* Lost windows: runs join where they touch, stay bounded, and read back. */
static void test_lost(void)
{
	static struct cpa_store_lost r[CPA_STORE_LOST_MAX];
	size_t n = 0;
	cpa_store_lost_add(r, &n, 10, 11, 2);
	cpa_store_lost_add(r, &n, 12, 13, 1);
	cpa_store_lost_add(r, &n, 11, 12, 4);	/* bridges the two */
	cpa_store_lost_add(r, &n, 5, 6, 1);	/* before, apart */
	CHECK(n == 2 && r[0].from == 5 && r[0].to == 6 && r[1].from == 10 &&
	      r[1].to == 13 && r[1].count == 7);
	struct cpa_buf b = {0};
	cpa_store_lost_format(r, n, &b);
	cpa_buf_add(&b, "", 1);
	CHECK(!strcmp((char *)b.p, "5-6:1,10-13:7"));
	struct cpa_store_lost *back = NULL;
	size_t nb = 0, cap = 0;
	char err[160];
	CHECK(cpa_store_lost_parse((char *)b.p, &back, &nb, &cap, err,
				   sizeof(err)) == 0);
	CHECK(nb == 2 && back[1].from == 10 && back[1].to == 13 &&
	      back[1].count == 7);
	CHECK(cpa_store_lost_parse("1-2:3,x", &back, &nb, &cap, err,
				   sizeof(err)) < 0 && strstr(err, "lost run 2"));
	CHECK(cpa_store_lost_parse("4-4:1", &back, &nb, &cap, err,
				   sizeof(err)) < 0);
	CHECK(cpa_store_lost_parse("1-2:", &back, &nb, &cap, err,
				   sizeof(err)) < 0);
	free(back);
	cpa_buf_free(&b);
	/* full: a new run joins its nearest, nothing is dropped */
	n = 0;
	uint64_t total = 0;
	for (uint64_t i = 0; i < CPA_STORE_LOST_MAX + 10; i++) {
		cpa_store_lost_add(r, &n, 10 * i, 10 * i + 1, i);
		total += i;
	}
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += r[i].count;
		CHECK(r[i].from < r[i].to);
		CHECK(i == 0 || r[i - 1].to < r[i].from);
	}
	CHECK(n == CPA_STORE_LOST_MAX && sum == total);
}

/* Segments of one period that closed early (-1 .. -N) list in time
 * order, -2 before -10. */
static void test_list_order(const char *dir)
{
	static const char *made[] = {
		"20261201T100000Z-10", "20261201T100000Z-2",
		"20261201T110000Z", "20261201T100000Z", "20261201T100000Z-1",
	};
	static const char *want[] = {
		"20261201T100000Z", "20261201T100000Z-1", "20261201T100000Z-2",
		"20261201T100000Z-10", "20261201T110000Z",
	};
	char path[256], err[256];
	for (size_t i = 0; i < sizeof(made) / sizeof(*made); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, made[i]);
		CHECK(mkdir(path, 0755) == 0);
	}
	char **names = NULL;
	size_t n = 0;
	CHECK(cpa_store_list_names(dir, &names, &n, err, sizeof(err)) == 0);
	CHECK(n == sizeof(want) / sizeof(*want));
	for (size_t i = 0; i < n; i++) {
		CHECK(i >= sizeof(want) / sizeof(*want) ||
		      !strcmp(names[i], want[i]));
		free(names[i]);
	}
	free(names);
}

/* Processes over budget: summed by pid and comm, the rest in one place,
 * read back whatever their names hold. */
static void test_over(void)
{
	struct cpa_store_over r[CPA_STORE_OVER_MAX];
	size_t n = 0;
	char err[160];
	CHECK(cpa_store_over_add(r, &n, 42, "py,th%n", 3, 100));
	CHECK(!cpa_store_over_add(r, &n, 42, "py,th%n", 2, 50));
	for (uint32_t pid = 100; pid < 200; pid++)
		cpa_store_over_add(r, &n, pid, "x", 1, 1);
	CHECK(n == CPA_STORE_OVER_MAX);
	CHECK(r[0].stacks == 5 && r[0].bytes == 150);
	CHECK(r[n - 1].pid == 0 && !strcmp(r[n - 1].comm, "(others)"));
	CHECK(r[n - 1].stacks == 100 - (CPA_STORE_OVER_MAX - 2));
	struct cpa_buf b = {0};
	cpa_store_over_format(r, n, &b);
	cpa_buf_add(&b, "", 1);
	CHECK(!strncmp((char *)b.p, "42:5:150:py%2Cth%25n,100:1:1:x,", 31));
	CHECK(b.len < CPA_STORE_OVER_MAX * 128);
	struct cpa_store_over *back = NULL;
	size_t nb = 0, cap = 0;
	CHECK(cpa_store_over_parse((char *)b.p, &back, &nb, &cap, err,
				   sizeof(err)) == 0);
	CHECK(nb == n && back[0].pid == 42 && !strcmp(back[0].comm, "py,th%n"));
	/* a second segment's adds to the same process */
	CHECK(cpa_store_over_parse("42:1:1:py%2Cth%25n", &back, &nb, &cap, err,
				   sizeof(err)) == 0);
	CHECK(nb == n && back[0].stacks == 6);
	CHECK(cpa_store_over_parse("42:x", &back, &nb, &cap, err,
				   sizeof(err)) == -1);
	free(back);
	cpa_buf_free(&b);

	/* a run of no sample, as writers before 1.2 left at the epoch */
	struct cpa_store_lost *l = NULL;
	size_t nl = 0, capl = 0;
	CHECK(cpa_store_lost_parse("0-1000000000:0,5-6:3", &l, &nl, &capl, err,
				   sizeof(err)) == 0);
	CHECK(nl == 1 && l[0].from == 5 && l[0].count == 3);
	free(l);
}

/* A segment an older cpa-store wrote with the names of an older
 * cpa-unwind: the reader hands out clean names (lib/base/name.h). */
static void test_unclean_names(const char *dir)
{
	char err[512];
	uint64_t t0 = 1764500400 * S;
	struct cpa_segment_writer *sw = cpa_segment_create(
		dir, "20251130T110000Z", t0, S, NULL, err, sizeof(err));
	CHECK(sw != NULL);
	if (!sw)
		return;
	const char evil[] = "A 999999999999\n;\x1b]0;x";
	uint32_t f = cpa_segment_string(sw, evil, sizeof(evil) - 1);
	uint32_t st = cpa_segment_stack(sw, &f, 1);
	struct cpa_store_labelset ls = {.pid = 1, .tid = 1};
	struct cpa_store_entry e[] = {{cpa_segment_labelset(sw, &ls), st, 1}};
	struct cpa_store_window w[] = {{t0, 1, 1, e}};
	CHECK(cpa_segment_append(sw, w, 1, t0, t0 + S, err, sizeof(err)) == 0);
	cpa_segment_close(sw);

	char path[256];
	snprintf(path, sizeof(path), "%s/20251130T110000Z", dir);
	struct cpa_segment_info si;
	struct cpa_segment_reader r;
	CHECK(cpa_segment_info_read(path, &si, err, sizeof(err)) == 0);
	CHECK(cpa_segment_reader_open(&r, &si, err, sizeof(err)) == 0);
	CHECK(cpa_segment_reader_dict(&r, 0, err, sizeof(err)) == 0);
	uint32_t len = 0;
	CHECK_STR(cpa_dict_string(&r.dict.d, f, &len), "A 999999999999___]0_x");
	CHECK(len == sizeof(evil) - 1);
	CHECK(r.dict.d.cleaned == 1);
	cpa_segment_reader_close(&r);
	cpa_segment_info_free(&si);
}

int main(void)
{
	test_codec();
	test_lost();
	test_over();
	char dir[] = "/tmp/store_test.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	test_segment(dir);
	test_unclean_names(dir);
	char order[] = "/tmp/store_test.XXXXXX";
	if (!mkdtemp(order))
		return 1;
	test_list_order(order);
	char rm[64];
	snprintf(rm, sizeof(rm), "rm -rf %s", order);
	if (system(rm) != 0)
		fprintf(stderr, "could not remove %s\n", order);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return unit_done("store_test");
}
