// SPDX-License-Identifier: MIT
/*
 * The root end of a frame-pointer chain taken without a snapshot.
 *
 * Code that keeps frame pointers is sampled by its FP chain alone
 * (cpa-capture's --snapshot=auto), and that chain ends where the code
 * that does not keep them begins: at libc's start_thread for a thread,
 * whose caller clone3 the FP walk never sees, at
 * __libc_start_call_main for the main thread. The DWARF walks of the
 * same process's other samples (the ones that took the snapshot, and
 * cpa-capture takes it for a process's first samples) go on to the
 * thread's first frame; from them each root frame's return address is
 * learnt with the frames beyond it, which are the same for every thread
 * that got there, and an FP chain that ends at one is completed with
 * them. So both kinds of sample of one thread end at the same root.
 */
#include <string.h>

#include "unwind.h"

/* The last frames of a whole DWARF chain looked at for a root. */
#define TAIL_LOOK 4

static const struct root_tail *tail_of(const struct proc *p, uint64_t at)
{
	for (unsigned i = 0; i < p->n_tails; i++)
		if (p->tails[i].at == at)
			return &p->tails[i];
	return NULL;
}

void root_tails_learn(struct unwinder *u, struct proc *p, const uint64_t *ips,
		      unsigned n)
{
	/* from the outermost frame in: the first one known ends the look,
	 * so a process whose roots are known pays a compare per sample */
	for (unsigned k = 1; k <= TAIL_LOOK && k < n; k++) {
		unsigned i = n - 1 - k;

		if (tail_of(p, ips[i]))
			return;
		if (p->n_tails == PROC_ROOT_TAILS || k > ROOT_TAIL_MAX)
			return;
		if (!is_root_symbol(frame_raw_name(u, p, ips[i], i == 0)))
			continue;
		struct root_tail *t = &p->tails[p->n_tails++];
		t->at = ips[i];
		t->n = (uint8_t)k;
		memcpy(t->ips, ips + i + 1, 8u * k);
	}
}

unsigned root_tails_complete(const struct proc *p, uint64_t *ips, unsigned n,
			     unsigned max)
{
	const struct root_tail *t = n ? tail_of(p, ips[n - 1]) : NULL;

	if (!t || n + t->n > max)
		return n;
	memcpy(ips + n, t->ips, 8u * t->n);
	return n + t->n;
}
