/* SPDX-License-Identifier: MIT */
/*
 * The run directory's key=value files: each stage's statistics
 * (lib/base/selfstats.c writes them) and the stages file. A statistics
 * file may be written by a stage of another user and is read by root, so
 * it is read bounded and parsed strictly: at most STATS_MAX_KEYS keys,
 * keys and values cut at their bound, lines without '=' skipped.
 */
#ifndef CPA_SUPERVISE_STATSFILE_H
#define CPA_SUPERVISE_STATSFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATS_MAX_KEYS 192
#define STATS_MAX_BYTES 65536

struct stats_kv {
	char key[64];
	char val[1024];
};

struct stats_file {
	struct stats_kv kv[STATS_MAX_KEYS];
	int n;
};

/* Parses n bytes of buf (need not end in NUL) into f. */
void stats_parse(const char *buf, size_t n, struct stats_file *f);
/* Reads at most STATS_MAX_BYTES of path (no symlink, no blocking open)
 * and parses them: 0, or -1 when it cannot be read. */
int stats_load(const char *path, struct stats_file *f);
/* The value of key, or NULL. */
const char *stats_get(const struct stats_file *f, const char *key);
/* The value of key as a whole decimal number: true, or false when it is
 * missing or not one. */
bool stats_get_u64(const struct stats_file *f, const char *key, uint64_t *v);

#endif
