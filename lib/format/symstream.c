/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "log.h"
#include "name.h"
#include "symstream.h"

int cpa_symw_init(struct cpa_symwriter *sw, int fd)
{
	int rc = cpa_writer_init(&sw->w, fd);
	if (rc < 0)
		return rc;
	sw->strings = cpa_strtab_new();
	sw->stacks = cpa_stacktab_new();
	return 0;
}

void cpa_symw_free(struct cpa_symwriter *sw)
{
	free(sw->w.buf);
	sw->w.buf = NULL;
	cpa_strtab_free(sw->strings);
	cpa_stacktab_free(sw->stacks);
	sw->strings = NULL;
	sw->stacks = NULL;
}

uint32_t cpa_symw_string(struct cpa_symwriter *sw, const char *s, size_t len)
{
	if (len == 0)
		return 0;
	if (len > CPA_RECORD_MAX - 4)
		len = CPA_RECORD_MAX - 4;
	bool is_new;
	uint32_t id = cpa_strtab_intern(sw->strings, s, len, &is_new);
	if (is_new && cpa_write_string(&sw->w, id, s, (uint32_t)len) < 0)
		return 0;
	return id;
}

uint32_t cpa_symw_cstr(struct cpa_symwriter *sw, const char *s)
{
	return cpa_symw_string(sw, s, strlen(s));
}

uint32_t cpa_symw_stack(struct cpa_symwriter *sw, const uint32_t *frames,
			uint32_t n)
{
	if (n > CPA_MAX_STACK_DEPTH)
		n = CPA_MAX_STACK_DEPTH;
	bool is_new;
	uint32_t id = cpa_stacktab_intern(sw->stacks, frames, n, &is_new);
	if (is_new && cpa_write_stack(&sw->w, id, frames, n) < 0)
		return 0;
	return id;
}

size_t cpa_symw_bytes(const struct cpa_symwriter *sw)
{
	return cpa_strtab_bytes(sw->strings) + cpa_stacktab_bytes(sw->stacks);
}

int cpa_symw_reset(struct cpa_symwriter *sw)
{
	int rc = cpa_write_record(&sw->w, CPA_REC_RESET, NULL, 0);
	cpa_strtab_free(sw->strings);
	cpa_stacktab_free(sw->stacks);
	sw->strings = cpa_strtab_new();
	sw->stacks = cpa_stacktab_new();
	return rc;
}

/* ---- reader dictionary ------------------------------------------------- */

void cpa_dict_init(struct cpa_dict *d)
{
	memset(d, 0, sizeof(*d));
	d->capstrs = 256;
	d->strs = cpa_malloc(d->capstrs * sizeof(*d->strs));
	d->str_lens = cpa_malloc(d->capstrs * sizeof(*d->str_lens));
	d->strs[0] = cpa_strdup("");
	d->str_lens[0] = 0;
	d->nstrs = 1;
	d->capstacks = 256;
	d->stacks = cpa_malloc(d->capstacks * sizeof(*d->stacks));
	d->stacks[0] = NULL;	/* stack id 0 is never defined */
	d->nstacks = 1;
}

void cpa_dict_free(struct cpa_dict *d)
{
	for (uint32_t i = 0; i < d->nstrs; i++)
		free(d->strs[i]);
	for (uint32_t i = 0; i < d->nstacks; i++)
		free(d->stacks[i]);
	free(d->strs);
	free(d->str_lens);
	free(d->stacks);
	memset(d, 0, sizeof(*d));
}

/* Takes frames (count first, then the frames) as the next stack id. */
static uint32_t push_stack(struct cpa_dict *d, uint32_t *frames)
{
	CPA_GROW(d->stacks, d->capstacks, (size_t)d->nstacks + 1);
	d->stacks[d->nstacks] = frames;
	return d->nstacks++;
}

int cpa_dict_add(struct cpa_dict *d, const struct cpa_record *rec, char *err,
		 size_t errlen)
{
	if (rec->type == CPA_REC_RESET) {
		if (rec->len != 0)
			return cpa_fail_at(err, errlen, rec->offset,
					   "reset record: length %u, expected 0",
					   rec->len);
		uint64_t cleaned = d->cleaned;
		cpa_dict_free(d);
		cpa_dict_init(d);
		d->cleaned = cleaned;
		return 1;
	}
	if (rec->type == CPA_REC_STRING) {
		struct cpa_string s;
		if (cpa_decode_string(rec, &s, err, errlen) < 0)
			return -1;
		if (s.id != d->nstrs)
			return cpa_fail_at(err, errlen, rec->offset,
					 "string id %u out of order (expected "
					 "%u)", s.id, d->nstrs);
		cpa_dict_add_string(d, s.str, s.len);
		return 1;
	}
	if (rec->type == CPA_REC_STACK) {
		struct cpa_stack s;
		if (cpa_decode_stack(rec, &s, err, errlen) < 0)
			return -1;
		if (s.id != d->nstacks)
			return cpa_fail_at(err, errlen, rec->offset,
					 "stack id %u out of order (expected "
					 "%u)", s.id, d->nstacks);
		uint32_t *frames = cpa_malloc((s.n + 1) * sizeof(uint32_t));
		frames[0] = s.n;
		for (uint32_t i = 0; i < s.n; i++) {
			uint32_t f = cpa_stack_frame(&s, i);
			if (f == 0 || f >= d->nstrs) {
				free(frames);
				return cpa_fail_at(err, errlen, rec->offset,
						 "stack %u frame %u names "
						 "undefined string %u",
						 s.id, i, f);
			}
			frames[i + 1] = f;
		}
		push_stack(d, frames);
		return 1;
	}
	return 0;
}

uint32_t cpa_dict_add_string(struct cpa_dict *d, const char *s, uint32_t len)
{
	if (d->nstrs == d->capstrs) {
		uint32_t cap = d->capstrs;
		CPA_GROW(d->strs, d->capstrs, (size_t)d->nstrs + 1);
		CPA_GROW(d->str_lens, cap, (size_t)d->nstrs + 1);
	}
	d->strs[d->nstrs] = cpa_strndup(s, len);
	d->str_lens[d->nstrs] = len;
	/* cpa-unwind writes clean names; a stream or store from an older
	 * one, or a forged one, may not (lib/base/name.h) */
	if (cpa_name_clean(d->strs[d->nstrs], strlen(d->strs[d->nstrs])))
		d->cleaned++;
	return d->nstrs++;
}

uint32_t cpa_dict_add_stack(struct cpa_dict *d, const uint32_t *frames,
			    uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (frames[i] == 0 || frames[i] >= d->nstrs)
			return 0;
	uint32_t *copy = cpa_malloc(((size_t)n + 1) * sizeof(uint32_t));
	copy[0] = n;
	if (n)
		memcpy(copy + 1, frames, (size_t)n * sizeof(uint32_t));
	return push_stack(d, copy);
}

const char *cpa_dict_string(const struct cpa_dict *d, uint32_t id,
			    uint32_t *len)
{
	if (id >= d->nstrs)
		return NULL;
	if (len)
		*len = d->str_lens[id];
	return d->strs[id];
}

const uint32_t *cpa_dict_stack(const struct cpa_dict *d, uint32_t id,
			       uint32_t *n)
{
	if (id == 0 || id >= d->nstacks)
		return NULL;
	*n = d->stacks[id][0];
	return d->stacks[id] + 1;
}

int cpa_dict_check_sample(const struct cpa_dict *d,
			  const struct cpa_sample *s, uint64_t offset,
			  char *err, size_t errlen)
{
	uint32_t n;
	if (!cpa_dict_stack(d, s->stack_id, &n))
		return cpa_fail_at(err, errlen, offset,
				 "sample names undefined stack %u",
				 s->stack_id);
	const uint32_t ids[] = {s->comm_id, s->thread_id, s->container_id,
				s->env_id};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i] >= d->nstrs)
			return cpa_fail_at(err, errlen, offset,
					 "sample names undefined string %u",
					 ids[i]);
	return 0;
}

int cpa_symstream_failed(const struct cpa_reader *r, char *err, size_t errlen)
{
	if (err[0]) {
		char what[256];

		snprintf(what, sizeof(what), "%s", err);
		snprintf(err, errlen, "%s: %s", r->name, what);
	}
	return -1;
}
