/* SPDX-License-Identifier: MIT */
/*
 * Query filters: on labels (pid, tid, comm, cgroup, container, CPU set,
 * env, event kind) and on frames (--grep, --exclude). Decisions are cached
 * per segment labelset and stack, so each is taken once per segment.
 */
#ifndef CPA_QUERY_FILTER_H
#define CPA_QUERY_FILTER_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

#include "cpuset.h"
#include "store.h"

struct comm_match {
	const char *name;
	regex_t re;
	bool is_re;
};

struct filter {
	uint64_t *pids, *tids;
	size_t n_pids, n_tids;
	struct comm_match *comms;
	size_t n_comms;
	const char **cgroups, **containers, **pods, **envs;
	size_t n_cgroups, n_containers, n_pods, n_envs;
	bool has_cpus;
	struct cpa_cpuset cpus;
	uint32_t kinds;		/* bit per kind; 0 = all */
	regex_t *grep, *exclude;
	size_t n_grep, n_exclude;
	bool any_label, any_frame;
};

/* Per-segment caches: 0 unknown, 1 pass, 2 fail. */
struct filter_cache {
	uint8_t *ls, *stk;
	uint32_t n_ls, n_stk;
};

void filter_add_comm(struct filter *f, const char *arg);
void filter_add_regex(struct filter *f, bool exclude, const char *arg);
void filter_add_kinds(struct filter *f, const char *arg);
void filter_finish(struct filter *f);
bool filter_entry(const struct filter *f, struct filter_cache *c,
		  const struct cpa_store_dict *d, uint32_t ls, uint32_t stack);
void filter_cache_reset(struct filter_cache *c);
void filter_free(struct filter *f);

#endif
