/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Time, duration and size parsing. Stored times are UTC nanoseconds since
 * the epoch; people type and read local time.
 */
#ifndef CPA_TIMEPARSE_H
#define CPA_TIMEPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"	/* CPA_NSEC_PER_SEC, cpa_now_ns */

/* "10" (seconds), "10s", "500ms", "250us", "5m", "2h", "7d", "1h30m".
 * Returns 0 or -1. */
int cpa_parse_duration_ns(const char *s, uint64_t *ns);

/*
 * A point in time, relative to now_ns where the form is relative:
 *   now | -10m (ago) | +5s | @1700000000[.5] (epoch seconds)
 *   HH:MM[:SS[.frac]] (today, local time)
 *   YYYY-MM-DD[ T]HH:MM[:SS[.frac]][Z|+HH:MM|-HH:MM] (local unless zoned)
 *   YYYY-MM-DD (local midnight)
 *   plain integer of 9 or more digits: epoch seconds
 * Returns 0 or -1.
 */
int cpa_parse_time(const char *s, uint64_t now_ns, uint64_t *out_ns);

/* "4096", "64K", "512M", "2G", "1T" (powers of 1024). Returns 0 or -1. */
int cpa_parse_size(const char *s, uint64_t *bytes);

/* "2026-11-30 10:00:05.123" in local time */
void cpa_format_time(uint64_t ns, char *buf, size_t len);

#endif
