/* SPDX-License-Identifier: MIT */
/*
 * Python frames: the code objects a raw sample's Python section names,
 * read from the process's memory once per address, turned into
 * "qualname (file.py:LINE)_[py]" frames and spliced into the native chain
 * where the interpreter's eval function frames are.
 */
#ifndef CPA_UNWIND_PYTHON_H
#define CPA_UNWIND_PYTHON_H

#include <stdint.h>

#include "stream.h"

struct unwinder;
struct proc;

/* Reads the sample's code objects now, before the native walk may wait
 * for ELF objects to load: the process may exit meanwhile. */
void python_read_codes(struct unwinder *u, struct proc *p,
		       const struct cpa_raw_sample *s);

/*
 * The native chain ips[0..nips) (leaf first) with the sample's Python
 * frames in place of the eval function's frames, written root first into
 * out (room for max ids). Returns the number of ids written.
 */
unsigned python_splice(struct unwinder *u, struct proc *p,
		       const struct cpa_raw_sample *s, const uint64_t *ips,
		       unsigned nips, uint32_t *out, unsigned max);

#endif
