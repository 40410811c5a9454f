// SPDX-License-Identifier: MIT
/*
 * Continuing a DWARF walk cut by the end of its snapshot with the
 * frame-pointer chain of the same sample.
 *
 * Off-CPU samples carry only the first few hundred bytes of user stack
 * (cpa-capture's --offcpu-stack-size): enough to unwind, by CFI, the
 * frames of libc's blocking wrappers, which have no frame pointers and so
 * hide their caller from the FP chain, but not the rest of the stack. The
 * FP chain has the rest. A probe or on-CPU sample whose stack is deeper
 * than --stack-size gets the same treatment.
 */
#include "walk.h"

/*
 * Where the walk stopped with the frame pointer the sample started with
 * (libc left rbp alone, so it still points to the first frame-pointer
 * frame above the walk), the FP chain's return addresses from fp[1] on
 * are the frames above the walk. Else the walk's last frame that also
 * appears in the FP chain (in order, past fp[0]) is where the two meet.
 */
bool splice_fp(struct walk_result *d, const uint64_t *fp, unsigned nfp,
	       uint64_t bp0)
{
	unsigned from = 0;

	if (d->end != WALK_TRUNCATED || d->n == 0 || nfp < 2 ||
	    fp[0] != d->ips[0])
		return false;
	if (d->bp_known && d->bp == bp0) {
		from = 1;
	} else {
		unsigned j = 1;
		for (unsigned i = 1; i < d->n && j < nfp; i++)
			for (unsigned k = j; k < nfp; k++)
				if (fp[k] == d->ips[i]) {
					from = k + 1;
					j = k + 1;
					break;
				}
		if (from == 0)
			return false;
	}
	while (from < nfp && d->n < WALK_MAX_FRAMES) {
		d->method[d->n] = 0;
		d->ips[d->n++] = fp[from++];
	}
	d->end = WALK_SPLICED;
	return true;
}
