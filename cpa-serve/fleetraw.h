/* SPDX-License-Identifier: MIT */
/*
 * What the apiserver reads of the fleet's ClickHouse (the fleet's
 * schema, docs/fleet.md): a job's raw windows (HUATUO's §11 over the
 * job's rows and its publication marker), and the child query all its
 * stack sums come from, cpa-query --clickhouse, so that a fleet answer
 * is the same code's as every other fleet query.
 */
#ifndef CPA_SERVE_FLEETRAW_H
#define CPA_SERVE_FLEETRAW_H

#include <stdint.h>

#include "api.h"
#include "buf.h"
#include "clickhouse.h"
#include "spec.h"

/* GET /v1/profiling/{id}/raw on the apiserver: ANSWER_DEFER's arg. */
struct fleetraw_req {
	char id[SPEC_ID_MAX + 1];
	struct job_spec spec;
	uint64_t limit, offset, max_page;
};
void fleetraw_work(void *arg, struct answer *a);

/* A connection to the fleet's ClickHouse (fleet.h's --clickhouse): 0,
 * or -1 with err. */
int fleet_ch_open(struct cpa_ch *ch, char *err, size_t errlen);

/*
 * cpa-query --clickhouse URL with args[n] (NULL-terminated extras), its
 * folded output into out (at most max bytes), under the request
 * children's bounds: 0, or -1 with err (the child's last words).
 */
int fleet_query(char *const *args, size_t max, struct cpa_buf *out,
		char *err, size_t errlen);

#endif
