/* SPDX-License-Identifier: MIT */
/*
 * Pyroscope's query API over the fleet's ClickHouse (HUATUO's §12):
 * SelectMergeStacktraces, ProfileTypes, LabelNames and LabelValues of
 * querier.v1, protobuf bodies both ways (application/proto, the connect
 * protocol's unary calls), at HUATUO's path and at Pyroscope's own
 * /querier.v1.QuerierService/..., so that Grafana's Pyroscope data source
 * draws the fleet: the continuous history hosts push, and with id= a
 * job's windows. Requests are decoded field by field (lib/format/
 * protobuf.h), merged stacks come from cpa-query --clickhouse (the fleet
 * query every other answer uses), the rest from small statements.
 *
 * Each profile type id is Pyroscope's five parts, NAME:SAMPLE_TYPE:
 * SAMPLE_UNIT:PERIOD_TYPE:PERIOD_UNIT, for the cpa kinds of its row.
 */
#ifndef CPA_SERVE_QUERIER_H
#define CPA_SERVE_QUERIER_H

#include <stddef.h>
#include <stdint.h>

#include "api.h"

struct profile_type {
	const char *id;
	const char *kinds;	/* cpa-query --kind's list */
	bool job_only;		/* needs a job's sampling frequency */
};
extern const struct profile_type profile_types[];
extern const size_t n_profile_types;

/* The route's handler: the method in r->seg[last], the body in r. */
void querier_handle(struct api_request *r, struct answer *a);

/*
 * A label selector ({name="value", ...}, PromQL's syntax with = only)
 * into its labels: 0, or -1 with err. The fuzz target's entry too.
 */
struct selector {
	char id[129], hostname[256], container_id[129];
	char container_hostname[256], region[256], profile_type[256];
	char comm[256];		/* cpa's extension */
	bool any;		/* a matcher at all */
};
int selector_parse(const char *s, size_t len, struct selector *sel,
		   char *err, size_t errlen);

/* Decodes a request body of method (0 SelectMergeStacktraces, 1
 * ProfileTypes, 2 LabelNames, 3 LabelValues) as a route would: 0, or -1
 * with err. The fuzz target's entry. */
int querier_decode(unsigned method, const char *body, size_t len, char *err,
		   size_t errlen);

#endif
