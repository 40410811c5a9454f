/* SPDX-License-Identifier: MIT */
/*
 * Positions in the host's store, and the cursor file that keeps the last
 * one ClickHouse acknowledged.
 *
 * A position "SEGMENT N" (as cpa-query --follow writes it) says the first
 * N blocks of SEGMENT and every earlier segment are sent. In ClickHouse
 * each row carries its block's position packed into 64 bits, in the
 * order of the store: the segment's start second (32 bits), its sequence
 * number (10), the block count (22). So the largest position of a host's
 * rows is what ClickHouse holds of it, whatever the cursor file says.
 */
#ifndef CPA_PUSH_CURSOR_H
#define CPA_PUSH_CURSOR_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct push_pos {
	char seg[CPA_STORE_NAME_MAX];	/* "" for none yet */
	uint64_t blocks;
};

/* "SEGMENT N". 0, or -1 with err. */
int pos_parse(const char *text, size_t len, struct push_pos *p, char *err,
	      size_t errlen);
/* 0 for none; else the packed position (pos_unpack's inverse). -1 with
 * err when it does not fit (a sequence over 1023, 4M blocks). */
int pos_pack(const struct push_pos *p, uint64_t *v, char *err,
	     size_t errlen);
void pos_unpack(uint64_t v, struct push_pos *p);

/* Reads the cursor: 0, 1 when there is none yet, -1 with err. */
int cursor_read(const char *path, struct push_pos *p, char *err,
		size_t errlen);
/* Replaces it atomically (written, synced, renamed). 0 or -1 with err. */
int cursor_write(const char *path, const struct push_pos *p, char *err,
		 size_t errlen);

#endif
