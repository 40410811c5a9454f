/* SPDX-License-Identifier: MIT */
/*
 * Runs a fuzz target over the files of a corpus, without libFuzzer, so that
 * `make check` replays every corpus input under the normal (or sanitized)
 * build: replay DIR...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;
	do {
		buf = cpa_grow(buf, &cap, len + 1, 1);
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	/* a buffer of exactly the input's size, as libFuzzer hands over,
	 * so that ASan sees a read past its end */
	uint8_t *in = cpa_malloc(len ? len : 1);
	memcpy(in, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(in, len);
	free(in);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			if (run_file(argv[i]) < 0)
				return 1;
			files++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (run_file(path) < 0)
				return 1;
			files++;
		}
		closedir(d);
	}
	printf("replayed %d inputs\n", files);
	return files ? 0 : 1;
}
