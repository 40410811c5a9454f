/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Growth of arrays and bytes: the one place that doubles a capacity and
 * checks it for overflow, and a growable byte buffer built on it.
 */
#ifndef CPA_BUF_H
#define CPA_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "leb128.h"

/*
 * Capacity to grow to so that need elements of elem_size bytes fit:
 * cap doubled (min when cap is 0) until need fits. 0 when need elements
 * would not fit in memory's size_t, so callers cannot wrap around.
 */
size_t cpa_grow_cap(size_t cap, size_t need, size_t min, size_t elem_size);

/* Reallocates p, of *cap elements, to hold need; dies when out of memory
 * or when the size overflows. Returns the new pointer. */
void *cpa_grow(void *p, size_t *cap, size_t need, size_t elem_size);

/* Makes room for need elements in the array arr of capacity cap (any
 * unsigned type), doubling; the usual array-append idiom:
 *	CPA_GROW(v, cap, n + 1);
 *	v[n++] = x;
 * Its arguments are evaluated more than once.
 */
#define CPA_GROW(arr, cap, need) CPA_GROW_WITH(cpa_grow, arr, cap, need)
/* As CPA_GROW, the new elements zeroed (arrays indexed by id). */
#define CPA_GROW_ZERO(arr, cap, need)                                        \
	CPA_GROW_WITH(cpa_grow_zero, arr, cap, need)

#define CPA_GROW_WITH(fn, arr, cap, need)                                    \
	do {                                                                 \
		if ((size_t)(need) > (size_t)(cap)) {                        \
			size_t cap_ = (cap);                                 \
			(arr) = fn((arr), &cap_, (need), sizeof(*(arr)));    \
			cpa_grow_check_fits(cap_, (cap) = cap_);             \
		}                                                            \
	} while (0)

/* cpa_grow, the elements past the old capacity zeroed. */
void *cpa_grow_zero(void *p, size_t *cap, size_t need, size_t elem_size);

/* Dies when a capacity did not survive the store into a narrower type. */
void cpa_grow_check_fits(size_t want, unsigned long long got);

/* A growable byte buffer; zero-initialised is empty. */
struct cpa_buf {
	uint8_t *p;
	size_t len, cap;
};

/* Room for more bytes past len. */
static inline void cpa_buf_reserve(struct cpa_buf *b, size_t more)
{
	if (b->cap - b->len < more) {
		if (more > SIZE_MAX - b->len)
			more = SIZE_MAX - b->len;	/* cpa_grow dies */
		b->p = cpa_grow(b->p, &b->cap, b->len + more, 1);
	}
}

static inline void cpa_buf_add(struct cpa_buf *b, const void *p, size_t n)
{
	cpa_buf_reserve(b, n);
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* Appends v as an unsigned LEB128. */
static inline void cpa_buf_uleb128(struct cpa_buf *b, uint64_t v)
{
	cpa_buf_reserve(b, CPA_LEB128_MAX);
	b->len += cpa_put_uleb128(b->p + b->len, v);
}

/* The whole file at path into b (NUL-terminated, b->len its length),
 * at most max bytes, across EINTR: 0, -EFBIG past max, or -errno. */
int cpa_buf_read_file(struct cpa_buf *b, const char *path, size_t max);
void cpa_buf_free(struct cpa_buf *b);

/*
 * Asks for transparent huge pages for the whole 2 MiB pages inside
 * [p, p + len), where the kernel gives them only on request (THP
 * "madvise" mode): a large array read at random would otherwise miss the
 * TLB on most reads. Call it before the memory is first touched.
 */
void cpa_want_huge_pages(void *p, size_t len);

#endif
