/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "clickhouse.h"
#include "clock.h"
#include "hash.h"
#include "log.h"
#include "owner.h"
#include "stream.h"
#include "batch.h"

/* Past this many known stack hashes the set starts over: a stack sent
 * again is one more row of a ReplacingMergeTree, merged away. */
#define KNOWN_MAX (1u << 18)
#define NSEC_PER_DAY (86400 * CPA_NSEC_PER_SEC)

void batch_init(struct batch *b, const char *host)
{
	memset(b, 0, sizeof(*b));
	b->host = host;
	b->job = "";
	b->duration_ns = 1000000000ull;
	cpa_htab_init(&b->open_index, 1024);
	cpa_htab_init(&b->known_index, 1024);
	b->owner_strs = cpa_strtab_new();
}

void batch_free(struct batch *b)
{
	free(b->open);
	cpa_htab_free(&b->open_index);
	free(b->hash);
	free(b->owner);
	cpa_strtab_free(b->owner_strs);
	cpa_buf_free(&b->rows);
	cpa_buf_free(&b->stacks);
	free(b->blocks);
	free(b->known);
	cpa_htab_free(&b->known_index);
	free(b->pending);
	memset(b, 0, sizeof(*b));
}

void batch_dict_reset(struct batch *b)
{
	if (b->hash)
		memset(b->hash, 0, b->hash_cap * sizeof(*b->hash));
	if (b->owner)
		memset(b->owner, 0, b->owner_cap * sizeof(*b->owner));
}

static uint64_t row_hash(const struct brow *r)
{
	uint64_t k[4] = {
		r->time, (uint64_t)r->comm << 32 | r->stack,
		(uint64_t)r->container << 32 | r->env,
		(uint64_t)r->kind << 16 | r->flags,
	};
	return cpa_hash(k, sizeof(k), 0);
}

static bool row_same(const struct brow *a, const struct brow *b)
{
	return a->time == b->time && a->comm == b->comm &&
	       a->stack == b->stack && a->container == b->container &&
	       a->env == b->env && a->kind == b->kind && a->flags == b->flags;
}

void batch_add(struct batch *b, const struct cpa_dict *d,
	       const struct cpa_sample *s)
{
	(void)d;
	struct brow r = {
		.time = s->time_ns, .value = s->weight, .comm = s->comm_id,
		.container = s->container_id, .env = s->env_id,
		.stack = s->stack_id, .kind = s->kind,
		.flags = s->flags & CPA_SAMPLE_FLAGS,
	};
	struct cpa_htab_probe pr;
	for (uint32_t id = cpa_htab_first(&b->open_index, row_hash(&r), &pr);
	     id; id = cpa_htab_next(&b->open_index, &pr))
		if (row_same(&b->open[id - 1], &r)) {
			b->open[id - 1].value += r.value;
			return;
		}
	CPA_GROW(b->open, b->cap_open, (size_t)b->n_open + 1);
	b->open[b->n_open++] = r;
	cpa_htab_add(&b->open_index, &pr, b->n_open);
}

void batch_drop_open(struct batch *b)
{
	b->n_open = 0;
	cpa_htab_clear(&b->open_index);
}

/* The stable hash of a stack's frame strings, root first (lib/hash.h):
 * the same stack on any host, any day, is one key. */
static uint64_t stack_hash(struct batch *b, const struct cpa_dict *d,
			   uint32_t id)
{
	CPA_GROW_ZERO(b->hash, b->hash_cap, (size_t)id + 1);
	if (b->hash[id])
		return b->hash[id];
	uint32_t n;
	const uint32_t *f = cpa_dict_stack(d, id, &n);
	uint64_t h = CPA_STACK_HASH_INIT;
	for (uint32_t i = 0; f && i < n; i++) {
		uint32_t len;
		const char *s = cpa_dict_string(d, f[i], &len);
		h = cpa_stack_hash_add(h, s, len);
	}
	return b->hash[id] = h;
}

static bool known(struct batch *b, uint64_t h, bool add)
{
	struct cpa_htab_probe pr;
	for (uint32_t id = cpa_htab_first(&b->known_index, h, &pr); id;
	     id = cpa_htab_next(&b->known_index, &pr))
		if (b->known[id - 1] == h)
			return true;
	if (add) {
		CPA_GROW(b->known, b->cap_known, (size_t)b->n_known + 1);
		b->known[b->n_known++] = h;
		cpa_htab_add(&b->known_index, &pr, b->n_known);
	}
	return false;
}

/* Its frames go with this batch, unless ClickHouse has them already or
 * the batch carries them. */
static void add_stack(struct batch *b, const struct cpa_dict *d, uint32_t id,
		      uint64_t h)
{
	if (known(b, h, false))
		return;
	for (size_t i = 0; i < b->n_pending; i++)
		if (b->pending[i] == h)
			return;
	CPA_GROW(b->pending, b->cap_pending, b->n_pending + 1);
	b->pending[b->n_pending++] = h;
	uint32_t n;
	const uint32_t *f = cpa_dict_stack(d, id, &n);
	cpa_rb_u64(&b->stacks, h);
	cpa_buf_uleb128(&b->stacks, f ? n : 0);
	for (uint32_t i = 0; f && i < n; i++) {
		uint32_t len;
		const char *s = cpa_dict_string(d, f[i], &len);
		cpa_rb_string(&b->stacks, s, len);
	}
	b->nstacks++;
}

static const char *owner_str(struct batch *b, uint32_t id, uint32_t *len)
{
	const char *s = id ? cpa_strtab_get(b->owner_strs, id, len) : NULL;
	if (!s)
		*len = 0;
	return s ? s : "";
}

/* Container id and pod UID of a container-or-cgroup label, once per
 * string: lib/owner.h reads them from a cgroup path; a name recorded as
 * is is the container. */
static void owner_of(struct batch *b, const struct cpa_dict *d, uint32_t id,
		     uint32_t *container, uint32_t *pod)
{
	*container = *pod = 0;
	if (!id)
		return;
	CPA_GROW_ZERO(b->owner, b->owner_cap, (size_t)id + 1);
	struct owner_ids *o = &b->owner[id];
	if (!o->done) {
		const char *label = cpa_dict_string(d, id, NULL);
		bool is_new;
		if (label && cpa_label_is_cgroup(label)) {
			struct cpa_owner ow;
			cpa_owner_parse(label, &ow);
			if (ow.container[0])
				o->container = cpa_strtab_intern(
					b->owner_strs, ow.container,
					strlen(ow.container), &is_new);
			if (ow.pod[0])
				o->pod = cpa_strtab_intern(b->owner_strs,
							   ow.pod,
							   strlen(ow.pod),
							   &is_new);
		} else if (label && *label) {
			o->container = cpa_strtab_intern(b->owner_strs, label,
							 strlen(label),
							 &is_new);
		}
		o->done = true;
	}
	*container = o->container;
	*pod = o->pod;
}

static void put_dict_string(struct cpa_buf *out, const struct cpa_dict *d,
			    uint32_t id)
{
	uint32_t len = 0;
	const char *s = id ? cpa_dict_string(d, id, &len) : NULL;
	cpa_rb_string(out, s ? s : "", s ? len : 0);
}

void batch_seal(struct batch *b, const struct cpa_dict *d, uint64_t pos,
		uint64_t now_ns)
{
	CPA_GROW(b->blocks, b->cap_blocks, b->n_blocks + 1);
	struct bblock *blk = &b->blocks[b->n_blocks++];
	*blk = (struct bblock){ .pos = pos, .off = b->rows.len,
				.nrows = b->n_open };
	if (b->n_blocks == 1)
		b->first_ns = now_ns;
	size_t hostlen = strlen(b->host);
	struct cpa_buf *o = &b->rows;
	for (uint32_t i = 0; i < b->n_open; i++) {
		const struct brow *r = &b->open[i];
		uint64_t h = stack_hash(b, d, r->stack);
		add_stack(b, d, r->stack, h);
		uint32_t ci, pi, len;
		owner_of(b, d, r->container, &ci, &pi);
		const char *kind = cpa_kind_name(r->kind);
		const char *unit = cpa_unit_name(cpa_kind_unit(r->kind));
		if (!kind)
			kind = "unknown";
		cpa_rb_u16(o, (uint16_t)(r->time / NSEC_PER_DAY));
		cpa_rb_u64(o, r->time);
		cpa_rb_u64(o, b->duration_ns);
		cpa_rb_string(o, b->host, hostlen);
		cpa_rb_string(o, kind, strlen(kind));
		cpa_rb_string(o, unit, strlen(unit));
		put_dict_string(o, d, r->comm);
		const char *s = owner_str(b, ci, &len);
		cpa_rb_string(o, s, len);
		s = owner_str(b, pi, &len);
		cpa_rb_string(o, s, len);
		put_dict_string(o, d, r->container);
		put_dict_string(o, d, r->env);
		cpa_rb_u16(o, r->flags);
		cpa_rb_u64(o, h);
		cpa_rb_u64(o, r->value);
		cpa_rb_u64(o, pos);
		cpa_rb_string(o, b->job, strlen(b->job));
		if (r->time + b->duration_ns > blk->end_ns)
			blk->end_ns = r->time + b->duration_ns;
	}
	b->nrows += b->n_open;
	batch_drop_open(b);
}

void batch_skip_to(struct batch *b, uint64_t pos)
{
	size_t k = 0;
	while (k < b->n_blocks && b->blocks[k].pos <= pos)
		k++;
	if (!k)
		return;
	size_t cut = k < b->n_blocks ? b->blocks[k].off : b->rows.len;
	memmove(b->rows.p, b->rows.p + cut, b->rows.len - cut);
	b->rows.len -= cut;
	for (size_t i = 0; i < k; i++)
		b->nrows -= b->blocks[i].nrows;
	memmove(b->blocks, b->blocks + k,
		(b->n_blocks - k) * sizeof(*b->blocks));
	b->n_blocks -= k;
	for (size_t i = 0; i < b->n_blocks; i++)
		b->blocks[i].off -= cut;
}

void batch_done(struct batch *b)
{
	if (b->n_known + b->n_pending > KNOWN_MAX) {
		b->n_known = 0;
		cpa_htab_clear(&b->known_index);
	}
	for (size_t i = 0; i < b->n_pending; i++)
		known(b, b->pending[i], true);
	b->n_pending = 0;
	b->rows.len = b->stacks.len = 0;
	b->n_blocks = 0;
	b->nrows = b->nstacks = 0;
}
