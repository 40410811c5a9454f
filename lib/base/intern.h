/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Interning for producers of the symbolized stream: strings and stacks
 * get dense ids from 1 in order of first sight, as the stream requires.
 */
#ifndef CPA_INTERN_H
#define CPA_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cpa_strtab;
struct cpa_stacktab;

struct cpa_strtab *cpa_strtab_new(void);
void cpa_strtab_free(struct cpa_strtab *t);
/* Id of s (len bytes); *is_new tells whether it was added now. */
uint32_t cpa_strtab_intern(struct cpa_strtab *t, const char *s, size_t len,
			   bool *is_new);
/* Id of s (len bytes) if it is interned, else 0; adds nothing. */
uint32_t cpa_strtab_find(const struct cpa_strtab *t, const char *s, size_t len);
/* NUL-terminated string of id (1..count), NULL when out of range. */
const char *cpa_strtab_get(const struct cpa_strtab *t, uint32_t id,
			   uint32_t *len);
uint32_t cpa_strtab_count(const struct cpa_strtab *t);
size_t cpa_strtab_bytes(const struct cpa_strtab *t);	/* memory in use */

struct cpa_stacktab *cpa_stacktab_new(void);
void cpa_stacktab_free(struct cpa_stacktab *t);
uint32_t cpa_stacktab_intern(struct cpa_stacktab *t, const uint32_t *frames,
			     uint32_t n, bool *is_new);
uint32_t cpa_stacktab_find(const struct cpa_stacktab *t,
			   const uint32_t *frames, uint32_t n);
const uint32_t *cpa_stacktab_get(const struct cpa_stacktab *t, uint32_t id,
				 uint32_t *n);
uint32_t cpa_stacktab_count(const struct cpa_stacktab *t);
size_t cpa_stacktab_bytes(const struct cpa_stacktab *t);

#endif
