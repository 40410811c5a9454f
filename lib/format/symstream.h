/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * The symbolized side of the stream, above the codec: a writer that emits
 * STRING and STACK dictionary records the first time a string or stack is
 * used, a dictionary that a reader fills from those records, and the one
 * reader of a symbolized stream, which keeps the dictionary and calls
 * back per sample, meta, lost and reset record.
 */
#ifndef CPA_SYMSTREAM_H
#define CPA_SYMSTREAM_H

#include <stdio.h>

#include "intern.h"
#include "stream.h"

struct cpa_symwriter {
	struct cpa_writer w;
	struct cpa_strtab *strings;
	struct cpa_stacktab *stacks;
};

/* Writes the stream header to fd. 0 or -errno. */
int cpa_symw_init(struct cpa_symwriter *sw, int fd);
void cpa_symw_free(struct cpa_symwriter *sw);
/* Id of a string, writing its STRING record when new; 0 for len 0.
 * Returns 0 and sets sw->w.err on write failure. */
uint32_t cpa_symw_string(struct cpa_symwriter *sw, const char *s, size_t len);
uint32_t cpa_symw_cstr(struct cpa_symwriter *sw, const char *s);
/* Id of a stack of string ids (root first), writing STACK when new. */
uint32_t cpa_symw_stack(struct cpa_symwriter *sw, const uint32_t *frames,
			uint32_t n);
/* Memory held by the interning tables. */
size_t cpa_symw_bytes(const struct cpa_symwriter *sw);
/* Starts the dictionaries over: writes a RESET record and forgets every
 * id, so a long-running writer's memory stays bounded. Ids handed out
 * before are invalid afterwards. 0 or -errno. */
int cpa_symw_reset(struct cpa_symwriter *sw);

/*
 * Reader-side dictionary. Ids must arrive densely from 1 (each new id is
 * one more than the last); a stack may only name strings already defined.
 */
struct cpa_dict {
	char **strs;		/* strs[id], NUL-terminated; strs[0] = "" */
	uint32_t *str_lens;
	uint32_t nstrs, capstrs;	/* ids 0..nstrs-1 valid */
	uint32_t **stacks;	/* stacks[id] -> n then n frame ids */
	uint32_t nstacks, capstacks;
	uint64_t cleaned;	/* strings that came unclean (lib/base/name.h) */
};

void cpa_dict_init(struct cpa_dict *d);
void cpa_dict_free(struct cpa_dict *d);
/* Adds the record if it is a STRING or STACK, or empties the dictionary on
 * RESET, and returns 1; returns 0 for other types; -1 with err set
 * ("byte N: ...") when the record is bad. */
int cpa_dict_add(struct cpa_dict *d, const struct cpa_record *rec, char *err,
		 size_t errlen);
/* Adds s (len bytes) or a stack of n frames, root first, as the next
 * id, and returns it: for producers that build a dictionary without
 * records. A stack naming an undefined string is refused with 0. */
uint32_t cpa_dict_add_string(struct cpa_dict *d, const char *s, uint32_t len);
uint32_t cpa_dict_add_stack(struct cpa_dict *d, const uint32_t *frames,
			    uint32_t n);
/* NULL when id is not defined; id 0 is "". */
const char *cpa_dict_string(const struct cpa_dict *d, uint32_t id,
			    uint32_t *len);
/* NULL when id is not defined; else frames root first, count in *n. */
const uint32_t *cpa_dict_stack(const struct cpa_dict *d, uint32_t id,
			       uint32_t *n);
/* Checks that every id a sample names is defined. 0 or -1 with err. */
int cpa_dict_check_sample(const struct cpa_dict *d,
			  const struct cpa_sample *s, uint64_t offset,
			  char *err, size_t errlen);

/*
 * Reading a symbolized stream: cpa_symstream_read decodes each record,
 * keeps the dictionary (STRING, STACK, RESET) and hands the rest to the
 * handler's callbacks, any of which may be NULL:
 *
 *   sample  a SAMPLE record, every id it names checked against d
 *   meta    a META record
 *   lost    a LOST record
 *   reset   a RESET record, after d was emptied: ids start over
 *   other   any other record (raw samples, tasks, mmaps, newer types)
 *
 * A callback returns 0 to go on, or -1 to stop the read: with err set to
 * what is wrong ("byte N: ..."), which the read prefixes with the input's
 * name, or with err left empty when the callback reported it itself.
 */
struct cpa_symstream_handler {
	int (*sample)(void *ctx, const struct cpa_dict *d,
		      const struct cpa_sample *s, uint64_t offset, char *err,
		      size_t errlen);
	int (*meta)(void *ctx, const struct cpa_meta *m, char *err,
		    size_t errlen);
	int (*lost)(void *ctx, const struct cpa_lost *l, char *err,
		    size_t errlen);
	int (*reset)(void *ctx);
	int (*other)(void *ctx, const struct cpa_record *rec);
};

/* err becomes "NAME: " and what it said, unless a callback left it empty
 * having reported the failure itself; -1. */
int cpa_symstream_failed(const struct cpa_reader *r, char *err, size_t errlen);

/* One record through the dictionary or the handler: 0, or -1 with err. */
static inline int cpa_symstream_record(struct cpa_dict *d,
				       const struct cpa_record *rec,
				       const struct cpa_symstream_handler *h,
				       void *ctx, char *err, size_t errlen)
{
	switch (rec->type) {
	case CPA_REC_STRING:
	case CPA_REC_STACK:
	case CPA_REC_RESET:
		if (cpa_dict_add(d, rec, err, errlen) < 0)
			return -1;
		return rec->type == CPA_REC_RESET && h->reset ? h->reset(ctx) : 0;
	case CPA_REC_SAMPLE: {
		struct cpa_sample s;

		if (cpa_decode_sample(rec, &s, err, errlen) < 0 ||
		    cpa_dict_check_sample(d, &s, rec->offset, err, errlen) < 0)
			return -1;
		return h->sample ? h->sample(ctx, d, &s, rec->offset, err,
					     errlen) : 0;
	}
	case CPA_REC_META: {
		struct cpa_meta m;

		if (cpa_decode_meta(rec, &m, err, errlen) < 0)
			return -1;
		return h->meta ? h->meta(ctx, &m, err, errlen) : 0;
	}
	case CPA_REC_LOST: {
		struct cpa_lost l;

		if (cpa_decode_lost(rec, &l, err, errlen) < 0)
			return -1;
		return h->lost ? h->lost(ctx, &l, err, errlen) : 0;
	}
	default:
		return h->other ? h->other(ctx, rec) : 0;
	}
}

/*
 * Reads r to its end. 0 when it was all read (r->ended says whether it
 * ended with its END record), -1 with err set to "NAME: byte N: what is
 * wrong", or empty when a callback reported the failure itself. Inline,
 * so that a reader's handler, a constant table, is called directly: the
 * record loop of a profile of millions of samples pays no call for it.
 */
static inline int cpa_symstream_read(struct cpa_reader *r, struct cpa_dict *d,
				     const struct cpa_symstream_handler *h,
				     void *ctx, char *err, size_t errlen)
{
	struct cpa_record rec;
	int rc;

	err[0] = '\0';
	while ((rc = cpa_reader_next(r, &rec)) > 0)
		if (cpa_symstream_record(d, &rec, h, ctx, err, errlen) < 0)
			return cpa_symstream_failed(r, err, errlen);
	if (rc < 0) {
		snprintf(err, errlen, "%s", r->err);
		return -1;
	}
	return 0;
}

#endif
