/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"

/* A first allocation small enough for a few elements and large enough
 * that tiny arrays do not realloc on every append. */
#define GROW_MIN_BYTES 64

size_t cpa_grow_cap(size_t cap, size_t need, size_t min, size_t elem_size)
{
	if (!elem_size || need > SIZE_MAX / elem_size)
		return 0;
	if (need <= cap)
		return cap;
	if (!cap)
		cap = min ? min : 1;
	while (cap < need) {
		if (cap > SIZE_MAX / 2 / elem_size) {
			cap = need;	/* doubling would overflow: fit exactly */
			break;
		}
		cap *= 2;
	}
	return cap;
}

void *cpa_grow(void *p, size_t *cap, size_t need, size_t elem_size)
{
	if (need <= *cap)
		return p;
	size_t min = elem_size < GROW_MIN_BYTES ? GROW_MIN_BYTES / elem_size
						: 1;
	size_t ncap = cpa_grow_cap(*cap, need, min, elem_size);
	if (!ncap || need == SIZE_MAX)
		cpa_die("out of memory (%zu elements of %zu bytes)", need,
			elem_size);
	p = cpa_realloc(p, ncap * elem_size);
	*cap = ncap;
	return p;
}

void *cpa_grow_zero(void *p, size_t *cap, size_t need, size_t elem_size)
{
	size_t old = *cap;
	p = cpa_grow(p, cap, need, elem_size);
	memset((char *)p + old * elem_size, 0, (*cap - old) * elem_size);
	return p;
}

void cpa_grow_check_fits(size_t want, unsigned long long got)
{
	if (got != want)
		cpa_die("out of memory (capacity %zu exceeds its type)", want);
}

void cpa_want_huge_pages(void *p, size_t len)
{
	const uintptr_t huge = 2u << 20;
	uintptr_t start = ((uintptr_t)p + huge - 1) & ~(huge - 1);
	uintptr_t end = ((uintptr_t)p + len) & ~(huge - 1);

	if (end > start)
		madvise((void *)start, end - start, MADV_HUGEPAGE);
}

void cpa_buf_free(struct cpa_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int cpa_buf_read_file(struct cpa_buf *b, const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	b->len = 0;
	for (;;) {
		cpa_buf_reserve(b, 4096);
		ssize_t k = read(fd, b->p + b->len, b->cap - b->len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (k == 0)
			break;
		b->len += (size_t)k;
		if (b->len > max) {
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	b->p[b->len] = 0;
	return 0;
}
