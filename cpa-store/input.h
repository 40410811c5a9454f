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

	/* "stream.KEY=VALUE" lines from META records, for segment meta */
	char *meta;
	size_t meta_len;
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
/* Warns when a stream ended without its END record. */
void input_close(struct input *in);

#endif
