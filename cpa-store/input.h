/* SPDX-License-Identifier: MIT */
/*
 * What cpa-store reads: the symbolized cpa stream, or folded text for
 * imports. Both come out as samples whose string and stack ids belong to
 * the input's own dictionary; the segment writer translates them.
 */
#ifndef CPA_STORE_INPUT_H
#define CPA_STORE_INPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "intern.h"
#include "store.h"
#include "stream.h"
#include "symstream.h"

struct in_sample {
	uint64_t time_ns, weight;
	struct cpa_store_labelset ls;	/* string fields: input ids */
	uint32_t stack;			/* input stack id */
};

struct input {
	const char *name;
	int fd;
	bool folded;
	bool eof;

	struct cpa_reader r;		/* stream */
	struct cpa_dict dict;

	FILE *f;			/* folded text */
	char *line;
	size_t cap;
	uint64_t lineno;
	struct cpa_strtab *strs;
	struct cpa_stacktab *stacks;
	uint64_t folded_time_ns;
	uint64_t folded_cleaned;	/* frames cleaned (lib/base/name.h) */

	/* META records for segment meta, summarized: a key's last value
	 * (as meta reads a repeated key), how often it came, and how many
	 * keys did not fit (input_meta_text) */
	struct in_meta {
		char *key, *value;
		uint64_t count;
	} *meta;
	size_t n_meta, cap_meta;
	uint64_t meta_keys_dropped;
	bool meta_changed;

	uint64_t samples, lost;
};

/* Detects the format from the first byte. Exits 1 on a bad header. */
void input_open(struct input *in, int fd, const char *name,
		uint64_t folded_time_ns);
/* True when the next input_next() will not wait for more input. */
bool input_ready(const struct input *in);
/* 1 with *s filled, 0 at the end of input, -1 on bad input (reported). */
int input_next(struct input *in, struct in_sample *s);
/* input_next() returns INPUT_RESET at a RESET record: the stream's
 * dictionaries start over. The caller stores what holds the old ids, then
 * calls input_apply_reset(). */
#define INPUT_RESET 2
void input_apply_reset(struct input *in);
/* input_next() returns INPUT_LOST at a LOST record: s->weight samples
 * were lost upstream at s->time_ns. */
#define INPUT_LOST 3
/* ... and INPUT_IDLE when it read records but no sample, and no whole
 * record is waiting. */
#define INPUT_IDLE 4
const char *input_string(const struct input *in, uint32_t id,
			 uint32_t *len);
const uint32_t *input_stack(const struct input *in, uint32_t id,
			    uint32_t *n);
/* Stream meta beyond these is summarized, not kept: so that a flood of
 * META records (one per process, from thousands of processes) cannot
 * grow a segment's meta past what a reader takes and cut what matters. */
#define INPUT_META_KEYS 48
#define INPUT_META_VALUE 384
#define INPUT_META_KEY 64
/* Appends the "stream.KEY=VALUE" lines, and the summary of what repeated
 * or did not fit ("stream_repeated=KEY:N,...", "stream_dropped=N"), to
 * out: at most INPUT_META_KEYS * (INPUT_META_KEY * 2 + INPUT_META_VALUE
 * + 32) bytes, 26 KiB. */
void input_meta_text(const struct input *in, struct cpa_buf *out);
/* Names that came unclean (an older cpa-unwind, a forged stream or
 * file) and were cleaned on the way in (lib/base/name.h). */
uint64_t input_names_cleaned(const struct input *in);
/* Warns when a stream ended without its END record. */
void input_close(struct input *in);

#endif
