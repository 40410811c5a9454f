/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * Option conventions shared by the tools (argp, as in libbpf-tools). Every
 * tool has --help, --version and --verbose, and the same names for the same
 * things: --pid, --tid, --comm, --cpu, --cgroup, --container, --freq,
 * --duration, --dir, --from, --to, --last, --format, --labels, --title,
 * --width, --stats. docs/options.md lists them.
 *
 * The parse helpers exit with status 2 and a line naming the option and
 * the value when the value is bad, e.g.
 *   cpa-capture: invalid --freq '0': expected an integer from 1 to 1000
 */
#ifndef CPA_OPTIONS_H
#define CPA_OPTIONS_H

#include <argp.h>
#include <stdint.h>

/* --check, taken by every tool cpa-supervise runs as a stage: the options
 * are parsed and checked, and the tool exits 0 (or 2 with the error line)
 * before it opens or starts anything, so a bad value is refused before
 * any stage runs. Add cpa_check_argp as an argp child and call
 * cpa_options_checked() where the options are known good. */
extern const struct argp cpa_check_argp;
void cpa_options_checked(void);

/* Sets argp's version string, bug address and exit status for usage
 * errors (2). Call first in main(). */
void cpa_options_init(const char *argv0);

uint64_t cpa_opt_uint(const char *opt, const char *arg, uint64_t min,
		      uint64_t max);
/* duration like 10s, 500ms, 5m, 2h, 7d, or plain seconds */
uint64_t cpa_opt_duration_ns(const char *opt, const char *arg);
/* a point in time as cpa_parse_time takes it (HH:MM[:SS], dates, ISO
 * 8601, @EPOCH, now, -10m), relative ones to now_ns */
uint64_t cpa_opt_time_ns(const char *opt, const char *arg, uint64_t now_ns);
/* size like 4096, 64K, 512M, 2G */
uint64_t cpa_opt_size(const char *opt, const char *arg);
/* comma-separated list of unsigned integers, e.g. --pid 12,34 ; appends to
 * *vals (grown with realloc) and returns the new count */
size_t cpa_opt_uint_list(const char *opt, const char *arg, uint64_t min,
			 uint64_t max, uint64_t **vals, size_t n);

#endif
