/* SPDX-License-Identifier: MIT */
/*
 * Where symbolized samples go: the cpa stream (STRING/STACK dictionary
 * records, then SAMPLE records) through lib/symstream, or folded text
 * formatted by lib/labels so it matches every other tool's folded output.
 * Both modes intern strings and stacks the same way; ids are stable for
 * the life of the output, so callers may cache them.
 */
#ifndef CPA_UNWIND_OUTPUT_H
#define CPA_UNWIND_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "labels.h"
#include "stream.h"
#include "symstream.h"

struct output {
	bool folded;
	struct cpa_symwriter sw;	/* stream mode */
	/* folded mode: interning plus a reader-side dictionary for
	 * cpa_folded_write_sample */
	struct cpa_strtab *strs;
	struct cpa_stacktab *stacks;
	struct cpa_dict dict;
	struct cpa_labels labels;
	FILE *f;
	int err;		/* errno of the first write failure */
	uint64_t names_cleaned;	/* names output_string had to clean */
	uint64_t samples;	/* written */
};

int output_init(struct output *o, int fd, bool folded,
		const struct cpa_labels *labels);
void output_free(struct output *o);
/* Samples written so far. */
uint64_t output_samples(const struct output *o);
/* The id of a name, cleaned first when it is not clean (lib/base/name.h). */
uint32_t output_string(struct output *o, const char *s, size_t len);
uint32_t output_stack(struct output *o, const uint32_t *frames, uint32_t n);
/* Text of a string and frames of a stack this output handed out, NULL
 * for an id it does not hold. */
const char *output_get_string(const struct output *o, uint32_t id,
			      uint32_t *len);
const uint32_t *output_get_stack(const struct output *o, uint32_t id,
				 uint32_t *n);
void output_sample(struct output *o, const struct cpa_sample *s);
void output_lost(struct output *o, const struct cpa_lost *l);
/* Passes a record this tool does not interpret downstream unchanged
 * (stream mode; folded text has no place for it). */
void output_passthrough(struct output *o, const struct cpa_record *rec);
/* Memory of the output dictionaries, and starting them over (a RESET
 * record in the stream); every id handed out before is invalid after. */
uint64_t output_dict_bytes(const struct output *o);
void output_reset(struct output *o);
/* Writes END (stream mode) and flushes. 0 or -errno. */
int output_finish(struct output *o);
/* Flushes without END, for input that ended badly. 0 or -errno. */
int output_flush(struct output *o);
/* Memory held by the string and stack dictionaries. */
void output_dict_size(const struct output *o, uint64_t *strings,
		      uint64_t *string_bytes, uint64_t *stacks,
		      uint64_t *stack_bytes);
/* 0, or the errno of the first failed write (EPIPE: reader gone). */
int output_error(const struct output *o);

#endif
