/* SPDX-License-Identifier: MIT */
#ifndef CPA_SERVE_OPTS_H
#define CPA_SERVE_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "jobs.h"

struct serve_opts {
	const char *listen;
	const char *token_file;
	bool token_file_given;
	const char *users_file;
	const char *state_dir;
	const char *store_dir;
	const char *clickhouse;		/* history from the fleet's tables */
	bool fleet;			/* the apiserver role */
	const char *nodes_file;		/* --nodes */
	unsigned node_port;		/* nodes by host name */
	unsigned node_timeout_ms, node_poll_ms, pending_s, unavailable_s;
	bool max_jobs_given, max_per_target_given;
	unsigned max_query_windows;
	const char *tls_cert, *tls_key;
	const char *user;
	struct serve_limits limits;
	size_t max_body;
	unsigned threads;
	unsigned header_timeout_s, read_timeout_s, max_connections, max_per_addr;
};

void serve_parse_options(int argc, char **argv, struct serve_opts *o);

#endif
