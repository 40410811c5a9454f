// SPDX-License-Identifier: MIT
/* Symbolized stream or folded text out. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "name.h"
#include "output.h"

int output_init(struct output *o, int fd, bool folded,
		const struct cpa_labels *labels)
{
	memset(o, 0, sizeof(*o));
	o->folded = folded;
	if (!folded)
		return cpa_symw_init(&o->sw, fd);
	o->labels = *labels;
	o->strs = cpa_strtab_new();
	o->stacks = cpa_stacktab_new();
	cpa_dict_init(&o->dict);
	o->f = fdopen(fd, "w");
	if (!o->f)
		return -errno;
	return 0;
}

void output_free(struct output *o)
{
	if (!o->folded) {
		cpa_symw_free(&o->sw);
		return;
	}
	cpa_strtab_free(o->strs);
	cpa_stacktab_free(o->stacks);
	cpa_dict_free(&o->dict);
	if (o->f)
		fclose(o->f);
	o->f = NULL;
}

static uint32_t intern(struct output *o, const char *s, size_t len)
{
	if (!o->folded)
		return cpa_symw_string(&o->sw, s, len);
	if (len == 0)
		return 0;
	bool is_new;
	uint32_t id = cpa_strtab_intern(o->strs, s, len, &is_new);
	/* The folded writer reads names from a dictionary, built exactly as
	 * a reader of our stream would build it. */
	if (is_new && cpa_dict_add_string(&o->dict, s, (uint32_t)len) != id)
		cpa_die("internal error: string %u out of order", id);
	return id;
}

/* Every name enters the stream here, so here it is made clean
 * (lib/base/name.h): whatever a process put in its comm, its code objects,
 * its perf map or its symbols. */
uint32_t output_string(struct output *o, const char *s, size_t len)
{
	char *copy;
	uint32_t id = intern(o, cpa_name_safe(s, len, &copy), len);
	if (copy) {
		o->names_cleaned++;
		free(copy);
	}
	return id;
}

uint32_t output_stack(struct output *o, const uint32_t *frames, uint32_t n)
{
	if (!o->folded)
		return cpa_symw_stack(&o->sw, frames, n);
	bool is_new;
	uint32_t id = cpa_stacktab_intern(o->stacks, frames, n, &is_new);
	if (is_new && cpa_dict_add_stack(&o->dict, frames, n) != id)
		cpa_die("internal error: stack %u out of order or names an "
			"undefined string", id);
	return id;
}

const char *output_get_string(const struct output *o, uint32_t id,
			      uint32_t *len)
{
	return cpa_strtab_get(o->folded ? o->strs : o->sw.strings, id, len);
}

const uint32_t *output_get_stack(const struct output *o, uint32_t id,
				 uint32_t *n)
{
	return cpa_stacktab_get(o->folded ? o->stacks : o->sw.stacks, id, n);
}

uint64_t output_samples(const struct output *o)
{
	return o->samples;
}

void output_sample(struct output *o, const struct cpa_sample *s)
{
	o->samples++;
	if (!o->folded) {
		cpa_write_sample(&o->sw.w, s);
		return;
	}
	/* Folded counts cannot be negative: a free (mem-usage, heap-inuse)
	 * is its allocation's line under a root frame of its own, as drops
	 * are under [lost]. */
	if (s->flags & CPA_FLAG_FREE)
		fputs("[freed];", o->f);
	if (cpa_folded_write_sample(o->f, &o->labels, &o->dict, s) < 0)
		cpa_die("internal error: sample names an undefined id");
	if (ferror(o->f) && !o->err)
		o->err = errno ? errno : EIO;
}

void output_lost(struct output *o, const struct cpa_lost *l)
{
	if (!o->folded) {
		cpa_write_lost(&o->sw.w, l);
		return;
	}
	/* Folded text shows drops as a root frame of their own, so the
	 * flame graph's total stays honest. */
	if (l->count)
		fprintf(o->f, "[lost] %llu\n", (unsigned long long)l->count);
}

void output_passthrough(struct output *o, const struct cpa_record *rec)
{
	if (!o->folded)
		cpa_write_record(&o->sw.w, rec->type, rec->payload, rec->len);
}

uint64_t output_dict_bytes(const struct output *o)
{
	const struct cpa_strtab *st = o->folded ? o->strs : o->sw.strings;
	const struct cpa_stacktab *kt = o->folded ? o->stacks : o->sw.stacks;
	return cpa_strtab_bytes(st) + cpa_stacktab_bytes(kt);
}

void output_reset(struct output *o)
{
	if (!o->folded) {
		cpa_symw_reset(&o->sw);
		return;
	}
	cpa_strtab_free(o->strs);
	cpa_stacktab_free(o->stacks);
	cpa_dict_free(&o->dict);
	o->strs = cpa_strtab_new();
	o->stacks = cpa_stacktab_new();
	cpa_dict_init(&o->dict);
}

int output_finish(struct output *o)
{
	if (!o->folded)
		return cpa_write_end(&o->sw.w);
	if (fflush(o->f) != 0 && !o->err)
		o->err = errno;
	return -o->err;
}

int output_flush(struct output *o)
{
	if (!o->folded)
		return cpa_writer_flush(&o->sw.w);
	if (fflush(o->f) != 0 && !o->err)
		o->err = errno;
	return -o->err;
}

int output_error(const struct output *o)
{
	return o->folded ? o->err : o->sw.w.err;
}

void output_dict_size(const struct output *o, uint64_t *strings,
		      uint64_t *string_bytes, uint64_t *stacks,
		      uint64_t *stack_bytes)
{
	const struct cpa_strtab *st = o->folded ? o->strs : o->sw.strings;
	const struct cpa_stacktab *kt = o->folded ? o->stacks : o->sw.stacks;
	*strings = cpa_strtab_count(st);
	*string_bytes = cpa_strtab_bytes(st);
	*stacks = cpa_stacktab_count(kt);
	*stack_bytes = cpa_stacktab_bytes(kt);
}
