// SPDX-License-Identifier: MIT
/* A JVM's code cache and its nmethods' debug information (jvmcode.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "buf.h"
#include "clock.h"
#include "jvmcode.h"
#include "log.h"

#define SEGMAP_WINDOW 256	/* segment map bytes read at once */
#define SEGMAP_STEPS 64		/* jumps back to a block's start */
#define MAX_BLOB_SIZE (64u << 20)
#define MAX_DEBUG_BYTES (4u << 20)	/* one nmethod's scopes and pcs */
#define MAX_NAME 96
#define HEADER_MAX 4096

static bool mem(int memfd, uint64_t addr, void *buf, size_t len)
{
	return addr && addr < (1ull << 63) && len < (1u << 30) &&
	       pread(memfd, buf, len, (off_t)addr) == (ssize_t)len;
}

static uint64_t get64(const uint8_t *h, uint32_t off)
{
	uint64_t v;
	memcpy(&v, h + off, 8);
	return v;
}

static uint32_t get32(const uint8_t *h, uint32_t off)
{
	uint32_t v;
	memcpy(&v, h + off, 4);
	return v;
}

/* The start of the block holding pc, through its heap's segment map:
 * each used segment holds how many segments back its block starts (or a
 * step towards it), 0 at the start, 0xff when free. 0 when none. */
static uint64_t block_start(const struct jvm_layout *l, int memfd,
			    uint64_t pc)
{
	const struct jvm_heap *h = NULL;
	for (unsigned i = 0; i < l->nheaps; i++)
		if (pc >= l->heaps[i].lo && pc < l->heaps[i].hi)
			h = &l->heaps[i];
	if (!h)
		return 0;
	uint64_t seg = (pc - h->lo) >> l->seg_shift;
	uint8_t win[SEGMAP_WINDOW];
	uint64_t wlo = 1, whi = 0;	/* the window: segments [wlo, whi] */
	for (unsigned step = 0; step < SEGMAP_STEPS; step++) {
		if (seg < wlo || seg > whi) {
			wlo = seg >= SEGMAP_WINDOW - 1 ? seg - (SEGMAP_WINDOW - 1)
							: 0;
			whi = seg;
			if (!mem(memfd, h->segmap + wlo, win, whi - wlo + 1))
				return 0;
		}
		uint8_t tag = win[seg - wlo];
		if (tag == 0xff)
			return 0;
		if (tag == 0)
			return h->lo + (seg << l->seg_shift);
		if (tag > seg)
			return 0;
		seg -= tag;
	}
	return 0;
}

static void blob_free(struct jvm_blob *b)
{
	if (!b)
		return;
	free(b->name);
	free(b->pcs);
	free(b->scopes);
	free(b->meta);
	free(b);
}

/* n bytes more held (or fewer, negative), charged to the budget */
static void charge(struct jvm_code *c, int64_t n)
{
	c->bytes += (uint64_t)n;
	if (c->budget)
		budget_charge(c->budget, BUDGET_JVMCODE, n);
}

void jvm_code_reset(struct jvm_code *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->n; i++)
		blob_free(c->blobs[i]);
	c->n = 0;
	charge(c, -(int64_t)c->bytes);
}

void jvm_code_free(struct jvm_code *c)
{
	if (!c)
		return;
	jvm_code_reset(c);
	free(c->blobs);
	memset(c, 0, sizeof(*c));
}

/* The kind of a blob, by the name HotSpot gives each kind. */
static uint8_t kind_of(const char *name)
{
	if (!strcmp(name, "nmethod"))
		return JVM_BLOB_NMETHOD;
	if (!strcmp(name, "native nmethod"))
		return JVM_BLOB_NATIVE;
	if (!strcmp(name, "Interpreter"))
		return JVM_BLOB_INTERP;
	if (!strncmp(name, "vtable", 6) || !strncmp(name, "itable", 6) ||
	    strstr(name, "adapters") || strstr(name, "Adapter"))
		return JVM_BLOB_PC_ONLY;
	return JVM_BLOB_STUB;
}

/* The header fields of the blob at addr; false when it is no blob. */
static bool read_header(const struct jvm_layout *l, int memfd, uint64_t addr,
			uint8_t *h, uint64_t *name_ptr, uint32_t *size,
			uint32_t *compile_id)
{
	if (!mem(memfd, addr, h, l->blob_read))
		return false;
	*name_ptr = get64(h, l->blob_name);
	*size = get32(h, l->blob_size);
	*compile_id = get32(h, l->nm_compile_id);
	return *name_ptr && *size > l->heapblock_size && *size < MAX_BLOB_SIZE;
}

static struct jvm_blob *blob_read(const struct jvm_layout *l, int memfd,
				  uint64_t addr)
{
	uint8_t h[HEADER_MAX];
	uint64_t name_ptr;
	uint32_t size, compile_id;
	char name[MAX_NAME];
	if (!read_header(l, memfd, addr, h, &name_ptr, &size, &compile_id))
		return NULL;
	ssize_t k = pread(memfd, name, sizeof(name) - 1, (off_t)name_ptr);
	if (k <= 0)
		return NULL;
	name[k] = '\0';
	name[strcspn(name, "\n")] = '\0';
	struct jvm_blob *b = cpa_calloc(1, sizeof(*b));
	b->start = addr;
	b->end = addr + size;
	b->name_ptr = name_ptr;
	b->compile_id = compile_id;
	b->kind = kind_of(name);
	if (l->code_offsets) {
		b->code_begin = addr + get32(h, l->blob_code_begin);
		b->code_end = addr + get32(h, l->blob_code_end);
	} else {
		b->code_begin = get64(h, l->blob_code_begin);
		b->code_end = get64(h, l->blob_code_end);
	}
	int32_t fs = (int32_t)get32(h, l->blob_frame_size);
	int32_t fc;
	if (l->frame_complete_width == 2) {
		int16_t v;
		memcpy(&v, h + l->blob_frame_complete, 2);
		fc = v;
	} else {
		fc = (int32_t)get32(h, l->blob_frame_complete);
	}
	if (b->code_begin < addr || b->code_end > b->end ||
	    b->code_begin > b->code_end || fs < 0 || fs > (1 << 16)) {
		free(b);
		return NULL;
	}
	b->frame_size = (uint32_t)fs * 8;
	b->frame_complete =
		fc >= 0 && (uint64_t)fc <= b->code_end - b->code_begin ? fc
									: -1;
	if (b->kind == JVM_BLOB_NMETHOD || b->kind == JVM_BLOB_NATIVE) {
		b->method = get64(h, l->nm_method);
		if (l->nm_deopt) {
			b->deopt = l->deopt_offset
					   ? addr + get32(h, l->nm_deopt)
					   : get64(h, l->nm_deopt);
			b->orig_pc = (int32_t)get32(h, l->nm_orig_pc);
			if (b->deopt < b->code_begin || b->deopt >= b->code_end)
				b->deopt = 0;
		}
	} else {
		b->name = cpa_strdup(name);
	}
	b->bytes = (uint32_t)(sizeof(*b) + (b->name ? strlen(b->name) + 1 : 0));
	return b;
}

/* The index of the first cached blob starting after pc. */
static uint32_t upper(const struct jvm_code *c, uint64_t pc)
{
	uint32_t lo = 0, hi = c->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->blobs[mid]->start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void remove_at(struct jvm_code *c, uint32_t i)
{
	charge(c, -(int64_t)c->blobs[i]->bytes);
	blob_free(c->blobs[i]);
	memmove(c->blobs + i, c->blobs + i + 1,
		(c->n - i - 1) * sizeof(*c->blobs));
	c->n--;
}

/* Whether n more bytes would pass the process's share of the budget. */
static bool over(const struct jvm_code *c, uint64_t n)
{
	return c->budget && c->bytes + n > c->budget->per_proc;
}

static void insert(struct jvm_code *c, struct jvm_blob *b)
{
	if (c->n >= JVM_CODE_MAX_BLOBS || over(c, b->bytes)) {
		jvm_code_reset(c);
		c->st->resets++;
		if (c->budget)
			c->budget->full[BUDGET_JVMCODE]++;
	}
	uint32_t i = upper(c, b->start);
	/* what the new blob overlaps is gone from the JVM */
	while (i > 0 && c->blobs[i - 1]->end > b->start)
		remove_at(c, --i);
	while (i < c->n && c->blobs[i]->start < b->end)
		remove_at(c, i);
	CPA_GROW(c->blobs, c->cap, c->n + 1);
	memmove(c->blobs + i + 1, c->blobs + i, (c->n - i) * sizeof(*c->blobs));
	c->blobs[i] = b;
	c->n++;
	charge(c, b->bytes);
}

/* Whether the cached blob is still the JVM's: its header unchanged. */
static bool recheck(struct jvm_code *c, const struct jvm_layout *l, int memfd,
		    struct jvm_blob *b, uint64_t now_ns)
{
	uint8_t h[HEADER_MAX];
	uint64_t name_ptr;
	uint32_t size, compile_id;
	c->st->rechecks++;
	if (!read_header(l, memfd, b->start, h, &name_ptr, &size,
			 &compile_id) ||
	    name_ptr != b->name_ptr || b->start + size != b->end ||
	    ((b->kind == JVM_BLOB_NMETHOD || b->kind == JVM_BLOB_NATIVE) &&
	     (compile_id != b->compile_id ||
	      get64(h, l->nm_method) != b->method)))
		return false;
	b->checked_ns = now_ns;
	return true;
}

const struct jvm_blob *jvm_blob_at(struct jvm_code *c,
				   const struct jvm_layout *l, int memfd,
				   uint64_t pc, uint64_t now_ns)
{
	if (!l->code_ok || pc < l->cc_lo || pc >= l->cc_hi || memfd < 0)
		return NULL;
	uint32_t i = upper(c, pc);
	if (i > 0 && pc < c->blobs[i - 1]->end) {
		struct jvm_blob *b = c->blobs[i - 1];
		if (now_ns - b->checked_ns < CPA_NSEC_PER_SEC ||
		    recheck(c, l, memfd, b, now_ns))
			return pc >= b->code_begin && pc < b->code_end ? b
								       : NULL;
		c->st->stale++;
		remove_at(c, i - 1);
	}
	c->st->blob_misses++;
	if (!c->lookups_left) {
		c->st->lookups_refused++;
		return NULL;
	}
	c->lookups_left--;
	uint64_t block = block_start(l, memfd, pc);
	if (!block)
		return NULL;
	struct jvm_blob *b = blob_read(l, memfd, block + l->heapblock_size);
	if (!b)
		return NULL;
	if (pc >= b->end) {
		blob_free(b);
		return NULL;
	}
	c->st->blobs_read++;
	b->checked_ns = now_ns;
	insert(c, b);
	return pc >= b->code_begin && pc < b->code_end ? b : NULL;
}

bool jvm_u5_read(const uint8_t *buf, uint32_t len, uint32_t *pos, uint8_t x,
		 uint32_t *v)
{
	/* UNSIGNED5: up to five bytes, each below 192 + x ends the value;
	 * the others carry 6 more bits */
	uint32_t sum = 0;
	for (unsigned i = 0, shift = 0; i < 5; i++, shift += 6) {
		if (*pos >= len)
			return false;
		uint8_t b = buf[(*pos)++];
		if (b < x)
			return false;
		sum += (uint32_t)(b - x) << shift;
		if (b < 192 + x || i == 4) {
			*v = sum;
			return true;
		}
	}
	return false;
}

uint32_t jvm_pcdesc_find(const int32_t *pcs, uint32_t npcs, int32_t target)
{
	uint32_t lo = 0, hi = npcs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (pcs[2 * mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < npcs && pcs[2 * lo + 1] > 0 ? (uint32_t)pcs[2 * lo + 1] : 0;
}

/* Reads nmethod b's PcDescs, scopes and metadata, once. */
static bool read_debug(struct jvm_code *c, const struct jvm_layout *l,
		       int memfd, struct jvm_blob *b)
{
	uint8_t h[HEADER_MAX];
	uint64_t pcs_at, pcs_end, scopes_at, scopes_end, meta_at, meta_end;
	b->have_debug = true;
	c->st->debug_reads++;
	if (!l->nm_scopes_pcs_off || !mem(memfd, b->start, h, l->blob_read))
		return false;
	if (l->immutable) {
		uint64_t imm = get64(h, l->nm_immutable);
		uint32_t isize = get32(h, l->nm_immutable_size);
		uint64_t mut = get64(h, l->blob_mutable);
		uint32_t msize = get32(h, l->blob_mutable_size);
		uint32_t reloc = get32(h, l->blob_reloc_size);
		pcs_at = imm + get32(h, l->nm_scopes_pcs_off);
		pcs_end = scopes_at = imm + get32(h, l->nm_scopes_data_off);
		scopes_end = imm + isize;
		meta_at = mut + reloc;
		meta_end = mut + msize;
		if (!imm || !mut || reloc > msize)
			return false;
	} else {
		meta_at = b->start + get32(h, l->nm_metadata_off);
		meta_end = scopes_at = get64(h, l->nm_scopes_data_begin);
		scopes_end = pcs_at = b->start + get32(h, l->nm_scopes_pcs_off);
		pcs_end = b->start + get32(h, l->nm_dependencies_off);
	}
	if (pcs_at > pcs_end || scopes_at > scopes_end || meta_at > meta_end ||
	    pcs_end - pcs_at > MAX_DEBUG_BYTES ||
	    scopes_end - scopes_at > MAX_DEBUG_BYTES ||
	    meta_end - meta_at > MAX_DEBUG_BYTES)
		return false;
	uint32_t npcs = (uint32_t)((pcs_end - pcs_at) / l->pcdesc_size);
	uint32_t slen = (uint32_t)(scopes_end - scopes_at);
	uint32_t nmeta = (uint32_t)((meta_end - meta_at) / 8);
	/* one nmethod alone past the process's share: its method alone */
	if (over(c, npcs * 8ull + slen + nmeta * 8ull))
		return false;
	uint8_t *raw = malloc(npcs * (size_t)l->pcdesc_size + 1);
	b->pcs = malloc(npcs * 2 * sizeof(int32_t) + 1);
	b->scopes = malloc(slen + 1);
	b->meta = malloc(nmeta * sizeof(uint64_t) + 1);
	bool ok = raw && b->pcs && b->scopes && b->meta &&
		  (!npcs || mem(memfd, pcs_at, raw,
				npcs * (size_t)l->pcdesc_size)) &&
		  (!slen || mem(memfd, scopes_at, b->scopes, slen)) &&
		  (!nmeta || mem(memfd, meta_at, b->meta, nmeta * 8));
	if (ok) {
		for (uint32_t i = 0; i < npcs; i++) {
			const uint8_t *d = raw + i * (size_t)l->pcdesc_size;
			memcpy(&b->pcs[2 * i], d + l->pcdesc_pc, 4);
			memcpy(&b->pcs[2 * i + 1], d + l->pcdesc_scope, 4);
			/* sorted by pc offset, as HotSpot's lookup needs */
			if (i && b->pcs[2 * i] < b->pcs[2 * i - 2])
				ok = false;
		}
	}
	free(raw);
	if (!ok) {
		free(b->pcs);
		free(b->scopes);
		free(b->meta);
		b->pcs = NULL;
		b->scopes = NULL;
		b->meta = NULL;
		return false;
	}
	b->npcs = npcs;
	b->scopes_len = slen;
	b->nmeta = nmeta;
	uint32_t more = npcs * 8 + slen + nmeta * 8;
	b->bytes += more;
	charge(c, more);
	return true;
}

unsigned jvm_scope_chain(const struct jvm_debug *d, int32_t target, uint8_t x,
			 uint64_t *inner, unsigned max)
{
	unsigned n = 0;
	uint32_t off = jvm_pcdesc_find(d->pcs, d->npcs, target);
	while (off && off < d->scopes_len && n < max) {
		uint32_t pos = off, sender, idx, bci;
		if (!jvm_u5_read(d->scopes, d->scopes_len, &pos, x, &sender) ||
		    !jvm_u5_read(d->scopes, d->scopes_len, &pos, x, &idx) ||
		    !jvm_u5_read(d->scopes, d->scopes_len, &pos, x, &bci) ||
		    !idx || idx > d->nmeta || !d->meta[idx - 1])
			break;
		inner[n++] = d->meta[idx - 1];
		/* a sender is written before its callee: the offsets fall,
		 * and the walk ends */
		if (sender >= off)
			break;
		off = sender;
	}
	return n;
}

unsigned jvm_blob_scopes(struct jvm_code *c, const struct jvm_layout *l,
			 int memfd, const struct jvm_blob *cb, uint64_t pc,
			 bool exact, uint64_t *methods, unsigned max)
{
	struct jvm_blob *b = (struct jvm_blob *)cb;
	uint64_t inner[JVM_MAX_SCOPES];
	unsigned n = 0;
	if (!max || b->kind != JVM_BLOB_NMETHOD)
		return 0;
	if (!b->have_debug && !read_debug(c, l, memfd, b))
		c->st->debug_failures++;
	if (b->pcs && pc >= b->code_begin && pc < b->code_end) {
		/* the JVM's own profilers' rule (pc_desc_near): the first
		 * PcDesc at or after a return address; for the PC of an
		 * interrupted instruction, the first after it (JFR and
		 * AsyncGetCallTrace to JDK 24) or at or after it (JFR from
		 * JDK 25, whose C2 this matches: docs/unwinding.md) */
		int32_t target = (int32_t)(pc - b->code_begin) +
				 (exact && l->major < 25 ? 1 : 0);
		const struct jvm_debug d = {
			.pcs = b->pcs, .npcs = b->npcs, .scopes = b->scopes,
			.scopes_len = b->scopes_len, .meta = b->meta,
			.nmeta = b->nmeta,
		};
		n = jvm_scope_chain(&d, target, l->u5_x, inner, JVM_MAX_SCOPES);
	}
	if (!n) {
		if (!b->method)
			return 0;
		methods[0] = b->method;
		return 1;
	}
	unsigned k = n < max ? n : max;
	/* what does not fit is the innermost end */
	for (unsigned i = 0; i < k; i++)
		methods[i] = inner[n - 1 - i];
	return k;
}
