/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the store readers (meta, index, dictionary and data
 * blocks, and the sums of format 1.3) through the same calls cpa-query
 * makes. An input is a segment packed as five parts, each a
 * little-endian u32 length then its bytes: meta, index, dict, data, sums
 * (an empty sums part: no sums file, as in a 1.2 segment). They are
 * written to a scratch directory and read back as a segment.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const part_names[5] = {"meta", "index", "dict", "data",
					  "sums"};

static int count_window(void *arg, uint64_t start, const struct cpa_store_entry *e,
			uint32_t n)
{
	uint64_t *sum = arg;
	for (uint32_t i = 0; i < n; i++)
		*sum += e[i].weight + e[i].labelset + e[i].stack;
	return 0;
}

static int count_sums(void *arg, uint64_t start, const struct cpa_store_sum *s,
		      uint32_t n)
{
	uint64_t *sum = arg;
	for (uint32_t i = 0; i < n; i++)
		*sum += s[i].weight + s[i].kind + s[i].flags + s[i].kernel;
	return 0;
}

static char dir[64];

static void remove_scratch(void)
{
	char path[128];
	for (int p = 0; p < 5; p++) {
		snprintf(path, sizeof(path), "%s/%s", dir, part_names[p]);
		unlink(path);
	}
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(dir, sizeof(dir), "%s/store_fuzz.XXXXXX",
			 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(remove_scratch);
	}
	size_t at = 0;
	for (int p = 0; p < 5; p++) {
		uint32_t len = 0;
		if (at + 4 <= size) {
			memcpy(&len, data + at, 4);
			at += 4;
		}
		if (len > size - at)
			len = (uint32_t)(size - at);
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", dir, part_names[p]);
		if (p == 4 && !len) {
			unlink(path);
			continue;
		}
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			abort();
		if (len && write(fd, data + at, len) != (ssize_t)len)
			abort();
		close(fd);
		at += len;
	}

	struct cpa_segment_info si;
	char err[512];
	if (cpa_segment_info_read(dir, &si, err, sizeof(err)) == 0) {
		struct cpa_segment_reader r;
		if (cpa_segment_reader_open(&r, &si, err, sizeof(err)) == 0) {
			uint64_t sum = 0;
			for (size_t i = 0; i < si.n_idx; i++)
				cpa_segment_reader_sums(&r, i, count_sums, &sum,
							err, sizeof(err));
			for (size_t i = 0; i < si.n_idx; i++)
				if (cpa_segment_reader_block(&r, i, count_window,
							     &sum, err,
							     sizeof(err)) < 0 &&
				    r.dict_upto <= i)
					break;
			/* every id a decoded block named must resolve */
			for (uint32_t l = 1; l < r.dict.nlabelsets; l++)
				if (!cpa_dict_string(&r.dict.d,
						     r.dict.labelsets[l].comm,
						     NULL))
					abort();
			cpa_segment_reader_close(&r);
		}
	}
	cpa_segment_info_free(&si);

	/* the pure decoders on the raw bytes too */
	char **kv;
	if (cpa_store_meta_parse((const char *)data, size, &kv, err,
				 sizeof(err)) == 0)
		cpa_store_meta_free(kv);
	/* the meta values with lists in them: lost runs, processes over
	 * budget (and what the reader makes of them is clean) */
	char *text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	struct cpa_store_lost *lost = NULL;
	struct cpa_store_over *over = NULL;
	size_t nl = 0, capl = 0, no = 0, capo = 0;
	cpa_store_lost_parse(text, &lost, &nl, &capl, err, sizeof(err));
	cpa_store_over_parse(text, &over, &no, &capo, err, sizeof(err));
	for (size_t i = 0; i < no; i++)
		if (strlen(over[i].comm) >= sizeof(over[i].comm))
			abort();
	free(lost);
	free(over);
	free(text);
	struct cpa_store_dict sd;
	cpa_store_dict_init(&sd);
	cpa_store_dict_decode(&sd, data, size, err, sizeof(err));
	struct cpa_buf raw = {0}, scratch = {0};
	cpa_store_block_unpack(data, size, &raw, err, sizeof(err));
	struct cpa_store_index_entry ie = {.min_start = 0, .max_end = UINT64_MAX,
					   .n_windows = 1};
	uint64_t sum = 0;
	if (size > 0) {
		cpa_store_windows_decode(data, size, &sd, &ie, 1, &scratch,
					 count_window, &sum, err, sizeof(err));
		cpa_store_sums_decode(data, size, &ie, 1, &scratch, count_sums,
				      &sum, err, sizeof(err));
	}
	const uint8_t *payload;
	size_t plen;
	if (cpa_store_sums_unblock(data, size, &payload, &plen, err,
				   sizeof(err)) == 0 && plen > size)
		abort();
	cpa_store_dict_free(&sd);
	cpa_buf_free(&raw);
	cpa_buf_free(&scratch);
	return 0;
}
