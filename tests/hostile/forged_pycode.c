// SPDX-License-Identifier: MIT
/*
 * Forged CPython code objects that are never reused: a process lays out
 * --codes N code objects of CPython 3.11's layout (lib/runtime/pyoffsets.c) in
 * its own memory, each with the same 60 KB line table, and writes on
 * stdout the stream cpa-capture's Python walker would give for samples
 * whose frames name them, --frames of them per sample, each code object
 * named once. cpa-unwind reads every code object it is shown from the
 * process's memory, so what it keeps of them is what the process makes
 * it keep. The process then stays --seconds (cpa-unwind reads its
 * memory while it unwinds the stream), to be killed once it is done.
 *
 * usage: forged_pycode [--codes N] [--frames K] [--seconds S] | cpa-unwind
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pyoffsets.h"
#include "stream.h"

#define LINETABLE_BYTES 60000
#define CODE_STRIDE 512		/* bytes per forged code object */

/* A compact ASCII str object holding s, in buf (room for 64 + len). */
static void make_str(const struct cpa_py_offsets *o, uint8_t *buf,
		     const char *s)
{
	uint64_t len = strlen(s);
	uint32_t state = 0x20 | 0x40 | (1u << 2);	/* compact, ascii, kind 1 */
	memcpy(buf + o->str_length, &len, 8);
	memcpy(buf + o->str_state, &state, 4);
	memcpy(buf + o->str_ascii_size, s, len + 1);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long codes = 65536, frames = 64;
	double seconds = 120;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--codes"))
			codes = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--frames"))
			frames = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
	}
	const struct cpa_py_offsets *o = cpa_py_offsets(0x030b);
	if (!o || codes < 1 || codes > (1l << 22) || frames < 1 ||
	    frames > CPA_MAX_PY_FRAMES) {
		fprintf(stderr, "usage: forged_pycode [--codes 1..4M] "
				"[--frames 1..%d] [--seconds S]\n",
			CPA_MAX_PY_FRAMES);
		return 2;
	}
	/* one line table, one name and one file name, shared by all */
	uint8_t *table = calloc(1, o->bytes_data + LINETABLE_BYTES);
	uint8_t *qualname = calloc(1, 64 + 256), *filename = calloc(1, 64 + 256);
	uint8_t *code = calloc((size_t)codes, CODE_STRIDE);
	if (!table || !qualname || !filename || !code) {
		perror("forged_pycode");
		return 1;
	}
	uint64_t n = LINETABLE_BYTES;
	memcpy(table + o->bytes_size, &n, 8);
	/* entries of form 13 (a line delta of 0), one code unit each */
	for (size_t i = 0; i + 1 < LINETABLE_BYTES; i += 2) {
		table[o->bytes_data + i] = 0x80 | 13 << 3;
		table[o->bytes_data + i + 1] = 0;
	}
	make_str(o, qualname, "forged");
	make_str(o, filename, "forged.py");
	for (long i = 0; i < codes; i++) {
		uint8_t *c = code + (size_t)i * CODE_STRIDE;
		int32_t first = 1;
		uint64_t lt = (uint64_t)(uintptr_t)table,
			 qn = (uint64_t)(uintptr_t)qualname,
			 fn = (uint64_t)(uintptr_t)filename;
		memcpy(c + o->code_firstlineno, &first, 4);
		memcpy(c + o->code_linetable, &lt, 8);
		memcpy(c + o->code_qualname, &qn, 8);
		memcpy(c + o->code_filename, &fn, 8);
	}

	struct cpa_writer w;
	struct cpa_raw_sample s;
	memset(&s, 0, sizeof(s));
	s.pid = s.tid = (uint32_t)getpid();
	s.weight = 1;
	s.kind = CPA_KIND_ONCPU;
	s.flags = CPA_RAW_PY_FRAMES;
	s.py_version = 0x030b;
	strcpy(s.comm, "forged_pycode");
	strcpy(s.pcomm, "forged_pycode");
	if (cpa_writer_init(&w, 1) < 0)
		return 1;
	for (long i = 0; i < codes; i += frames) {
		s.time_ns = realtime_ns();
		s.n_py = 0;
		for (long k = i; k < codes && k < i + frames; k++) {
			struct cpa_py_frame *f = &s.py[s.n_py++];
			f->code = (uint64_t)(uintptr_t)(code + (size_t)k * CODE_STRIDE);
			f->instr = 0;
			f->flags = 0;
		}
		s.py[s.n_py - 1].flags = CPA_PY_FRAME_ENTRY;
		if (cpa_write_raw_sample(&w, &s) < 0)
			return 1;
	}
	if (cpa_write_end(&w) < 0 || cpa_writer_close(&w) < 0)
		return 1;
	close(1);
	poll(NULL, 0, (int)(seconds * 1000));
	return 0;
}
