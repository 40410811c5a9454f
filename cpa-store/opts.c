/* SPDX-License-Identifier: MIT */
#include <argp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "timeparse.h"
#include "opts.h"
#include "selfstats.h"

enum {
	OPT_INTERVAL = 0x100, OPT_SEGMENT, OPT_FLUSH, OPT_GRACE, OPT_RETAIN,
	OPT_MAX_SIZE, OPT_BACKLOG, OPT_MAX_DICT, OPT_TIME, OPT_STATS,
	OPT_MAX_PROC_STACKS, OPT_MAX_PROC_BYTES,
};

static const char doc[] =
	"Keep the cpa stream (or folded text) read on stdin as a history of "
	"per-window counts in rotating segment directories under DIR.\v"
	"Windows are aligned to multiples of --interval since the epoch. A "
	"closed window is written within --flush, so a crash loses at most "
	"that much. Retention deletes whole segments, oldest first. See "
	"cpa-store(1) and docs/store-format.md.";

static const struct argp_option options[] = {
	{"dir", 'd', "DIR", 0, "Store directory (created 0750 if missing)", 0},
	{"interval", OPT_INTERVAL, "DURATION", 0,
	 "Window length (default 1s)", 0},
	{"segment", OPT_SEGMENT, "DURATION", 0,
	 "Rotation period of segment directories (default 1h)", 0},
	{"flush", OPT_FLUSH, "DURATION", 0,
	 "Write closed windows at least this often (default 5s)", 0},
	{"grace", OPT_GRACE, "DURATION", 0,
	 "Keep a window open this long after its end for late samples, in "
	 "stream time; an idle input closes it after the same wall time "
	 "(default 1s)", 0},
	{"retain", OPT_RETAIN, "DURATION", 0,
	 "Delete segments whose newest window is older than this, counted "
	 "back from now or from the newest stored window if that is older "
	 "(default 7d; 0 keeps everything)", 0},
	{"max-size", OPT_MAX_SIZE, "SIZE", 0,
	 "Delete the oldest segments while the store is larger (default 2G; "
	 "0 for no limit)", 0},
	{"backlog", OPT_BACKLOG, "SIZE", 0,
	 "Memory for windows held while the disk is full (default 64M); "
	 "older windows beyond it are dropped and counted", 0},
	{"max-dict", OPT_MAX_DICT, "SIZE", 0,
	 "Memory for the current segment's string and stack dictionaries; "
	 "past it the segment is closed and the next one started early, in "
	 "the same period (default 4M)", 0},
	{"max-process-bytes", OPT_MAX_PROC_BYTES, "SIZE", 0,
	 "Names and stacks new to the segment that one process may add per "
	 "window, saved up to 16 windows' worth (default 16K; 0 for no "
	 "limit); past it, or past --max-process-stacks, its stacks are "
	 "stored as [over budget] with their weight, and counted (cpa-query "
	 "--list)", 0},
	{"max-process-stacks", OPT_MAX_PROC_STACKS, "N", 0,
	 "Stacks new to the segment one process may add in one window "
	 "(default 4096; "
	 "0 for no limit)", 0},
	{"time", OPT_TIME, "TIME", 0,
	 "Time stamp of folded text input (default now)", 0},
	{"stats", OPT_STATS, NULL, 0, "Print totals on stderr at exit", 0},
	{"verbose", 'v', NULL, 0, "Log segments created, recovered and "
	 "deleted", 0},
	{0},
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct store_opts *o = state->input;
	switch (key) {
	case 'd':
		o->dir = arg;
		break;
	case OPT_INTERVAL:
		o->interval_ns = cpa_opt_duration_ns("--interval", arg);
		if (o->interval_ns < 1000000)
			cpa_die_usage("invalid --interval '%s': at least 1ms",
				      arg);
		break;
	case OPT_SEGMENT:
		o->segment_ns = cpa_opt_duration_ns("--segment", arg);
		break;
	case OPT_FLUSH:
		o->flush_ns = cpa_opt_duration_ns("--flush", arg);
		if (o->flush_ns < 10000000)
			cpa_die_usage("invalid --flush '%s': at least 10ms",
				      arg);
		break;
	case OPT_GRACE:
		o->grace_ns = cpa_opt_duration_ns("--grace", arg);
		break;
	case OPT_RETAIN:
		o->retain_ns = !strcmp(arg, "0")
				       ? 0 : cpa_opt_duration_ns("--retain", arg);
		break;
	case OPT_MAX_SIZE:
		o->max_size = cpa_opt_size("--max-size", arg);
		break;
	case OPT_BACKLOG:
		o->backlog_max = cpa_opt_size("--backlog", arg);
		break;
	case OPT_MAX_DICT:
		o->max_dict = cpa_opt_size("--max-dict", arg);
		if (o->max_dict < 64 << 10)
			cpa_die_usage("invalid --max-dict '%s': at least 64K",
				      arg);
		break;
	case OPT_MAX_PROC_BYTES:
		o->max_proc_bytes = cpa_opt_size("--max-process-bytes", arg);
		break;
	case OPT_MAX_PROC_STACKS: {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-')
			cpa_die_usage("invalid --max-process-stacks '%s': "
				      "expected a number", arg);
		o->max_proc_stacks = v;
		break;
	}
	case OPT_TIME:
		if (cpa_parse_time(arg, store_now_ns(), &o->folded_time_ns) < 0)
			cpa_die_usage("invalid --time '%s': expected a time "
				      "such as 10:15, 2026-11-30T10:15:00, "
				      "@1700000000 or -10m", arg);
		break;
	case OPT_STATS:
		o->stats = true;
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->selfstats;
		break;
	case 'v':
		cpa_set_verbose(true);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s' (input is stdin)",
			   arg);
		break;
	case ARGP_KEY_END:
		if (!o->dir)
			argp_error(state, "--dir is required");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

uint64_t store_now_ns(void)
{
	/* Tests and imports of old recordings pin the clock that retention
	 * ages segments against. */
	const char *fake = getenv("CPA_STORE_NOW");
	uint64_t now = cpa_now_ns(), t;
	if (fake && *fake) {
		if (cpa_parse_time(fake, now, &t) < 0)
			cpa_die_usage("invalid CPA_STORE_NOW '%s'", fake);
		return t;
	}
	return now;
}

void store_opts_parse(struct store_opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->interval_ns = CPA_NSEC_PER_SEC;
	o->segment_ns = 3600 * CPA_NSEC_PER_SEC;
	o->flush_ns = 5 * CPA_NSEC_PER_SEC;
	o->grace_ns = CPA_NSEC_PER_SEC;
	o->retain_ns = 7 * 86400 * CPA_NSEC_PER_SEC;
	o->max_size = 2ull << 30;
	o->backlog_max = 64ull << 20;
	o->max_dict = 4ull << 20;
	o->max_proc_bytes = 16ull << 10;
	o->max_proc_stacks = 4096;
	static const struct argp_child children[] = {
		{&cpa_selfstats_argp, 0, NULL, 0},
		{&cpa_check_argp, 0, NULL, 0},
		{0},
	};
	static const struct argp argp = {options, parse_opt, NULL, doc,
					 children, NULL, NULL};
	argp_parse(&argp, argc, argv, 0, NULL, o);
	if (o->segment_ns < o->interval_ns ||
	    o->segment_ns % o->interval_ns)
		cpa_die_usage("invalid --segment: it must be a whole multiple "
			      "of --interval");
	uint64_t step = o->flush_ns > o->interval_ns ? o->flush_ns
						     : o->interval_ns;
	if (o->segment_ns / step > 1000000)
		cpa_die_usage("invalid --segment: more than a million flushes "
			      "per segment; use a shorter --segment or a "
			      "longer --flush");
	if (!o->folded_time_ns)
		o->folded_time_ns = store_now_ns();
}
