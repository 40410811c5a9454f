/* SPDX-License-Identifier: MIT */
/*
 * A pprof profile encoder: profile.proto (github.com/google/pprof,
 * proto/profile.proto) written by hand, gzipped, with no protobuf
 * library. Used by cpa-render --format pprof and cpa-query --format pprof.
 *
 * Stacks are added root first, as folded text and the cpa stream hold
 * them; pprof wants leaf first, which the encoder reverses. Equal stacks
 * are merged. Every distinct frame name becomes one function and one
 * location (pprof needs no addresses to show a profile); a frame such as
 * "libfoo.so+0x1a2b" gets a mapping for libfoo.so and that address.
 *
 * Sample types follow the units, as Go's own profiles name them:
 *   samples  -> samples/count, cpu/nanoseconds (period ns per sample)
 *   ns       -> off_cpu/nanoseconds
 *   count    -> events/count
 *   bytes    -> space/bytes
 *   pages    -> pages/count
 * A profile of several units keeps each apart: one column per unit
 * present, a sample's value zero in the columns of other units, CPU time
 * (else the first column) the default that go tool pprof shows.
 */
#ifndef CPA_PPROF_H
#define CPA_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

struct cpa_pprof;

/*
 * period: ns per on-CPU sample (1e9 / the capture's frequency), which
 * gives the cpu/nanoseconds column; 0 when the frequency is not known,
 * which leaves that column out rather than guess it.
 */
struct cpa_pprof *cpa_pprof_new(uint64_t period);
/* Adds value, counted in unit, to the stack frames[0..n-1] (root first).
 * n may be 0. A sum beyond INT64_MAX makes cpa_pprof_write fail. */
void cpa_pprof_add(struct cpa_pprof *p, enum cpa_unit unit,
		   const char *const *frames, uint32_t n, uint64_t value);
/* The same for the stack of a folded line, "root;...;leaf" without its
 * count, split as cpa-render splits it: an empty frame is "[unknown]". */
void cpa_pprof_add_folded(struct cpa_pprof *p, enum cpa_unit unit,
			  const char *stack, size_t len, uint64_t value);
/* time_nanos and duration_nanos of the profile (CLOCK_REALTIME ns). */
void cpa_pprof_set_time(struct cpa_pprof *p, uint64_t start_ns,
			uint64_t duration_ns);
/* Writes the gzipped profile to fd. 0, or -1 with err set. */
int cpa_pprof_write(struct cpa_pprof *p, int fd, char *err, size_t errlen);
void cpa_pprof_free(struct cpa_pprof *p);

#endif
