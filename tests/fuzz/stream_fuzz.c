/* SPDX-License-Identifier: MIT */
/* Fuzz target: the stream reader, every typed decoder and the reader
 * dictionary, on arbitrary bytes. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stream.h"
#include "symstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t snap[CPA_MAX_STACK_BYTES];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	if (fd < 0)
		fd = memfd_create("stream_fuzz", 0);
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	lseek(fd, 0, SEEK_SET);

	struct cpa_reader r;
	struct cpa_record rec;
	struct cpa_dict d;
	char err[256];
	cpa_dict_init(&d);
	/* Half the time hand the first byte over as an already-read prefix,
	 * as format detection does. */
	int prefix = size > 0 && (data[0] & 1);
	if (prefix)
		lseek(fd, 1, SEEK_SET);
	if (cpa_reader_init(&r, fd, "fuzz", data, prefix ? 1 : 0) == 0) {
		while (cpa_reader_next(&r, &rec) == 1) {
			union {
				struct cpa_raw_sample raw;
				struct cpa_task t;
				struct cpa_mmap m;
				struct cpa_lost l;
				struct cpa_sample s;
				struct cpa_meta meta;
				struct cpa_end e;
			} u;
			switch (rec.type) {
			case CPA_REC_RAW_SAMPLE:
				if (cpa_decode_raw_sample(&rec, &u.raw, snap, err, sizeof(err)) == 0 &&
				    u.raw.stack_len)
					(void)u.raw.stack[u.raw.stack_len - 1];
				break;
			case CPA_REC_TASK:
				cpa_decode_task(&rec, &u.t, err, sizeof(err));
				break;
			case CPA_REC_MMAP:
				if (cpa_decode_mmap(&rec, &u.m, err, sizeof(err)) == 0 &&
				    u.m.path_len)
					(void)u.m.path[u.m.path_len - 1];
				break;
			case CPA_REC_LOST:
				cpa_decode_lost(&rec, &u.l, err, sizeof(err));
				break;
			case CPA_REC_STRING:
			case CPA_REC_STACK:
				cpa_dict_add(&d, &rec, err, sizeof(err));
				break;
			case CPA_REC_SAMPLE:
				if (cpa_decode_sample(&rec, &u.s, err, sizeof(err)) == 0 &&
				    cpa_dict_check_sample(&d, &u.s, rec.offset, err,
							  sizeof(err)) == 0) {
					uint32_t n;
					const uint32_t *f =
						cpa_dict_stack(&d, u.s.stack_id, &n);
					for (uint32_t i = 0; i < n; i++)
						(void)cpa_dict_string(&d, f[i], NULL);
				}
				break;
			case CPA_REC_META:
				cpa_decode_meta(&rec, &u.meta, err, sizeof(err));
				break;
			}
		}
	}
	cpa_reader_free(&r);
	cpa_dict_free(&d);
	return 0;
}
