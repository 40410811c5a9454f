/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the reader of stores CPA wrote (lib/format/cpastore.c),
 * through the calls cpa-query makes. An input is a flag byte, then four
 * parts, each a little-endian u32 length then its bytes: conf, strmap,
 * idsmap, stack.bin. Flag bit i (i = 0, 1, 2) compresses part i + 1 with
 * zstd first, so the fuzzer reaches the text and record parsers behind
 * the decompression as well as the decompression itself. The parts are
 * written to a scratch day directory and read back as a segment.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "cpastore.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const part_names[4] = {"conf", "strmap", "idsmap",
					  "stack.bin"};

static int count_window(void *arg, uint64_t start,
			const struct cpa_store_entry *e, uint32_t n)
{
	uint64_t *sum = arg;
	*sum += start;
	for (uint32_t i = 0; i < n; i++)
		*sum += e[i].weight + e[i].labelset + e[i].stack;
	return 0;
}

static char root[64], dir[96];

static void remove_scratch(void)
{
	char path[160];
	for (int p = 0; p < 4; p++) {
		snprintf(path, sizeof(path), "%s/%s", dir, part_names[p]);
		unlink(path);
	}
	rmdir(dir);
	rmdir(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!root[0]) {
		const char *tmp = getenv("TMPDIR");
		snprintf(root, sizeof(root), "%s/cpastore_fuzz.XXXXXX",
			 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
		if (!mkdtemp(root))
			abort();
		snprintf(dir, sizeof(dir), "%s/cpa_261130", root);
		if (mkdir(dir, 0700) < 0)
			abort();
		atexit(remove_scratch);
	}
	uint8_t flags = size ? data[0] : 0;
	size_t at = size ? 1 : 0;
	for (int p = 0; p < 4; p++) {
		uint32_t len = 0;
		if (at + 4 <= size) {
			memcpy(&len, data + at, 4);
			at += 4;
		}
		if (len > size - at)
			len = (uint32_t)(size - at);
		const void *bytes = data + at;
		void *comp = NULL;
		size_t n = len;
		if (p && (flags >> (p - 1) & 1)) {
			size_t bound = ZSTD_compressBound(len);
			comp = malloc(bound ? bound : 1);
			if (!comp)
				abort();
			n = ZSTD_compress(comp, bound, bytes, len, 1);
			if (ZSTD_isError(n))
				abort();
			bytes = comp;
		}
		char path[160];
		snprintf(path, sizeof(path), "%s/%s", dir, part_names[p]);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			abort();
		if (n && write(fd, bytes, n) != (ssize_t)n)
			abort();
		close(fd);
		free(comp);
		at += len;
	}

	struct cpa_segment_info si;
	char err[512];
	if (cpa_segment_info_read(dir, &si, err, sizeof(err)) == 0) {
		struct cpa_segment_reader r;
		if (cpa_segment_reader_open(&r, &si, err, sizeof(err)) == 0) {
			uint64_t sum = 0;
			for (size_t i = 0; i < si.n_idx; i++)
				cpa_segment_reader_block(&r, i, count_window,
							 &sum, err, sizeof(err));
			/* every label set names strings that resolve */
			for (uint32_t l = 1; l < r.dict.nlabelsets; l++)
				if (!cpa_dict_string(&r.dict.d,
						     r.dict.labelsets[l].comm,
						     NULL) ||
				    !cpa_dict_string(&r.dict.d,
						     r.dict.labelsets[l].env,
						     NULL))
					abort();
			/* and every stack the map names is defined */
			for (size_t i = 0; r.cpa && i < r.cpa->cd.nids; i++) {
				uint32_t n;
				if (!cpa_dict_stack(&r.dict.d,
						    r.cpa->cd.ids[i].stack, &n))
					abort();
			}
			cpa_segment_reader_close(&r);
		}
	}
	cpa_segment_info_free(&si);

	/* the pure decoders on the raw bytes too */
	struct cpa_cpastore_conf c;
	cpa_cpastore_conf_parse((const char *)data, size, &c, err,
				sizeof(err));
	struct cpa_cpastore_index ix;
	cpa_cpastore_index_stack(data, size, &ix, err, sizeof(err));
	cpa_cpastore_index_free(&ix);
	return 0;
}
