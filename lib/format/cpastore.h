/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * Stores written by ByteDance's continue-profiling-agent (CPA), read as
 * segments of a cpa store: cpa_segment_info_read() and the segment
 * reader (store.h) hand a CPA day directory to this code, so cpa-query
 * reads CPA's history through the calls it reads its own with.
 * docs/store-format.md ("Stores CPA wrote") is the specification.
 *
 *   ROOT/cpa_YYMMDD[_start_HHMMSS]/conf       "key: value" lines
 *                                   strmap     zstd text: "STRING ID\n"
 *                                   idsmap     zstd text: "SID;SID;...; IDS_ID\n"
 *                                   stack.bin  zstd binary records:
 *       FA FB, u64 start_ms, u64 end_ms, u64 n, n x (u32 ids_id, u64 count), FC FD
 *
 * Rules of this layer:
 *   - A day directory is one segment and each stack.bin record one
 *     window: local midnight of the directory's date (of conf's mtime
 *     when the name carries none) plus the record's milliseconds; a time
 *     behind the first record's is on the next day, as CPA's readers
 *     have it. Zero-length guard records are skipped.
 *   - The first id of a stack names CPA's metadata string
 *     "COMM(15)GROUP_COMM(15)-CGROUP-CPU-PID|ENV": group_comm is the
 *     process name, comm the thread name; pid, cpu, cgroup id and env
 *     are labels. A first string that does not parse is a frame, as in
 *     CPA's show; one starting with '#' drops the stack, as there.
 *     CPA's "<# OFFCPU SAMPLE: (S) #>" and "<# IRQOFF SAMPLE ON CPU N #>"
 *     frames become the event kind (state R: preempted, else blocked;
 *     IRQ-off counts of periods become nanoseconds).
 *   - Tolerated as CPA's readers tolerate them: a torn tail of a zstd file
 *     (frame, record or line cut short; what precedes it is read, the
 *     cut is reported in torn_why), lines that do not parse and stack ids
 *     idsmap lacks (skipped and counted), string ids strmap lacks ("<#
 *     STRMAP LOST ID #>").
 *   - Refused with one line naming what was found: a directory lacking
 *     one of the four files, a conf of another major version, a file
 *     that is not zstd from its first byte.
 * Stack.bin is mapped, never read whole into memory: the index keeps
 * where each zstd frame starts, and a block decodes only its frames.
 */
#ifndef CPA_CPASTORE_H
#define CPA_CPASTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "store.h"

#define CPA_CPASTORE_DAY_MS 86400000ull
/* Largest strmap or idsmap, decompressed, that a reader takes. */
#define CPA_CPASTORE_TEXT_MAX (1ull << 30)

/* "cpa_YYMMDD" or "cpa_YYMMDD_start_HHMMSS"; the local midnight of its
 * date in *day_ns. */
bool cpa_cpastore_day_name(const char *name, uint64_t *day_ns);
/* True when path holds any of conf, strmap, idsmap, stack.bin. */
bool cpa_cpastore_is_day(const char *path);

struct cpa_cpastore_frame {
	uint64_t comp_off, raw_off;	/* where a zstd frame starts */
};
struct cpa_cpastore_record {
	uint64_t start_ms, end_ms;	/* as stored */
	uint64_t raw_off;		/* of its first entry, decompressed */
	uint64_t n;			/* entries */
};

/* What the index pass over stack.bin learns. */
struct cpa_cpastore_index {
	struct cpa_cpastore_frame *frames;
	size_t nframes;
	struct cpa_cpastore_record *rec;
	size_t nrec, caprec, capframes;
	uint64_t raw_len;		/* decompressed bytes decoded */
	uint64_t comp_good;		/* compressed bytes before a cut */
	uint64_t guards;		/* zero-length guard records */
	char torn_why[128];		/* why decoding stopped early */
};

/*
 * Indexes the compressed stack.bin comp[0..len). 0 (a torn tail noted in
 * torn_why and comp_good), or -1 with err when the file is not zstd from
 * its first byte.
 */
int cpa_cpastore_index_stack(const uint8_t *comp, size_t len,
			     struct cpa_cpastore_index *ix, char *err,
			     size_t errlen);
void cpa_cpastore_index_free(struct cpa_cpastore_index *ix);

/* conf: "key: value" lines. */
struct cpa_cpastore_conf {
	char version[32];
	uint32_t freq, cpu_num, record_interval, kernel_stack;
	char record_env_name[128];
};
/* 0, or -1 with err when the version is of another major than 1. */
int cpa_cpastore_conf_parse(const char *text, size_t len,
			    struct cpa_cpastore_conf *c, char *err,
			    size_t errlen);

/*
 * The dictionary: strmap and idsmap (each zstd, tolerated torn) into sd,
 * as a segment's (strings, stacks, label sets), and the map from CPA's
 * ids_id to a (label set, stack) pair.
 */
struct cpa_cpastore_ids {
	uint32_t ids_id, labelset, stack;
};
struct cpa_cpastore_dict {
	struct cpa_cpastore_ids *ids;	/* by ids_id */
	size_t nids;
	uint64_t bad_lines;		/* strmap and idsmap lines skipped */
	uint64_t lost_strings;		/* sids strmap lacks */
	char first_bad[160];		/* the first of them */
};
int cpa_cpastore_dict_load(const uint8_t *strmap, size_t strmap_len,
			   const uint8_t *idsmap, size_t idsmap_len,
			   struct cpa_store_dict *sd,
			   struct cpa_cpastore_dict *cd, char *err,
			   size_t errlen);
void cpa_cpastore_dict_free(struct cpa_cpastore_dict *cd);

/* The open stack.bin of a segment (cpa_segment_info.cpa). */
struct cpa_cpastore {
	const uint8_t *map;	/* stack.bin, mapped; NULL when empty */
	size_t map_len;
	struct cpa_cpastore_index ix;
	struct cpa_cpastore_conf conf;
	uint64_t day_ns, period_ns;
};

/* A CPA day directory as a segment: conf, the stack.bin index, si->idx
 * one entry per record. 0 or -1 with err. */
int cpa_cpastore_info_read(const char *path, struct cpa_segment_info *si,
			   char *err, size_t errlen);
void cpa_cpastore_close(struct cpa_cpastore *cs);

/* The reader's side: dictionary, and the last frame decoded. */
struct cpa_cpastore_reader {
	struct cpa_cpastore_dict cd;
	void *dctx;
	size_t frame;			/* decoded in raw; SIZE_MAX none */
	struct cpa_buf raw, entries;
	uint64_t missing;		/* entries naming an unknown ids_id */
};

int cpa_cpastore_reader_open(struct cpa_segment_reader *r, char *err,
			     size_t errlen);
int cpa_cpastore_reader_block(struct cpa_segment_reader *r, size_t entry,
			      cpa_store_window_fn fn, void *arg, char *err,
			      size_t errlen);
void cpa_cpastore_reader_close(struct cpa_segment_reader *r);

#endif
