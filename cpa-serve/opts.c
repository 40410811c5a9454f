/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <argp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "options.h"
#include "opts.h"

enum {
	OPT_LISTEN = 0x100, OPT_TOKEN_FILE, OPT_STATE_DIR, OPT_MAX_JOBS,
	OPT_CLICKHOUSE,
	OPT_MAX_JOBS_PER_TARGET, OPT_MAX_BODY, OPT_TLS_CERT, OPT_TLS_KEY,
	OPT_USER, OPT_THREADS, OPT_CHILD_MEMORY, OPT_CHILD_CPU, OPT_CHILD_TIME,
	OPT_HEADER_TIMEOUT, OPT_MAX_CONNECTIONS, OPT_MAX_PER_ADDRESS,
	OPT_RETAIN, OPT_MAX_STATE_SIZE, OPT_MAX_JOB_SIZE, OPT_USERS,
	OPT_WINDOW, OPT_REGION, OPT_DASHBOARD, OPT_MAX_RAW_PAGE, OPT_GRACE,
	OPT_READ_TIMEOUT, OPT_FLEET, OPT_NODES, OPT_NODE_PORT, OPT_NODE_TIMEOUT,
	OPT_NODE_POLL, OPT_PENDING_TIMEOUT, OPT_NODE_UNAVAILABLE,
	OPT_STOP_TIMEOUT, OPT_HOSTNAME, OPT_PUBLISH, OPT_CLUSTER,
	OPT_MAX_QUERY_WINDOWS,
};

static const char doc[] =
	"Serve profiling jobs and the history of cpa monitor's store over "
	"HTTP: HUATUO's /v1/profiling API. Each job runs cpa-capture | "
	"cpa-unwind as child processes; cpa-serve itself keeps no "
	"capability.\v"
	"Every request but /healthz, /readyz, /version, /metrics and "
	"/openapi.json needs 'Authorization: Bearer TOKEN': the content of "
	"--token-file (the administrator), or a user's token from --users. "
	"The endpoints are in docs/api.md; see cpa-serve(1).";

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Serving:", 1 },
	{ "listen", OPT_LISTEN, "ADDR:PORT", 0, "Address to serve on "
	  "(default 127.0.0.1:12740; [ADDR]:PORT for IPv6; PORT 0: any)", 1 },
	{ "token-file", OPT_TOKEN_FILE, "FILE", 0, "The bearer token, in a "
	  "file only its owner may read (default /etc/cpa/serve.token)", 1 },
	{ "users", OPT_USERS, "FILE", 0, "Users, their tokens and "
	  "permissions, in HUATUO's [[Auth.Users]] form, and the node API's "
	  "token ([HTTPServer.Auth]); a file only its owner may read", 1 },
	{ "tls-cert", OPT_TLS_CERT, "FILE", 0, "Serve HTTPS with this PEM "
	  "certificate (with --tls-key)", 1 },
	{ "tls-key", OPT_TLS_KEY, "FILE", 0, "The certificate's PEM private "
	  "key", 1 },
	{ "threads", OPT_THREADS, "N", 0, "Threads answering requests "
	  "(default 4)", 1 },
	{ "max-body", OPT_MAX_BODY, "BYTES", 0, "Largest request body "
	  "(default 64K)", 1 },
	{ "header-timeout", OPT_HEADER_TIMEOUT, "SECONDS", 0, "Time from a "
	  "connection's accept to its request header's end, whatever bytes "
	  "come meanwhile (default 10)", 1 },
	{ "read-timeout", OPT_READ_TIMEOUT, "SECONDS", 0, "Time from a "
	  "request's header to its body's end, whatever its pace (default "
	  "30)", 1 },
	{ "max-connections", OPT_MAX_CONNECTIONS, "N", 0, "Connections at "
	  "once (default 1024)", 1 },
	{ "max-per-address", OPT_MAX_PER_ADDRESS, "N", 0, "Connections at "
	  "once from one address, an IPv6 /64 being one (default 64)", 1 },
	{ "child-memory", OPT_CHILD_MEMORY, "SIZE", 0, "Address space of "
	  "each cpa-query or cpa-render a request starts (default 1G)", 1 },
	{ "child-cpu", OPT_CHILD_CPU, "SECONDS", 0, "CPU time of each "
	  "(default 60)", 1 },
	{ "child-time", OPT_CHILD_TIME, "SECONDS", 0, "Wall time of each "
	  "(default 60)", 1 },
	{ NULL, 0, NULL, 0, "Jobs and history:", 2 },
	{ "state-dir", OPT_STATE_DIR, "DIR", 0, "Job records and results "
	  "(default /var/lib/cpa-serve)", 2 },
	{ "dir", 'd', "DIR", 0, "cpa monitor's store, for /v1/history "
	  "(default /var/lib/cpa)", 2 },
	{ "clickhouse", OPT_CLICKHOUSE, "URL", 0, "/v1/history from the "
	  "fleet's history in ClickHouse instead of the store (cpa-query "
	  "--clickhouse; host=GLOB selects hosts)", 2 },
	{ "max-jobs", OPT_MAX_JOBS, "N", 0, "Active jobs on the host at "
	  "most (default 4); more get 429", 2 },
	{ "max-jobs-per-target", OPT_MAX_JOBS_PER_TARGET, "N", 0, "Active "
	  "jobs on one target (the host, a pid, a container) at most "
	  "(default 1)", 2 },
	{ "aggregation-interval", OPT_WINDOW, "SECONDS", 0, "A job's raw "
	  "windows are this long (default 10; Python jobs: their duration)",
	  2 },
	{ "region", OPT_REGION, "NAME", 0, "The region its windows say "
	  "(default empty)", 2 },
	{ "dashboard-url", OPT_DASHBOARD, "URL", 0, "The Grafana base URL "
	  "of a job's result_url (default: no result_url)", 2 },
	{ "max-raw-page", OPT_MAX_RAW_PAGE, "SIZE", 0, "Bytes of profiles "
	  "in one raw page; past it 413 (default 64M)", 2 },
	{ "completion-grace", OPT_GRACE, "SECONDS", 0, "A job still running "
	  "this long past its duration is stopped, and fails as "
	  "execution_timed_out (default 60)", 2 },
	{ "retain-jobs", OPT_RETAIN, "DURATION", 0, "Ended jobs and their "
	  "results are deleted this long after their end (default 30d)", 2 },
	{ "max-state-size", OPT_MAX_STATE_SIZE, "SIZE", 0, "Bytes of all "
	  "jobs' records and results; past it the oldest ended jobs go "
	  "first (default 2G)", 2 },
	{ "max-job-size", OPT_MAX_JOB_SIZE, "SIZE", 0, "Bytes of one job's "
	  "stream; a job that reaches it fails (default 256M)", 2 },
	{ "user", OPT_USER, "NAME", 0, "Started as root, serve as this user "
	  "(default: cpa when it exists, else uid 0 with no capability)", 2 },
	{ "hostname", OPT_HOSTNAME, "NAME", 0, "This node's host name, which "
	  "jobs must name and its windows carry (default: the hostname)", 2 },
	{ "publish", OPT_PUBLISH, "URL", 0, "Each job's windows also go to the "
	  "fleet's ClickHouse at URL (cpa-push --job), with the job's "
	  "request_id, then its publication marker", 2 },
	{ "cluster", OPT_CLUSTER, "NAME", 0, "With --publish, the tables are "
	  "Distributed over this ClickHouse cluster (cpa-push --cluster)", 2 },
	{ NULL, 0, NULL, 0, "The apiserver (--fleet):", 3 },
	{ "fleet", OPT_FLEET, NULL, 0, "Be HUATUO's apiserver: jobs run on "
	  "the nodes they name, through each node's /v1/operations; raw "
	  "windows and the Pyroscope query routes come from --clickhouse "
	  "(required)", 3 },
	{ "nodes", OPT_NODES, "FILE", 0, "The nodes, 'HOSTNAME ADDR:PORT' a "
	  "line; a host name not in it is not a node (default: a job's "
	  "hostname is its node's address, on --node-port)", 3 },
	{ "node-port", OPT_NODE_PORT, "PORT", 0, "The nodes' port when found by "
	  "host name (default 19704)", 3 },
	{ "node-timeout", OPT_NODE_TIMEOUT, "DURATION", 0, "One call to a node "
	  "at most (default 10s)", 3 },
	{ "node-poll", OPT_NODE_POLL, "DURATION", 0, "Between two looks at a "
	  "job's Operation (default 5s)", 3 },
	{ "pending-timeout", OPT_PENDING_TIMEOUT, "SECONDS", 0, "A job not "
	  "running this long after its start is stopped, and fails as "
	  "start_timeout (default 30)", 3 },
	{ "node-unavailable", OPT_NODE_UNAVAILABLE, "SECONDS", 0, "A node "
	  "failing to answer this long fails its jobs as node_unavailable "
	  "(default 30)", 3 },
	{ "stop-timeout", OPT_STOP_TIMEOUT, "SECONDS", 0, "A stopping job not "
	  "ended this long after is failed as stop_timeout (default 60)", 3 },
	{ "max-query-windows", OPT_MAX_QUERY_WINDOWS, "N", 0, "A flame graph "
	  "of the Pyroscope routes merges at most N windows (a host's 10 s); "
	  "more is 400 (default 100000)", 3 },
	{ "verbose", 'v', NULL, 0, "Say more on stderr", 4 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct serve_opts *o = state->input;

	switch (key) {
	case OPT_LISTEN:
		o->listen = arg;
		break;
	case OPT_TOKEN_FILE:
		o->token_file = arg;
		o->token_file_given = true;
		break;
	case OPT_USERS:
		o->users_file = arg;
		break;
	case OPT_WINDOW:
		o->limits.window_s = cpa_opt_uint("--aggregation-interval", arg,
						  1, 86400);
		break;
	case OPT_GRACE:
		o->limits.grace_s = (unsigned)cpa_opt_uint("--completion-grace",
							   arg, 1, 3600);
		break;
	case OPT_REGION:
		o->limits.region = arg;
		break;
	case OPT_DASHBOARD:
		o->limits.dashboard = arg;
		break;
	case OPT_MAX_RAW_PAGE:
		o->limits.max_raw_page = cpa_opt_size("--max-raw-page", arg);
		break;
	case OPT_TLS_CERT:
		o->tls_cert = arg;
		break;
	case OPT_TLS_KEY:
		o->tls_key = arg;
		break;
	case OPT_THREADS:
		o->threads = (unsigned)cpa_opt_uint("--threads", arg, 1, 64);
		break;
	case OPT_MAX_BODY:
		o->max_body = cpa_opt_size("--max-body", arg);
		if (o->max_body < 256 || o->max_body > (16u << 20))
			cpa_die_usage("invalid --max-body '%s': expected 256 "
				      "bytes to 16M", arg);
		break;
	case OPT_STATE_DIR:
		o->state_dir = arg;
		break;
	case 'd':
		o->store_dir = arg;
		break;
	case OPT_CLICKHOUSE:
		o->clickhouse = arg;
		break;
	case OPT_FLEET:
		o->fleet = true;
		break;
	case OPT_NODES:
		o->nodes_file = arg;
		break;
	case OPT_NODE_PORT:
		o->node_port = (unsigned)cpa_opt_uint("--node-port", arg, 1,
						      65535);
		break;
	case OPT_NODE_TIMEOUT:
		o->node_timeout_ms = (unsigned)(cpa_opt_duration_ns(
			"--node-timeout", arg) / 1000000);
		if (o->node_timeout_ms < 100 || o->node_timeout_ms > 600000)
			cpa_die_usage("invalid --node-timeout '%s': expected "
				      "100ms to 10m", arg);
		break;
	case OPT_NODE_POLL:
		o->node_poll_ms = (unsigned)(cpa_opt_duration_ns("--node-poll",
							       arg) / 1000000);
		if (o->node_poll_ms < 10 || o->node_poll_ms > 600000)
			cpa_die_usage("invalid --node-poll '%s': expected 10ms "
				      "to 10m", arg);
		break;
	case OPT_PENDING_TIMEOUT:
		o->pending_s = (unsigned)cpa_opt_uint("--pending-timeout", arg,
						      1, 3600);
		break;
	case OPT_NODE_UNAVAILABLE:
		o->unavailable_s = (unsigned)cpa_opt_uint("--node-unavailable",
							  arg, 1, 3600);
		break;
	case OPT_STOP_TIMEOUT:
		o->limits.stop_timeout_s = (unsigned)cpa_opt_uint(
			"--stop-timeout", arg, 1, 3600);
		break;
	case OPT_MAX_QUERY_WINDOWS:
		o->max_query_windows = (unsigned)cpa_opt_uint(
			"--max-query-windows", arg, 1, 100000000);
		break;
	case OPT_HOSTNAME:
		if (!arg[0] || strlen(arg) > SPEC_HOSTNAME_MAX)
			cpa_die_usage("invalid --hostname '%s'", arg);
		o->limits.hostname = arg;
		break;
	case OPT_PUBLISH:
		o->limits.publish = arg;
		break;
	case OPT_CLUSTER:
		o->limits.cluster = arg;
		break;
	case OPT_MAX_JOBS:
		o->max_jobs_given = true;
		o->limits.max_jobs = (unsigned)cpa_opt_uint("--max-jobs", arg,
							    1, 1000);
		break;
	case OPT_MAX_JOBS_PER_TARGET:
		o->max_per_target_given = true;
		o->limits.max_jobs_per_target = (unsigned)cpa_opt_uint(
			"--max-jobs-per-target", arg, 1, 1000);
		break;
	case OPT_USER:
		o->user = arg;
		break;
	case OPT_HEADER_TIMEOUT:
		o->header_timeout_s = (unsigned)cpa_opt_uint("--header-timeout",
							     arg, 1, 600);
		break;
	case OPT_READ_TIMEOUT:
		o->read_timeout_s = (unsigned)cpa_opt_uint("--read-timeout", arg,
							   1, 600);
		break;
	case OPT_MAX_CONNECTIONS:
		o->max_connections = (unsigned)cpa_opt_uint(
			"--max-connections", arg, 16, 100000);
		break;
	case OPT_MAX_PER_ADDRESS:
		o->max_per_addr = (unsigned)cpa_opt_uint("--max-per-address",
							 arg, 1, 100000);
		break;
	case OPT_CHILD_MEMORY:
		o->limits.child.mem = cpa_opt_size("--child-memory", arg);
		if (o->limits.child.mem < (16u << 20))
			cpa_die_usage("invalid --child-memory '%s': expected "
				      "16M or more", arg);
		break;
	case OPT_CHILD_CPU:
		o->limits.child.cpu_s = cpa_opt_uint("--child-cpu", arg, 1,
						     86400);
		break;
	case OPT_CHILD_TIME:
		o->limits.child.wall_ms = 1000 * cpa_opt_uint("--child-time",
							      arg, 1, 86400);
		break;
	case OPT_RETAIN:
		o->limits.retain_s = cpa_opt_duration_ns("--retain-jobs", arg) /
				     1000000000u;
		if (!o->limits.retain_s)
			cpa_die_usage("invalid --retain-jobs '%s': expected 1s or "
				      "more", arg);
		break;
	case OPT_MAX_STATE_SIZE:
		o->limits.max_state = cpa_opt_size("--max-state-size", arg);
		break;
	case OPT_MAX_JOB_SIZE:
		o->limits.max_job = cpa_opt_size("--max-job-size", arg);
		if (o->limits.max_job < 65536)
			cpa_die_usage("invalid --max-job-size '%s': expected "
				      "64K or more", arg);
		break;
	case 'v':
		cpa_set_verbose(true);
		break;
	case ARGP_KEY_ARG:
		cpa_die_usage("unexpected argument '%s'", arg);
	case ARGP_KEY_END:
		if (!o->tls_cert != !o->tls_key)
			cpa_die_usage("--tls-cert and --tls-key go together");
		if (o->fleet && !o->clickhouse)
			cpa_die_usage("--fleet needs --clickhouse URL: the "
				      "nodes publish their windows there");
		if (!o->fleet && (o->nodes_file || o->node_port))
			cpa_die_usage("--nodes and --node-port go with --fleet");
		if (o->fleet && o->limits.publish)
			cpa_die_usage("--publish is a node's; the apiserver "
				      "(--fleet) reads --clickhouse");
		if (o->limits.cluster && !o->limits.publish)
			cpa_die_usage("--cluster goes with --publish");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

void serve_parse_options(int argc, char **argv, struct serve_opts *o)
{
	static const struct argp argp = { options, parse_opt, NULL, doc,
					  NULL, NULL, NULL };

	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:12740";
	o->token_file = "/etc/cpa/serve.token";
	o->state_dir = "/var/lib/cpa-serve";
	o->store_dir = "/var/lib/cpa";
	o->limits.max_jobs = 4;
	o->limits.max_jobs_per_target = 1;
	o->max_body = 65536;
	o->threads = 4;
	o->header_timeout_s = 10;
	o->read_timeout_s = 30;
	o->max_connections = 1024;
	o->max_per_addr = 64;
	o->limits.child.mem = 1u << 30;
	o->limits.child.cpu_s = 60;
	o->limits.child.wall_ms = 60000;
	o->limits.retain_s = 30 * 86400;
	o->limits.max_state = 2ull << 30;
	o->limits.max_job = 256u << 20;
	o->limits.window_s = 10;
	o->limits.grace_s = 60;
	o->limits.max_raw_page = 64u << 20;
	o->limits.stop_timeout_s = 60;
	o->node_timeout_ms = 10000;
	o->node_poll_ms = 5000;
	o->pending_s = 30;
	o->unavailable_s = 30;
	o->max_query_windows = 100000;
	argp_parse(&argp, argc, argv, 0, NULL, o);
	o->limits.fleet = o->fleet;
	if (o->fleet) {
		/* HUATUO's apiserver: 500 active jobs, 3 on one host */
		if (!o->max_jobs_given)
			o->limits.max_jobs = 500;
		if (!o->max_per_target_given)
			o->limits.max_jobs_per_target = 3;
	}
	if (!o->user && geteuid() == 0 && getpwnam("cpa"))
		o->user = "cpa";
}
