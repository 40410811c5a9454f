/* SPDX-License-Identifier: MIT */
/*
 * cpa-supervise: runs cpa's stages as the stage table says (stages.c)
 * and keeps them running. `cpa monitor` runs capture | unwind | store
 * through it, one-shot profiles and `cpa show` their pipelines with
 * --once, and cpa-serve each job's capture | unwind.
 *
 *   cpa-supervise [OPTION...] --stage=NAME [ARG...] [--stage=NAME [ARG...]]...
 *   cpa-supervise --stages[=markdown]
 *   cpa-supervise --status
 *   cpa-supervise --exec-as=NAME PROGRAM [ARG...]
 */
#include <config.h>

#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "log.h"
#include "options.h"
#include "child.h"
#include "stages.h"
#include "status.h"
#include "supervise.h"
#include "timeparse.h"

enum {
	OPT_ONCE = 0x100, OPT_DURATION, OPT_STATS_INTERVAL, OPT_WATCHDOG,
	OPT_RUN_DIR, OPT_USER, OPT_OUTPUT, OPT_REPORT_FD, OPT_NO_CHECK,
	OPT_STAGES, OPT_STATUS, OPT_GRACE, OPT_METRICS_FILE,
};

struct cli {
	struct run_opts run;
	const char *stages;	/* --stages[=FORMAT] */
	bool metrics_file_given;
	bool status;
};

static const struct argp_option options[] = {
	{ 0, 0, 0, 0, "The run:", 1 },
	{ "once", OPT_ONCE, 0, 0,
	  "Run the chains once: no restarts, no watchdog, no run directory; "
	  "exit 0 when every stage ended 0, else 1", 1 },
	{ "duration", OPT_DURATION, "DURATION", 0,
	  "End the whole run after DURATION (seconds, or 10m, 1h30m), "
	  "restarts included", 1 },
	{ "grace", OPT_GRACE, "DURATION", 0,
	  "Stages still running DURATION past --duration are stopped, and "
	  "killed 10 s later (default 60s: what they captured drains)", 1 },
	{ "output", OPT_OUTPUT, "FILE", 0,
	  "The last stage writes FILE, under a temporary name until every "
	  "stage ended 0 (never a half file)", 1 },
	{ "no-check", OPT_NO_CHECK, 0, 0,
	  "Do not run each stage with --check before starting any", 1 },
	{ 0, 0, 0, 0, "Resident runs:", 2 },
	{ "run-dir", OPT_RUN_DIR, "DIR", 0,
	  "Statistics, pids and the stages file (default: $CPA_RUN_DIR, "
	  "else /run/cpa)", 2 },
	{ "stats-interval", OPT_STATS_INTERVAL, "DURATION", 0,
	  "Each stage reports every DURATION (default: "
	  "$CPA_STATS_INTERVAL, else 5s)", 2 },
	{ "watchdog", OPT_WATCHDOG, "N", 0,
	  "A stage silent, or moving no samples while its input waits, for "
	  "N intervals is hung and its chain restarted (default: "
	  "$CPA_WATCHDOG, else 3; 0: off)", 2 },
	{ "user", OPT_USER, "USER", 0,
	  "The service user, for stages the table runs as it (default: "
	  "$CPA_STORE_USER, else cpa; root without capabilities when it "
	  "does not exist)", 2 },
	{ "metrics-file", OPT_METRICS_FILE, "FILE", 0,
	  "Keep the run's metrics in FILE, in Prometheus's text format, "
	  "rewritten every interval, for node_exporter's textfile "
	  "collector (default: DIR/metrics.prom of --run-dir; '' none)", 2 },
	{ "report-fd", OPT_REPORT_FD, "FD", 0,
	  "At the end, write each stage's name and wait status to FD", 2 },
	{ 0, 0, 0, 0, "Other modes:", 3 },
	{ "stages", OPT_STAGES, "FORMAT", OPTION_ARG_OPTIONAL,
	  "Print the stage table (FORMAT markdown: docs/security.md's)", 3 },
	{ "status", OPT_STATUS, 0, 0,
	  "Print the running monitor's stages, rates and cost (cpa status)",
	  3 },
	{ "exec-as", 0x1ff, "STAGE", OPTION_DOC | OPTION_NO_USAGE,
	  "--exec-as=STAGE PROGRAM [ARG...]: run PROGRAM with STAGE's "
	  "privileges, in place", 3 },
	{ 0 }
};

static const char doc[] =
	"Runs cpa's stages with the privileges the stage table gives them, "
	"and keeps them running.\v"
	"Each --stage=NAME starts a stage (cpa-supervise --stages lists "
	"them); the arguments after it, up to the next --stage, are its "
	"own. A stage reads the output of the one before it, or starts a "
	"new chain; a chain stops and restarts as one. Ended by SIGINT, "
	"SIGTERM or SIGHUP: each chain's first stage gets SIGINT and the "
	"others end with their input. Exit status: 0, 1 for a failure, 2 "
	"when an option or a stage's configuration is wrong.";

static uint64_t duration_or_die(const char *opt, const char *arg,
				const char *expected)
{
	uint64_t ns;

	if (cpa_parse_duration_ns(arg, &ns) < 0 || !ns)
		cpa_die_usage("invalid %s '%s': expected %s", opt, arg,
			      expected);
	return ns;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	char *end;
	long v;

	switch (key) {
	case OPT_ONCE:
		c->run.once = true;
		break;
	case OPT_DURATION:
		c->run.duration_ns = duration_or_die(
			"--duration", arg,
			"seconds or a duration such as 10m");
		c->run.duration = arg;
		break;
	case OPT_GRACE:
		c->run.grace_ns = cpa_opt_duration_ns("--grace", arg);
		break;
	case OPT_STATS_INTERVAL:
		c->run.stats_ns = duration_or_die(
			"--stats-interval", arg, "a duration such as 5s");
		c->run.stats_interval = arg;
		break;
	case OPT_WATCHDOG:
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || end == arg || *end || v < 0 || v > 1000)
			cpa_die_usage("invalid --watchdog '%s': expected a "
				      "number of intervals (0: off)", arg);
		c->run.watchdog = (unsigned)v;
		break;
	case OPT_RUN_DIR:
		c->run.run_dir = arg;
		break;
	case OPT_USER:
		c->run.user = arg;
		break;
	case OPT_OUTPUT:
		if (!*arg)
			cpa_die_usage("invalid --output '': expected a file");
		c->run.output = arg;
		break;
	case OPT_REPORT_FD:
		c->run.report_fd = (int)cpa_opt_uint("--report-fd", arg, 3,
						     1 << 20);
		/* its own, not its stages' */
		if (fcntl(c->run.report_fd, F_SETFD, FD_CLOEXEC) < 0)
			cpa_die_usage("invalid --report-fd '%s': %s", arg,
				      strerror(errno));
		break;
	case OPT_METRICS_FILE:
		c->run.metrics_file = arg;
		c->metrics_file_given = true;
		break;
	case OPT_NO_CHECK:
		c->run.check = false;
		break;
	case OPT_STAGES:
		if (arg && strcmp(arg, "markdown"))
			cpa_die_usage("invalid --stages '%s': expected "
				      "markdown, or no value", arg);
		c->stages = arg ? arg : "text";
		break;
	case OPT_STATUS:
		c->status = true;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s' (each stage "
			   "begins with --stage=NAME)", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

/* --stage=NAME,mem=SIZE,data=SIZE,cpu=SECONDS,fsize=SIZE: the stage's
 * rlimits. */
static void parse_limits(const char *name, char *list, struct proc *p)
{
	char *save = NULL;

	for (char *kv = strtok_r(list, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '='), opt[96];
		uint64_t *slot = NULL, v;

		if (eq)
			*eq++ = 0;
		if (!strcmp(kv, "mem"))
			slot = &p->limits.mem;
		else if (!strcmp(kv, "data"))
			slot = &p->limits.data;
		else if (!strcmp(kv, "cpu"))
			slot = &p->limits.cpu_s;
		else if (!strcmp(kv, "fsize"))
			slot = &p->limits.fsize;
		if (!slot || !eq)
			cpa_die_usage("invalid --stage=%s limit '%s': expected "
				      "mem=, data=, fsize=SIZE or cpu=SECONDS",
				      name, kv);
		snprintf(opt, sizeof(opt), "--stage=%s %s", name, kv);
		v = slot == &p->limits.cpu_s
			    ? cpa_opt_duration_ns(opt, eq) / 1000000000
			    : cpa_opt_size(opt, eq);
		*slot = v ? v : 1;
		p->has_limits = true;
	}
}

/* The stages after the options: --stage=NAME ARG... each, in chains. */
static size_t build_chains(int argc, char **argv, int first,
			   struct chain **out)
{
	struct chain *chains = NULL;
	size_t n = 0, cap = 0, pcap = 0;

	for (int i = first; i < argc;) {
		char *name = argv[i] + strlen("--stage="), *lims;
		const struct stage *st;
		struct chain *ch;
		struct proc *p;
		int j;

		lims = strchr(name, ',');
		if (lims)
			*lims++ = 0;
		st = stage_find(name);
		if (!st)
			cpa_die_usage("unknown stage '%s' (cpa-supervise "
				      "--stages lists them)", name);
		if (st->input == INPUT_NONE || !n) {
			if (st->input == INPUT_PREVIOUS)
				cpa_die_usage("--stage=%s reads the stage "
					      "before it, and none is given",
					      name);
			CPA_GROW(chains, cap, n + 1);
			memset(&chains[n], 0, sizeof(chains[n]));
			n++;
			pcap = 0;
		}
		ch = &chains[n - 1];
		CPA_GROW(ch->procs, pcap, ch->n + 1);
		p = &ch->procs[ch->n++];
		memset(p, 0, sizeof(*p));
		p->st = st;
		if (lims)
			parse_limits(name, lims, p);
		cpa_find_tool(st->tool, p->path, sizeof(p->path));
		for (j = i + 1; j < argc && strncmp(argv[j], "--stage=", 8); j++)
			;
		p->args = argv + i + 1;
		p->n_args = (size_t)(j - i - 1);
		i = j;
	}
	*out = chains;
	return n;
}

/* --exec-as=STAGE PROGRAM [ARG...] */
static int exec_as(const char *name, int argc, char **argv)
{
	const struct stage *st = stage_find(name);
	struct cpa_spawn_user user;
	int caps[STAGE_MAX_CAPS + 1];
	struct cpa_spawn s;
	const char *what = "exec";

	if (!st)
		cpa_die_usage("unknown stage '%s' (cpa-supervise --stages "
			      "lists them)", name);
	if (argc < 1)
		cpa_die_usage("--exec-as=%s needs a program to run", name);
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 3; i++)
		s.fd[i] = i;
	s.pgid = -1;
	stage_cap_list(st, caps);
	s.caps = caps;
	s.no_new_privs = true;
	if (st->user == USER_SERVICE && geteuid() == 0 &&
	    cpa_spawn_user(env_or("CPA_STORE_USER", "cpa"), &user) == 0)
		s.user = &user;
	s.path = argv[0];
	s.argv = argv;
	cpa_spawn_exec(&s, &what);
	cpa_err("%s: %s: %s", argv[0], what, strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	static const struct argp argp = {
		options, parse, "--stage=NAME [ARG...]...", doc, NULL, NULL,
		NULL
	};
	struct cli c;
	struct chain *chains;
	size_t n;
	int first = argc;

	cpa_options_init(argv[0]);
	if (argc > 1 && !strncmp(argv[1], "--exec-as=", 10))
		return exec_as(argv[1] + 10, argc - 2, argv + 2);
	memset(&c, 0, sizeof(c));
	c.run.check = true;
	c.run.report_fd = -1;
	c.run.watchdog = 3;
	c.run.grace_ns = 60 * CPA_NSEC_PER_SEC;
	c.run.stats_interval = env_or("CPA_STATS_INTERVAL", "5s");
	c.run.stats_ns = duration_or_die("CPA_STATS_INTERVAL",
					 c.run.stats_interval,
					 "a duration such as 5s");
	if (getenv("CPA_WATCHDOG")) {
		char *end;
		long v = strtol(getenv("CPA_WATCHDOG"), &end, 10);

		if (*end || v < 0 || v > 1000)
			cpa_die_usage("invalid CPA_WATCHDOG '%s': expected a "
				      "number of intervals (0: off)",
				      getenv("CPA_WATCHDOG"));
		c.run.watchdog = (unsigned)v;
	}
	c.run.run_dir = env_or("CPA_RUN_DIR", "/run/cpa");
	c.run.user = env_or("CPA_STORE_USER", "cpa");
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--stage=", 8)) {
			first = i;
			break;
		}
	argp_parse(&argp, first, argv, 0, NULL, &c);
	if (c.stages) {
		if (!strcmp(c.stages, "markdown"))
			stages_print_markdown(stdout);
		else
			stages_print(stdout);
		return fflush(stdout) ? CPA_EXIT_FAILURE : 0;
	}
	if (c.status)
		return status_print(c.run.run_dir);
	if (!c.metrics_file_given) {
		static char path[4200];

		snprintf(path, sizeof(path), "%s/metrics.prom", c.run.run_dir);
		c.run.metrics_file = path;
	} else if (!c.run.metrics_file[0]) {
		c.run.metrics_file = NULL;
	}
	if (first == argc)
		cpa_die_usage("no stages to run (--stage=NAME; cpa-supervise "
			      "--stages lists them)");
	n = build_chains(argc, argv, first, &chains);
	/* what it holds beyond its stages' needs, it gives up first */
	int own[64];

	supervisor_cap_list(own);
	if (cpa_caps_keep(own) < 0)
		cpa_die("capabilities: %s", strerror(errno));
	if (c.run.once)
		c.run.watchdog = 0;
	return supervise(chains, n, &c.run);
}
