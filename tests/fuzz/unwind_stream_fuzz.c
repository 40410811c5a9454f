/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: cpa-unwind's whole record loop on an arbitrary stream:
 * task and mapping records building process state, raw samples walked
 * with whatever registers and stack bytes they carry, lost and unknown
 * records passed through, symbolized output written to /dev/null.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../cpa-unwind/unwind.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int in_fd = -1, null_fd = -1;
	static char ksyms[64];
	if (in_fd < 0) {
		elf_version(EV_CURRENT);
		cpa_set_progname("unwind_stream_fuzz");
		in_fd = memfd_create("stream", 0);
		null_fd = open("/dev/null", O_WRONLY);
		/* a tiny kernel symbol table, so kernel frames resolve */
		int k = memfd_create("kallsyms", 0);
		const char *t = "ffffffff81000000 T fuzz_entry\n"
				"ffffffff81001000 t fuzz_leaf\t[fuzz_mod]\n";
		if (write(k, t, strlen(t)) < 0)
			return 0;
		snprintf(ksyms, sizeof(ksyms), "/proc/self/fd/%d", k);
	}
	if (ftruncate(in_fd, 0) || pwrite(in_fd, data, size, 0) != (ssize_t)size)
		return 0;
	lseek(in_fd, 0, SEEK_SET);

	struct cpa_reader r;
	if (cpa_reader_init(&r, in_fd, "fuzz", NULL, 0) == 0) {
		struct output out;
		struct cpa_labels labels;
		cpa_labels_default(&labels);
		/* odd first byte of the payload: folded text, else the stream */
		bool folded = size > 16 && (data[16] & 1);
		if (output_init(&out, dup(null_fd), folded, &labels) == 0) {
			struct unwind_opts o = {
				.mode = UNWIND_BEST,
				.names = { .demangle = true },
				.max_cache = 1u << 20,
				.max_procs = 8,
				.max_allocs = 16,
				.kallsyms = ksyms,
				.inline_frames = size > 17 && (data[17] & 1),
			};
			static struct unwinder u;
			unwinder_init(&u, &o, &out);
			unwind_stream(&u, &out, &r, "fuzz");
			unwinder_free(&u);
			output_free(&out);
		}
	}
	cpa_reader_free(&r);
	return 0;
}
