/* SPDX-License-Identifier: MIT */
/*
 * cpa status: one screen about a running monitor, from the run
 * directory's stages file and each stage's statistics file.
 */
#ifndef CPA_SUPERVISE_STATUS_H
#define CPA_SUPERVISE_STATUS_H

/* Prints the screen; the exit status (1 when no monitor runs). */
int status_print(const char *run_dir);

#endif
