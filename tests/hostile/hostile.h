/* SPDX-License-Identifier: MIT */
/* The layout hostile-elf writes and hostile-spin relies on. */
#ifndef CPA_TESTS_HOSTILE_H
#define CPA_TESTS_HOSTILE_H

#define HOSTILE_SPIN_OFFSET 0x1000	/* file offset = ELF address */
#define HOSTILE_SPIN_LEN 2		/* jmp . */

#endif
