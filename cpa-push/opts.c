/* SPDX-License-Identifier: MIT */
#include <argp.h>
#include <stdlib.h>
#include <string.h>

#include "clickhouse.h"
#include "log.h"
#include "options.h"
#include "timeparse.h"
#include "opts.h"

enum {
	OPT_CLICKHOUSE = 0x100, OPT_CURSOR, OPT_HOST, OPT_DATABASE,
	OPT_CLUSTER, OPT_INIT, OPT_PRINT_SCHEMA, OPT_RETAIN, OPT_BATCH_ROWS,
	OPT_BATCH_WAIT, OPT_BACKOFF_MAX, OPT_TIMEOUT, OPT_FROM, OPT_ONCE,
	OPT_CHECK, OPT_JOB, OPT_REGION,
};

static const char doc[] =
	"Push the windows of a cpa store into ClickHouse, the fleet's "
	"history: one row per window, label set and stack, stacks once per "
	"hash of their frames. With --dir, cpa-push runs cpa-query --follow "
	"on the store itself; without, it reads that stream on stdin. A "
	"cursor file keeps the last block ClickHouse acknowledged, so a "
	"restart, a kill or a ClickHouse outage neither loses nor repeats a "
	"window: the store is the buffer. Tables missing are created "
	"(docs/fleet.md has the SQL).\v"
	"Without --dir, --init and --retain run once and exit. See "
	"cpa-push(1).";

static const struct argp_option options[] = {
	{NULL, 0, NULL, 0, "Where:", 0},
	{"clickhouse", OPT_CLICKHOUSE, "URL", 0, "ClickHouse's HTTP interface: "
	 "http://[USER[:PASSWORD]@]HOST[:PORT][/?SETTINGS] (required)", 0},
	{"database", OPT_DATABASE, "NAME", 0, "Database of the tables "
	 "(default cpa)", 0},
	{"cluster", OPT_CLUSTER, "NAME", 0, "Tables are Distributed over this "
	 "cluster of the server's remote_servers, over local tables on each "
	 "shard (default: plain tables on one server)", 0},
	{NULL, 0, NULL, 0, "What:", 1},
	{"dir", 'd', "DIR", 0, "The store to push: runs cpa-query --dir DIR "
	 "--follow --cursor FILE", 1},
	{"cursor", OPT_CURSOR, "FILE", 0, "The last block acknowledged "
	 "(default DIR/push.cursor with --dir; required without)", 1},
	{"host", OPT_HOST, "NAME", 0, "Host name of the rows (default: the "
	 "machine's hostname)", 1},
	{"from", OPT_FROM, "TIME", 0, "Without a cursor yet, push windows "
	 "from TIME on (default: the whole store)", 1},
	{"once", OPT_ONCE, NULL, 0, "With --dir, push what the store holds "
	 "now and exit (a backfill)", 1},
	{"job", OPT_JOB, "ID", 0, "The store is one profiling job's windows: "
	 "its rows carry request_id ID, and with --once its publication "
	 "marker is written once they are all in (cpa-serve's node does "
	 "this)", 1},
	{"region", OPT_REGION, "NAME", 0, "With --job, the region its "
	 "publication names (default empty)", 1},
	{NULL, 0, NULL, 0, "Schema and retention:", 2},
	{"init", OPT_INIT, NULL, 0, "Create the database and tables that are "
	 "missing, check those that exist, and exit", 2},
	{"print-schema", OPT_PRINT_SCHEMA, NULL, 0, "Print the SQL --init runs "
	 "and exit", 2},
	{"retain", OPT_RETAIN, "DURATION", 0, "Drop the day partitions wholly "
	 "older than DURATION (e.g. 14d); with --dir, every hour while "
	 "pushing", 2},
	{NULL, 0, NULL, 0, "Batches and retries:", 3},
	{"batch-rows", OPT_BATCH_ROWS, "N", 0, "Insert once N rows are "
	 "waiting (default 100000)", 3},
	{"batch-wait", OPT_BATCH_WAIT, "DURATION", 0, "Insert what waits at "
	 "least this often (default 10s)", 3},
	{"backoff-max", OPT_BACKOFF_MAX, "DURATION", 0, "Longest wait between "
	 "retries, doubling from 1s (default 60s)", 3},
	{"timeout", OPT_TIMEOUT, "DURATION", 0, "Connect, send and answer "
	 "timeout of a statement (default 30s)", 3},
	{"check", OPT_CHECK, NULL, 0, "Check the options and exit (0, or 2 "
	 "naming the bad one), as a supervisor does before it starts a "
	 "stage", 4},
	{"verbose", 'v', NULL, 0, "Say what is pushed", 4},
	{0},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct push_opts *o = state->input;
	switch (key) {
	case OPT_CLICKHOUSE:
		o->url = arg;
		break;
	case OPT_DATABASE:
		o->database = cpa_ch_opt_database(arg);
		break;
	case OPT_CLUSTER:
		if (!*arg)
			cpa_die_usage("invalid --cluster '': empty");
		o->cluster = arg;
		break;
	case 'd':
		o->dir = arg;
		break;
	case OPT_CURSOR:
		o->cursor = arg;
		break;
	case OPT_HOST:
		if (!*arg)
			cpa_die_usage("invalid --host '': empty");
		o->host = arg;
		break;
	case OPT_FROM:
		o->from = arg;
		break;
	case OPT_ONCE:
		o->once = true;
		break;
	case OPT_JOB:
		if (!*arg || strlen(arg) > 128)
			cpa_die_usage("invalid --job '%s': expected 1 to 128 "
				      "bytes", arg);
		o->job = arg;
		break;
	case OPT_REGION:
		o->region = arg;
		break;
	case OPT_CHECK:
		o->check = true;
		break;
	case OPT_INIT:
		o->init = true;
		break;
	case OPT_PRINT_SCHEMA:
		o->print_schema = true;
		break;
	case OPT_RETAIN:
		o->retain_ns = cpa_opt_duration_ns("--retain", arg);
		if (o->retain_ns < 86400 * CPA_NSEC_PER_SEC)
			cpa_die_usage("invalid --retain '%s': at least 1d "
				      "(whole days are dropped)", arg);
		break;
	case OPT_BATCH_ROWS:
		o->batch_rows = cpa_opt_uint("--batch-rows", arg, 1, 1000000);
		break;
	case OPT_BATCH_WAIT:
		o->batch_wait_ns = cpa_opt_duration_ns("--batch-wait", arg);
		break;
	case OPT_BACKOFF_MAX:
		o->backoff_max_ns = cpa_opt_duration_ns("--backoff-max", arg);
		if (o->backoff_max_ns < CPA_NSEC_PER_SEC)
			cpa_die_usage("invalid --backoff-max '%s': at least 1s",
				      arg);
		break;
	case OPT_TIMEOUT:
		o->timeout_ns = cpa_opt_duration_ns("--timeout", arg);
		if (o->timeout_ns < 100000000ull ||
		    o->timeout_ns > 3600 * CPA_NSEC_PER_SEC)
			cpa_die_usage("invalid --timeout '%s': from 100ms to "
				      "1h", arg);
		break;
	case 'v':
		cpa_set_verbose(true);
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->selfstats;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s' (the URL goes "
			   "with --clickhouse)", arg);
		break;
	case ARGP_KEY_END:
		if (!o->url && !o->print_schema)
			argp_error(state, "--clickhouse URL is required");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

void push_opts_parse(struct push_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->database = "cpa";
	o->batch_rows = 100000;
	o->batch_wait_ns = 10 * CPA_NSEC_PER_SEC;
	o->backoff_max_ns = 60 * CPA_NSEC_PER_SEC;
	o->timeout_ns = 30 * CPA_NSEC_PER_SEC;
	static const struct argp_child children[] = {
		{&cpa_selfstats_argp, 0, NULL, 0},
		{0},
	};
	static const struct argp argp = {options, parse_opt, NULL, doc,
					 children, NULL, NULL};
	argp_parse(&argp, argc, argv, 0, NULL, o);
	if (!o->dir && !o->cursor && !o->init && !o->retain_ns &&
	    !o->print_schema)
		cpa_die_usage("--cursor FILE is required when the stream comes "
			      "on stdin (with --dir it defaults to "
			      "DIR/push.cursor)");
	if (o->region && !o->job)
		cpa_die_usage("--region goes with --job");
	if ((o->from || o->once) && !o->dir)
		cpa_die_usage("--from and --once go with --dir (on stdin, give "
			      "them to cpa-query)");
}
