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
	OPT_MAX_JOBS_PER_TARGET, OPT_MAX_BODY, OPT_TLS_CERT, OPT_TLS_KEY,
	OPT_USER, OPT_THREADS,
};

static const char doc[] =
	"Serve profiling jobs and the history of cpa monitor's store over "
	"HTTP: HUATUO's /v1/profiling API. Each job runs cpa-capture | "
	"cpa-unwind as child processes; cpa-serve itself keeps no "
	"capability.\v"
	"Every request needs 'Authorization: Bearer TOKEN', TOKEN being the "
	"content of --token-file. The endpoints are in docs/api.md; see "
	"cpa-serve(1).";

static const struct argp_option options[] = {
	{ NULL, 0, NULL, 0, "Serving:", 1 },
	{ "listen", OPT_LISTEN, "ADDR:PORT", 0, "Address to serve on "
	  "(default 127.0.0.1:12740; [ADDR]:PORT for IPv6; PORT 0: any)", 1 },
	{ "token-file", OPT_TOKEN_FILE, "FILE", 0, "The bearer token, in a "
	  "file only its owner may read (default /etc/cpa/serve.token)", 1 },
	{ "tls-cert", OPT_TLS_CERT, "FILE", 0, "Serve HTTPS with this PEM "
	  "certificate (with --tls-key)", 1 },
	{ "tls-key", OPT_TLS_KEY, "FILE", 0, "The certificate's PEM private "
	  "key", 1 },
	{ "threads", OPT_THREADS, "N", 0, "Threads answering requests "
	  "(default 4)", 1 },
	{ "max-body", OPT_MAX_BODY, "BYTES", 0, "Largest request body "
	  "(default 64K)", 1 },
	{ NULL, 0, NULL, 0, "Jobs and history:", 2 },
	{ "state-dir", OPT_STATE_DIR, "DIR", 0, "Job records and results "
	  "(default /var/lib/cpa-serve)", 2 },
	{ "dir", 'd', "DIR", 0, "cpa monitor's store, for /v1/history "
	  "(default /var/lib/cpa)", 2 },
	{ "max-jobs", OPT_MAX_JOBS, "N", 0, "Active jobs on the host at "
	  "most (default 4); more get 429", 2 },
	{ "max-jobs-per-target", OPT_MAX_JOBS_PER_TARGET, "N", 0, "Active "
	  "jobs on one target (the host, a pid, a container) at most "
	  "(default 1)", 2 },
	{ "user", OPT_USER, "NAME", 0, "Started as root, serve as this user "
	  "(default: cpa when it exists, else uid 0 with no capability)", 2 },
	{ "verbose", 'v', NULL, 0, "Say more on stderr", 3 },
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
	case OPT_MAX_JOBS:
		o->limits.max_jobs = (unsigned)cpa_opt_uint("--max-jobs", arg,
							    1, 1000);
		break;
	case OPT_MAX_JOBS_PER_TARGET:
		o->limits.max_jobs_per_target = (unsigned)cpa_opt_uint(
			"--max-jobs-per-target", arg, 1, 1000);
		break;
	case OPT_USER:
		o->user = arg;
		break;
	case 'v':
		cpa_set_verbose(true);
		break;
	case ARGP_KEY_ARG:
		cpa_die_usage("unexpected argument '%s'", arg);
	case ARGP_KEY_END:
		if (!o->tls_cert != !o->tls_key)
			cpa_die_usage("--tls-cert and --tls-key go together");
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
	argp_parse(&argp, argc, argv, 0, NULL, o);
	if (!o->user && geteuid() == 0 && getpwnam("cpa"))
		o->user = "cpa";
}
