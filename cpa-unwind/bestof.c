// SPDX-License-Identifier: MIT
/*
 * The best-of rule: per sample, which user chain to show.
 *
 *  1. The DWARF chain when it is whole: the walk reached a frame whose
 *     CFI marks the return address undefined (glibc's _start and clone3
 *     do), a zero return address, or a known root function.
 *  2. Else the frame-pointer chain when it ends at a known root function.
 *  3. Else the longer of the two; DWARF on a tie.
 *
 * Known roots are the functions every thread starts in: _start,
 * __libc_start_main, __libc_start_call_main, start_thread, clone, clone3,
 * and Go's runtime.goexit, runtime.mstart, runtime.rt0_go.
 * A frame-pointer-less program gives the FP chain one or two frames and
 * then garbage, which rarely ends at a root; code without CFI (JIT) but
 * with frame pointers gives a whole FP chain where DWARF stops early.
 *
 * Before the rule, a DWARF walk cut by the end of the snapshot has been
 * continued with the FP chain where the two meet (splice.c).
 */
#include <string.h>

#include "unwind.h"

bool is_root_symbol(const char *raw)
{
	static const char *const roots[] = {
		"_start", "__libc_start_main", "__libc_start_call_main",
		"start_thread", "clone", "clone3", "__clone", "__clone3",
		"thread_start", "_dl_start_user",
		"runtime.goexit", "runtime.goexit.abi0", "runtime.mstart",
		"runtime.mstart.abi0", "runtime.rt0_go", "runtime.rt0_go.abi0",
	};
	if (!raw)
		return false;
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(raw, roots[i]))
			return true;
	/* versioned glibc aliases: __libc_start_main@@GLIBC_2.34 */
	size_t at = strcspn(raw, "@");
	if (raw[at])
		for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
			if (strlen(roots[i]) == at && !strncmp(raw, roots[i], at))
				return true;
	return false;
}

enum chain_choice choose_chain(struct unwinder *u, struct proc *p,
			       const struct walk_result *dwarf,
			       const uint64_t *fp, unsigned nfp)
{
	if (dwarf->n == 0 && nfp == 0)
		return CHOSE_NONE;
	if (dwarf->n && nfp == 0)
		return CHOSE_DWARF;
	if (dwarf->n == 0)
		return CHOSE_FP;
	if (walk_complete(dwarf) ||
	    is_root_symbol(frame_raw_name(u, p, dwarf->ips[dwarf->n - 1],
					  dwarf->n == 1)))
		return CHOSE_DWARF;
	if (is_root_symbol(frame_raw_name(u, p, fp[nfp - 1], nfp == 1)))
		return CHOSE_FP;
	return nfp > dwarf->n ? CHOSE_FP : CHOSE_DWARF;
}

bool chain_whole(struct unwinder *u, struct proc *p, enum chain_choice choice,
		 const struct walk_result *dwarf, const uint64_t *fp,
		 unsigned nfp)
{
	if (choice == CHOSE_DWARF) {
		if (!dwarf->n)
			return false;
		return walk_complete(dwarf) ||
		       is_root_symbol(frame_raw_name(u, p,
						     dwarf->ips[dwarf->n - 1],
						     dwarf->n == 1));
	}
	if (choice == CHOSE_FP && nfp)
		return is_root_symbol(frame_raw_name(u, p, fp[nfp - 1],
						     nfp == 1));
	return false;
}
