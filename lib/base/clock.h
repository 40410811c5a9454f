/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * The clocks, in nanoseconds, read one way everywhere. Stream and store
 * times are CLOCK_REALTIME (cpa_now_ns); intervals, deadlines and rates
 * are CLOCK_MONOTONIC (cpa_mono_ns), which no clock step moves; the
 * kernel counts a process's start on CLOCK_BOOTTIME.
 *
 * Header-only, so that code built outside lib/'s archives (the JVMTI
 * agent) reads the clocks the same way.
 */
#ifndef CPA_CLOCK_H
#define CPA_CLOCK_H

#include <stdint.h>
#include <time.h>

#define CPA_NSEC_PER_SEC 1000000000ull
#define CPA_NSEC_PER_MSEC 1000000ull

static inline uint64_t cpa_clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * CPA_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cpa_mono_ns(void)
{
	return cpa_clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t cpa_now_ns(void)
{
	return cpa_clock_ns(CLOCK_REALTIME);
}

/* ns on a clock as the timespec pthread_cond_timedwait and friends take */
static inline struct timespec cpa_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / CPA_NSEC_PER_SEC),
		.tv_nsec = (long)(ns % CPA_NSEC_PER_SEC),
	};

	return ts;
}

/* a struct timespec (a file's mtime, say) in ns */
static inline uint64_t cpa_timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * CPA_NSEC_PER_SEC + (uint64_t)ts->tv_nsec;
}

#endif
