/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: cpa-capture's reader of what a JVM's agent sends
 * (cpa-capture/java.c, wire format lib/runtime/jvmagent.h); the JVM is any
 * user's. The input's first byte says whether the JVM is --java-live
 * (bit 0) and how many bytes arrive at a time (the rest, + 1), as recv()
 * may cut records anywhere; the rest is the stream.
 *
 * The capture's output is replaced by a check of each sample's named
 * frames: as many as it says, lengths that add up, nothing that breaks a
 * folded line.
 */
#include <stdlib.h>
#include <string.h>

#include "../../cpa-capture/cpa-capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

void output_queue_sample(const struct cpa_raw_sample *s)
{
	size_t at = 0;

	if (!(s->flags & CPA_FLAG_FREE) && (!s->n_named || !s->named))
		abort();
	for (uint32_t i = 0; i < s->n_named; i++) {
		uint16_t n;
		if (s->named_len - at < 2)
			abort();
		memcpy(&n, s->named + at, 2);
		if (n > s->named_len - at - 2)
			abort();
		for (uint16_t k = 0; k < n; k++)
			if (s->named[at + 2 + k] == ';' ||
			    s->named[at + 2 + k] < 0x20)
				abort();
		at += 2u + n;
	}
	if (at != s->named_len)
		abort();
}

void output_queue_lost(uint64_t mono_ns, uint32_t reason, uint32_t cpu,
		       uint64_t count)
{
	(void)mono_ns, (void)reason, (void)cpu, (void)count;
}

uint64_t capture_unbiased_weight(uint64_t size, double mean)
{
	(void)mean;
	return size;
}

uint64_t mono_now_ns(void)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	size_t have = 0, at = 0, chunk;
	bool live;

	if (size < 1)
		return 0;
	live = data[0] & 1;
	chunk = (data[0] >> 1) + 1u;
	data++, size--;
	/* the bytes of whole records are taken, the rest waits for more */
	while (have < size) {
		size_t taken;
		have = have + chunk < size ? have + chunk : size;
		err[0] = '\0';
		int rc = java_records(data + at, have - at, live, &taken, err,
				      sizeof(err));
		if (taken > have - at || (rc < 0 && !err[0]))
			abort();
		at += taken;
		if (rc)
			break;
	}
	return 0;
}
