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
	OPT_FROM = 0x100, OPT_TO, OPT_LAST, OPT_LIST, OPT_PID, OPT_TID,
	OPT_COMM, OPT_CGROUP, OPT_CONTAINER, OPT_POD, OPT_CPU, OPT_ENV, OPT_KIND,
	OPT_GREP, OPT_EXCLUDE, OPT_LABELS, OPT_FORMAT, OPT_SPLIT,
	OPT_SPLIT_EVERY, OPT_TOP, OPT_DIFF_FROM, OPT_DIFF_TO, OPT_GROWTH, OPT_STACKS,
	OPT_PRUNE, OPT_CALLEE, OPT_FOLLOW, OPT_CURSOR, OPT_POLL,
	OPT_CLICKHOUSE, OPT_DATABASE, OPT_HOST, OPT_WINDOWS, OPT_ONCE, OPT_JOB,
	OPT_MAX_WINDOWS,
};

static const char doc[] =
	"Select a time range of the history cpa-store keeps in DIR and write "
	"it as folded stacks (default), the cpa stream, pprof, per-window "
	"files, a top list or a differential profile.\v"
	"TIME is HH:MM[:SS] (today, local time), YYYY-MM-DD[ HH:MM[:SS]], "
	"ISO 8601 (2026-11-30T10:15:00Z), @EPOCH seconds, now, or relative "
	"(-10m). A window is selected when it overlaps [--from, --to). "
	"mem-usage, heap-inuse and java-live answer what was still held at "
	"--to, allocated however long before; --growth, what grew in the "
	"range. "
	"See cpa-query(1).";

static const struct argp_option options[] = {
	{NULL, 0, NULL, 0, "Store and range:", 0},
	{"dir", 'd', "DIR", 0, "Store directory (repeat for several)", 0},
	{"clickhouse", OPT_CLICKHOUSE, "URL", 0, "The fleet's history in "
	 "ClickHouse instead of a store (http://HOST[:PORT], as cpa-push "
	 "writes it): aggregated there, written the same", 0},
	{"database", OPT_DATABASE, "NAME", 0, "With --clickhouse, the "
	 "database of the tables (default cpa)", 0},
	{"from", OPT_FROM, "TIME", 0, "Start of the range (default: oldest)", 1},
	{"to", OPT_TO, "TIME", 0, "End of the range, exclusive (default: "
	 "newest)", 1},
	{"last", OPT_LAST, "DURATION", 0, "The range is the last DURATION "
	 "up to now", 1},
	{"windows", OPT_WINDOWS, "N", 0, "The range ends with the Nth window "
	 "holding samples from --from on (CPA's --output_num)", 1},
	{"list", OPT_LIST, NULL, 0, "List segments, the available range and "
	 "its gaps", 1},
	{"follow", OPT_FOLLOW, NULL, 0, "Write the stream of every block the "
	 "store commits, from --from (default: the oldest) on, without end, "
	 "each block followed by a 'position' meta record", 1},
	{"cursor", OPT_CURSOR, "FILE", 0, "With --follow, start after the "
	 "position FILE holds ('SEGMENT BLOCKS', as cpa-push keeps it)", 1},
	{"poll", OPT_POLL, "DURATION", 0, "With --follow, how often to look "
	 "for new blocks (default 1s)", 1},
	{"once", OPT_ONCE, NULL, 0, "With --follow, end the stream once every "
	 "block committed so far is written", 1},
	{NULL, 0, NULL, 0, "Filters (all must match):", 2},
	{"host", OPT_HOST, "GLOB", 0, "With --clickhouse, only hosts whose "
	 "name matches GLOB (* ? [...]; repeatable)", 2},
	{"job", OPT_JOB, "ID", 0, "With --clickhouse, the windows of the "
	 "profiling job ID (a request_id cpa-serve's node published) "
	 "instead of the hosts' continuous history", 2},
	{"max-windows", OPT_MAX_WINDOWS, "N", 0, "With --clickhouse, refuse "
	 "(exit 1) a query that more than N windows (a host's 10 s) match, "
	 "before reading any", 2},
	{"pid", OPT_PID, "PID[,PID]", 0, "Only these processes", 2},
	{"tid", OPT_TID, "TID[,TID]", 0, "Only these threads", 2},
	{"comm", OPT_COMM, "NAME", 0, "Only processes named NAME, or whose "
	 "whole name matches NAME as an extended regex (repeatable)", 2},
	{"cgroup", OPT_CGROUP, "ID|PATH", 0, "Only this cgroup id, or cgroup "
	 "path and below", 2},
	{"container", OPT_CONTAINER, "ID", 0, "Only containers whose id "
	 "starts with ID", 2},
	{"pod", OPT_POD, "UID", 0, "Only Kubernetes pods whose UID starts "
	 "with UID", 2},
	{"cpu", OPT_CPU, "CPUSET", 0, "Only samples on these CPUs (0,2-3)", 2},
	{"env", OPT_ENV, "VALUE", 0, "Only samples with this recorded env "
	 "value", 2},
	{"kind", OPT_KIND, "KIND[,KIND]", 0, "Only these event kinds "
	 "(oncpu, offcpu-blocked, offcpu-preempted, ..., mem-virt, mem-phys, "
	 "mem-usage, heap-alloc, heap-inuse, java-alloc, java-live)", 2},
	{"grep", OPT_GREP, "REGEX", 0, "Only stacks with a frame matching "
	 "REGEX", 2},
	{"exclude", OPT_EXCLUDE, "REGEX", 0, "Drop stacks with a frame "
	 "matching REGEX", 2},
	{NULL, 0, NULL, 0, "Output:", 3},
	{"labels", OPT_LABELS, "LIST", 0, "Root labels of folded lines: "
	 "comm,pid,tid,thread,container,pod,cgroup,env,cpu or none "
	 "(default comm); with --clickhouse also host, the first frame", 3},
	{"format", OPT_FORMAT, "FORMAT", 0, "folded (default), stream or "
	 "pprof", 3},
	{"output", 'o', "FILE", 0, "Write to FILE instead of stdout", 3},
	{"split", OPT_SPLIT, "DIR", 0, "Write one folded file per window "
	 "into DIR", 3},
	{"split-every", OPT_SPLIT_EVERY, "DURATION", 0, "With --split, one "
	 "file per DURATION instead of per window; with --format stream, "
	 "one sample per DURATION, --labels and stack", 3},
	{"stacks", OPT_STACKS, "full|side|kernel", 0, "With --format stream "
	 "and --split-every, side: each stack as [kernel]_[k] or [user], by "
	 "its leaf; kernel: its kernel frames alone, [user] when none", 3},
	{"prune", OPT_PRUNE, "N", 0, "With --format stream and --split-every, "
	 "a group's frames narrower than 1/N of their kind's total are summed "
	 "into one [other] frame under their caller", 3},
	{"callee", OPT_CALLEE, NULL, 0, "With --prune, cut the callee view's "
	 "tree, leaves at the root: a cut stack keeps its leaf end under "
	 "one [other] for its callers", 3},
	{"top", OPT_TOP, "N", 0, "The N functions with the most self weight, "
	 "with their total weight", 3},
	{"diff-from", OPT_DIFF_FROM, "TIME", 0, "Start of a baseline range: "
	 "write 'stack baseline range' lines for a differential flame "
	 "graph", 3},
	{"diff-to", OPT_DIFF_TO, "TIME", 0, "End of the baseline range", 3},
	{"growth", OPT_GROWTH, NULL, 0, "mem-usage, heap-inuse, java-live: "
	 "what grew within the range (allocations minus frees), not what was held at "
	 "--to", 3},
	{"verbose", 'v', NULL, 0, "Say what was read", 4},
	{0},
};

struct parse_state {
	struct query_opts *o;
	const char *from, *to, *last, *diff_from, *diff_to;
	bool poll;
};

static void add_str(const char ***v, size_t *n, const char *s)
{
	*v = cpa_realloc(*v, (*n + 1) * sizeof(**v));
	(*v)[(*n)++] = s;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct parse_state *ps = state->input;
	struct query_opts *o = ps->o;
	struct filter *f = &o->filter;
	char err[160];
	switch (key) {
	case 'd':
		add_str(&o->dirs, &o->n_dirs, arg);
		break;
	case OPT_CLICKHOUSE:
		o->clickhouse = arg;
		break;
	case OPT_DATABASE:
		o->database = cpa_ch_opt_database(arg);
		break;
	case OPT_HOST:
		if (!*arg)
			cpa_die_usage("invalid --host '': empty");
		add_str(&o->hosts, &o->n_hosts, arg);
		break;
	case OPT_MAX_WINDOWS:
		o->max_windows = cpa_opt_uint("--max-windows", arg, 1,
					      UINT32_MAX);
		break;
	case OPT_JOB:
		if (!*arg)
			cpa_die_usage("invalid --job '': empty");
		o->job = arg;
		break;
	case OPT_FROM:
		ps->from = arg;
		break;
	case OPT_TO:
		ps->to = arg;
		break;
	case OPT_LAST:
		ps->last = arg;
		break;
	case OPT_LIST:
		o->list = true;
		break;
	case OPT_FOLLOW:
		o->follow = true;
		break;
	case OPT_CURSOR:
		o->cursor = arg;
		break;
	case OPT_ONCE:
		o->once = true;
		break;
	case OPT_POLL:
		o->poll_ns = cpa_opt_duration_ns("--poll", arg);
		ps->poll = true;
		if (o->poll_ns < 10000000 || o->poll_ns > 3600000000000ull)
			cpa_die_usage("invalid --poll '%s': from 10ms to 1h",
				      arg);
		break;
	case OPT_PID:
		f->n_pids = cpa_opt_uint_list("--pid", arg, 0, UINT32_MAX,
					      &f->pids, f->n_pids);
		break;
	case OPT_TID:
		f->n_tids = cpa_opt_uint_list("--tid", arg, 0, UINT32_MAX,
					      &f->tids, f->n_tids);
		break;
	case OPT_COMM:
		filter_add_comm(f, arg);
		break;
	case OPT_CGROUP:
		add_str(&f->cgroups, &f->n_cgroups, arg);
		break;
	case OPT_CONTAINER:
		add_str(&f->containers, &f->n_containers, arg);
		break;
	case OPT_POD:
		add_str(&f->pods, &f->n_pods, arg);
		break;
	case OPT_CPU:
		if (cpa_cpuset_parse(arg, &f->cpus, err, sizeof(err)) < 0)
			cpa_die_usage("invalid --cpu '%s': %s", arg, err);
		f->has_cpus = true;
		break;
	case OPT_ENV:
		add_str(&f->envs, &f->n_envs, arg);
		break;
	case OPT_KIND:
		filter_add_kinds(f, arg);
		break;
	case OPT_GREP:
		filter_add_regex(f, false, arg);
		break;
	case OPT_EXCLUDE:
		filter_add_regex(f, true, arg);
		break;
	case OPT_LABELS: {
		/* host is no label of a sample: the fleet query writes it
		 * as the stack's first frame */
		/* (into a list of its own: writing the kept words over the
		 * one strtok_r is still reading made it read past the end) */
		char *in = cpa_strdup(arg), *w, *save = NULL;
		char *l = cpa_malloc(strlen(arg) + sizeof("none"));
		size_t n = 0;
		o->host_label = false;
		for (w = strtok_r(in, ",", &save); w;
		     w = strtok_r(NULL, ",", &save)) {
			if (!strcmp(w, "host")) {
				o->host_label = true;
				continue;
			}
			memcpy(l + n, w, strlen(w));
			n += strlen(w);
			l[n++] = ',';
		}
		if (n)
			l[n - 1] = 0;
		else
			memcpy(l, "none", sizeof("none"));
		if (cpa_labels_parse(l, &o->labels, err, sizeof(err)) < 0)
			cpa_die_usage("invalid --labels '%s': %s", arg, err);
		free(l);
		free(in);
		break;
	}
	case OPT_FORMAT:
		if (!strcmp(arg, "folded"))
			o->format = FORMAT_FOLDED;
		else if (!strcmp(arg, "stream"))
			o->format = FORMAT_STREAM;
		else if (!strcmp(arg, "pprof"))
			o->format = FORMAT_PPROF;
		else
			cpa_die_usage("invalid --format '%s': expected folded, "
				      "stream or pprof", arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case OPT_SPLIT:
		o->split_dir = arg;
		break;
	case OPT_WINDOWS:
		o->windows = cpa_opt_uint("--windows", arg, 1, UINT32_MAX);
		break;
	case OPT_SPLIT_EVERY:
		o->split_ns = cpa_opt_duration_ns("--split-every", arg);
		if (!o->split_ns)
			cpa_die_usage("invalid --split-every '%s': must be "
				      "more than 0", arg);
		break;
	case OPT_STACKS:
		if (!strcmp(arg, "side") || !strcmp(arg, "full") ||
		    !strcmp(arg, "kernel")) {
			o->side = !strcmp(arg, "side");
			o->kernel = !strcmp(arg, "kernel");
		}
		else
			cpa_die_usage("invalid --stacks '%s': expected full "
				      ", side or kernel", arg);
		break;
	case OPT_PRUNE:
		o->prune = (uint32_t)cpa_opt_uint("--prune", arg, 1, 1u << 24);
		break;
	case OPT_CALLEE:
		o->callee = true;
		break;
	case OPT_TOP:
		o->top = (unsigned)cpa_opt_uint("--top", arg, 1, 1000000);
		break;
	case OPT_DIFF_FROM:
		ps->diff_from = arg;
		break;
	case OPT_DIFF_TO:
		ps->diff_to = arg;
		break;
	case OPT_GROWTH:
		o->growth = true;
		break;
	case 'v':
		cpa_set_verbose(true);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!o->n_dirs && !o->clickhouse)
			argp_error(state, "--dir is required (or --clickhouse, for "
				   "the fleet)");
		if (o->n_dirs && o->clickhouse)
			argp_error(state, "--dir and --clickhouse are two "
				   "histories: choose one");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

void query_opts_parse(struct query_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	cpa_labels_default(&o->labels);
	struct parse_state ps = {.o = o};
	static const struct argp_child children[] = {
		{&cpa_check_argp, 0, NULL, 0},
		{0},
	};
	static const struct argp argp = {options, parse_opt, NULL, doc,
					 children, NULL, NULL};
	argp_parse(&argp, argc, argv, 0, NULL, &ps);

	uint64_t now = cpa_now_ns();
	o->from = 0;
	o->to = UINT64_MAX;
	if (ps.last) {
		if (ps.from || ps.to)
			cpa_die_usage("--last cannot be combined with --from "
				      "or --to");
		uint64_t d = cpa_opt_duration_ns("--last", ps.last);
		o->from = now > d ? now - d : 0;
	}
	if (ps.from)
		o->from = cpa_opt_time_ns("--from", ps.from, now);
	if (ps.to)
		o->to = cpa_opt_time_ns("--to", ps.to, now);
	o->from_arg = ps.from;
	o->to_arg = ps.to;
	if (o->from >= o->to)
		cpa_die_usage("empty range: --from is not before --to");
	if (o->windows && (ps.to || ps.last || o->clickhouse || o->follow ||
			   o->diff_from || ps.diff_from))
		cpa_die_usage("--windows N ends the range at the Nth window: it "
			      "takes no --to, --last, --diff-from, --follow or "
			      "--clickhouse");
	if (!!ps.diff_from != !!ps.diff_to)
		cpa_die_usage("--diff-from and --diff-to go together");
	if (ps.diff_from) {
		o->diff = true;
		o->diff_from = cpa_opt_time_ns("--diff-from", ps.diff_from, now);
		o->diff_to = cpa_opt_time_ns("--diff-to", ps.diff_to, now);
		if (o->diff_from >= o->diff_to)
			cpa_die_usage("empty baseline range: --diff-from is "
				      "not before --diff-to");
	}
	if (!o->poll_ns)
		o->poll_ns = 1000000000;
	if (!o->database)
		o->database = "cpa";
	if (!o->clickhouse && (o->n_hosts || o->host_label || o->job ||
			       o->max_windows ||
			       strcmp(o->database, "cpa")))
		cpa_die_usage("--host, --job, --max-windows, --labels host and "
			      "--database go "
			      "with "
			      "--clickhouse (a store is one host's)");
	if (o->clickhouse) {
		const struct filter *f = &o->filter;
		if (o->follow)
			cpa_die_usage("--follow reads a store (--dir)");
		if (f->n_pids || f->n_tids || f->has_cpus)
			cpa_die_usage("--pid, --tid and --cpu: the fleet keeps "
				      "no pids, threads or CPUs (query the "
				      "host's store)");
		for (size_t i = 0; i < f->n_cgroups; i++)
			if (f->cgroups[i][0] != '/')
				cpa_die_usage("--cgroup '%s': the fleet keeps "
					      "cgroup paths, not ids",
					      f->cgroups[i]);
		for (unsigned i = 0; i < o->labels.n; i++) {
			enum cpa_label l = o->labels.order[i];
			if (l == CPA_LABEL_PID || l == CPA_LABEL_TID ||
			    l == CPA_LABEL_THREAD || l == CPA_LABEL_CPU)
				cpa_die_usage("--labels: the fleet keeps no "
					      "pid, tid, thread or cpu (query "
					      "the host's store)");
		}
	}
	if ((o->cursor || ps.poll || o->once) && !o->follow)
		cpa_die_usage("--cursor, --poll and --once go with --follow");
	if (o->follow) {
		if (o->n_dirs != 1)
			cpa_die_usage("--follow reads one --dir");
		if (ps.to || ps.last || o->list || o->split_dir || o->top ||
		    o->diff || o->split_ns || o->output ||
		    (o->format != FORMAT_FOLDED && o->format != FORMAT_STREAM))
			cpa_die_usage("--follow writes the stream from --from "
				      "on: it takes no --to, --last, --list, "
				      "--split, --top, --diff-from, --output "
				      "or other --format");
		o->format = FORMAT_STREAM;
	}
	int modes = o->list + !!o->split_dir + !!o->top + o->diff +
		    (o->format != FORMAT_FOLDED);
	if (modes > 1)
		cpa_die_usage("choose one of --list, --split, --top, --diff-from "
			      "and --format stream/pprof");
	if (o->split_ns && !o->split_dir && o->format != FORMAT_STREAM)
		cpa_die_usage("--split-every needs --split DIR or --format "
			      "stream");
	if ((o->side || o->kernel) &&
	    !(o->split_ns && o->format == FORMAT_STREAM))
		cpa_die_usage("--stacks needs --format stream and "
			      "--split-every");
	if (o->prune && (!(o->split_ns && o->format == FORMAT_STREAM) ||
			 o->side))
		cpa_die_usage("--prune needs --format stream and --split-every, "
			      "and full stacks");
	if (o->callee && !o->prune)
		cpa_die_usage("--callee needs --prune");
	filter_finish(&o->filter);
}

void query_opts_free(struct query_opts *o)
{
	free(o->dirs);
	free(o->hosts);
	filter_free(&o->filter);
}
