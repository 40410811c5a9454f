/* SPDX-License-Identifier: MIT */
/*
 * cpa-render: folded text or the cpa stream in; a flame graph (SVG),
 * an HTML page with a time heatmap, pprof, speedscope, a text report or
 * merged folded text out. Runs unprivileged.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "options.h"
#include "outfile.h"
#include "render.h"
#include "timeparse.h"
#if WITH_NCURSES
#include "tui.h"
#endif

enum {
	OPT_TITLE = 256, OPT_SUBTITLE, OPT_WIDTH, OPT_HEIGHT, OPT_MINWIDTH,
	OPT_COLORS, OPT_HASH, OPT_COUNTNAME, OPT_REVERSE, OPT_INVERTED,
	OPT_FLAMECHART, OPT_NEGATE, OPT_UNIT, OPT_KIND, OPT_LABELS, OPT_TOP,
	OPT_FREQ, OPT_SKIP_BAD, OPT_PROFILE_BY, OPT_TUI, OPT_FOLLOW, OPT_FROM,
	OPT_TO, OPT_LAST, OPT_UNIT_FILES,
};

static const char doc[] =
	"Draws a profile: folded text (one or two counts per line) or the "
	"cpa stream, read from FILE or standard input, the kind told by its "
	"first byte.\v"
	"Formats: svg (interactive flame graph, the default), html (one "
	"self-contained page; with stream input a per-second heatmap to pick "
	"a time range), pprof (gzipped profile.proto), text (top functions "
	"and call tree), folded (merged, sorted folded text), speedscope "
	"(speedscope's JSON: a profile per thread or process, evented where "
	"a live stream gives the samples' times).\n\n"
	"Examples:\n"
	"  cpa-query --dir /var/lib/cpa --last 5m | cpa-render > cpu.svg\n"
	"  perf script | stackcollapse-perf.pl | cpa-render --title perf > p.svg\n"
	"  cpa-render --format pprof -o cpu.pb.gz profile.folded\n"
	"  cpa-render --tui -- cpa-query --dir /var/lib/cpa\n\n"
	"With --tui, the arguments after -- are the query command: the terminal "
	"UI runs it with --list, and with --from, --to and --format stream "
	"for each range it shows; without them it reads one stream from FILE "
	"or standard input, keys always from /dev/tty.\n\n"
	"Exit status: 0 on success, 1 on bad input, 2 on bad options.";

static const struct argp_option options[] = {
	{ "format", 'f', "FMT", 0,
	  "svg, html, pprof, text, folded or speedscope", 0 },
	{ "output", 'o', "FILE", 0, "write to FILE instead of stdout", 0 },
	{ "verbose", 'v', NULL, 0, "say more on stderr", 0 },
	{ NULL, 0, NULL, 0, "Flame graph (svg and html):", 1 },
	{ "title", OPT_TITLE, "TEXT", 0, "title (default \"Flame Graph\")", 1 },
	{ "subtitle", OPT_SUBTITLE, "TEXT", 0, "second title line", 1 },
	{ "width", OPT_WIDTH, "PX", 0, "image width (default 1200)", 1 },
	{ "height", OPT_HEIGHT, "PX", 0, "frame height (default 16)", 1 },
	{ "minwidth", OPT_MINWIDTH, "PX|PCT%", 0,
	  "leave out frames narrower than PX pixels or PCT percent of the "
	  "total (default 0.1); in text, the call tree's cut (default 0.5%)", 1 },
	{ "colors", OPT_COLORS, "PALETTE", 0,
	  "hot (samples), io (time), mem (bytes), wakeup, java, js, perl, "
	  "chain, red, green, blue, aqua, yellow, purple, orange", 1 },
	{ "color", OPT_COLORS, "PALETTE", OPTION_ALIAS, NULL, 1 },
	{ "hash", OPT_HASH, NULL, 0,
	  "colors by name hash: alike names, alike colors", 1 },
	{ "countname", OPT_COUNTNAME, "NAME", 0,
	  "what the counts are (default from the unit)", 1 },
	{ "reverse", OPT_REVERSE, NULL, 0, "reverse stacks: leaves at the root", 1 },
	{ "inverted", OPT_INVERTED, NULL, 0, "icicle graph: root at the top", 1 },
	{ "flamechart", OPT_FLAMECHART, NULL, 0,
	  "time order instead of merged by name (stream times, or the line "
	  "order of folded text)", 1 },
	{ "negate", OPT_NEGATE, NULL, 0,
	  "differential: swap red (grew) and blue (shrank)", 1 },
	{ NULL, 0, NULL, 0, "Input:", 2 },
	{ "unit", OPT_UNIT, "UNIT", 0,
	  "unit of folded counts: samples (default; bytes when every line "
	  "starts with a memory marker), ns, count, bytes, pages", 2 },
	{ "kind", OPT_KIND, "KIND", 0,
	  "stream: only samples of this event kind (oncpu, offcpu-blocked, ...)", 2 },
	{ "labels", OPT_LABELS, "LIST", 0,
	  "stream: root labels, comm,pid,tid,thread,container,env,cpu or "
	  "none (default comm)", 2 },
	{ "unit-files", OPT_UNIT_FILES, "NAME.EXT", 0,
	  "a graph has one unit: with several, each after the first goes to "
	  "NAME.UNIT.EXT (default: -o's name; cpa.svg -> cpa.ns.svg)", 2 },
	{ "ignore-bad-lines", OPT_SKIP_BAD, NULL, 0,
	  "skip malformed folded lines, counting them, instead of failing", 2 },
	{ NULL, 0, NULL, 0, "Text and pprof:", 3 },
	{ "top", OPT_TOP, "N", 0, "text: rows of the top lists (default 20)", 3 },
	{ "profile-by", OPT_PROFILE_BY, "thread|process", 0,
	  "speedscope: a profile per thread (default) or per process", 3 },
	{ "freq", OPT_FREQ, "HZ", 0,
	  "pprof: sampling frequency, for CPU time (default from the stream's "
	  "meta; without it, no CPU time)", 3 },
	{ NULL, 0, NULL, 0, "Terminal UI:", 4 },
	{ "tui", OPT_TUI, NULL, 0,
	  "browse the history in the terminal: trend, window, flame graph "
	  "(keys: ? in the UI, or cpa-render(1))", 4 },
	{ "follow", OPT_FOLLOW, NULL, 0,
	  "tui: show new windows as the store commits them", 4 },
	{ "from", OPT_FROM, "TIME", 0, "tui: start of the history (default: "
	  "the store's oldest)", 4 },
	{ "to", OPT_TO, "TIME", 0, "tui: end of the history (default: the "
	  "store's newest)", 4 },
	{ "last", OPT_LAST, "DURATION", 0, "tui: the history is the last "
	  "DURATION up to now", 4 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct render_opts *o = state->input;
	char err[128];

	switch (key) {
	case 'f':
		if (!strcmp(arg, "svg")) o->format = FORMAT_SVG;
		else if (!strcmp(arg, "html")) o->format = FORMAT_HTML;
		else if (!strcmp(arg, "pprof")) o->format = FORMAT_PPROF;
		else if (!strcmp(arg, "text")) o->format = FORMAT_TEXT;
		else if (!strcmp(arg, "folded")) o->format = FORMAT_FOLDED;
		else if (!strcmp(arg, "speedscope")) o->format = FORMAT_SPEEDSCOPE;
		else
			cpa_die_usage("invalid --format '%s': expected svg, html, "
				      "pprof, text, folded or speedscope", arg);
		break;
	case 'o': o->output = arg; break;
	case 'v': cpa_set_verbose(true); break;
	case OPT_TITLE: o->title = arg; break;
	case OPT_SUBTITLE: o->subtitle = arg; break;
	case OPT_WIDTH:
		o->width = (unsigned)cpa_opt_uint("--width", arg, 100, 1000000);
		break;
	case OPT_HEIGHT:
		o->frame_height = (unsigned)cpa_opt_uint("--height", arg, 4, 1000);
		break;
	case OPT_MINWIDTH: {
		char *end;
		errno = 0;
		double v = strtod(arg, &end);
		o->minwidth_pct = *end == '%';
		if (o->minwidth_pct)
			end++;
		if (errno || end == arg || *end || !(v >= 0) ||
		    (o->minwidth_pct && v > 100) || v > 1e9)
			cpa_die_usage("invalid --minwidth '%s': expected pixels "
				      "such as 0.5 or a percentage such as 1%%",
				      arg);
		o->minwidth = v;
		o->minwidth_set = true;
		break;
	}
	case OPT_COLORS:
		if (!palette_valid(arg))
			cpa_die_usage("invalid --colors '%s': expected one of %s",
				      arg, palette_list());
		o->colors = arg;
		break;
	case OPT_HASH: o->hash = true; break;
	case OPT_COUNTNAME: o->countname = arg; break;
	case OPT_REVERSE: o->reverse = true; break;
	case OPT_INVERTED: o->inverted = true; break;
	case OPT_FLAMECHART: o->flamechart = true; break;
	case OPT_NEGATE: o->negate = true; break;
	case OPT_UNIT:
		o->unit = -1;
		for (int u = CPA_UNIT_SAMPLES; u <= CPA_UNIT_PAGES; u++)
			if (!strcmp(arg, cpa_unit_name((enum cpa_unit)u)))
				o->unit = u;
		if (o->unit < 0)
			cpa_die_usage("invalid --unit '%s': expected samples, ns, "
				      "count, bytes or pages", arg);
		break;
	case OPT_KIND:
		o->kind = cpa_kind_parse(arg);
		if (o->kind < 0)
			cpa_die_usage("invalid --kind '%s': expected an event kind "
				      "such as oncpu or offcpu-blocked", arg);
		break;
	case OPT_LABELS:
		if (cpa_labels_parse(arg, &o->labels, err, sizeof(err)) < 0)
			cpa_die_usage("invalid --labels '%s': %s", arg, err);
		o->labels_set = true;
		break;
	case OPT_SKIP_BAD: o->skip_bad = true; break;
	case OPT_UNIT_FILES:
		if (!*arg)
			cpa_die_usage("invalid --unit-files '': expected a "
				      "file name");
		o->unit_files = arg;
		break;
	case OPT_PROFILE_BY:
		if (strcmp(arg, "thread") && strcmp(arg, "process"))
			cpa_die_usage("invalid --profile-by '%s': expected thread "
				      "or process", arg);
		o->by_process = !strcmp(arg, "process");
		break;
	case OPT_TOP:
		o->top = (unsigned)cpa_opt_uint("--top", arg, 1, 1000000);
		break;
	case OPT_FREQ:
		o->period_ns = 1000000000ull /
			       cpa_opt_uint("--freq", arg, 1, 1000000);
		break;
	case OPT_TUI: o->tui = true; break;
	case OPT_FOLLOW: o->follow = true; break;
	case OPT_FROM: o->tui_from = cpa_opt_time_ns("--from", arg, cpa_now_ns()); break;
	case OPT_TO: o->tui_to = cpa_opt_time_ns("--to", arg, cpa_now_ns()); break;
	case OPT_LAST:
		o->tui_last = cpa_opt_duration_ns("--last", arg);
		break;
	case ARGP_KEY_ARG:
		if (o->input)
			argp_error(state, "one input file at most ('%s' and '%s')",
				   o->input, arg);
		o->input = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child children[] = {
	{ &cpa_check_argp, 0, NULL, 0 },
	{ 0 }
};
static const struct argp argp = { options, parse_opt, "[FILE]", doc,
				  children, NULL, NULL };

int main(int argc, char **argv)
{
	struct render_opts o = {
		.format = FORMAT_SVG,
		.unit = -1,
		.kind = -1,
		.width = 1200,
		.frame_height = 16,
		.minwidth = 0.1,
		.top = 20,
	};
	int rc;

	cpa_options_init(argv[0]);
	cpa_labels_default(&o.labels);
	/* "--tui -- COMMAND ARGS": the query command is not cpa-render's */
	char **query = NULL;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			if (i + 1 < argc)
				query = argv + i + 1;
			argv[i] = NULL;
			argc = i;
			break;
		}
	argp_parse(&argp, argc, argv, 0, NULL, &o);
	if (o.tui) {
		if (o.output || o.format != FORMAT_SVG)
			cpa_die_usage("--tui draws on the terminal; it takes "
				      "no --output or --format");
		if (query && o.input)
			cpa_die_usage("--tui reads '%s' or runs the query "
				      "after --, not both", o.input);
		if (o.follow && !query)
			cpa_die_usage("--follow needs the query command after "
				      "--: cpa-render --tui --follow -- "
				      "cpa-query --dir DIR");
		if ((o.tui_from || o.tui_to || o.tui_last) && !query)
			cpa_die_usage("--from, --to and --last choose what the "
				      "query after -- reads");
		if (o.tui_last && (o.tui_from || o.tui_to))
			cpa_die_usage("--last cannot be combined with --from "
				      "or --to");
		if (o.tui_from && o.tui_to && o.tui_from >= o.tui_to)
			cpa_die_usage("empty range: --from is not before --to");
#if WITH_NCURSES
		return tui_run(&o, query) < 0 ? CPA_EXIT_FAILURE : 0;
#else
		cpa_die("--tui: this cpa-render was built without ncurses "
			"(configure --without-ncurses)");
#endif
	}
	if (query)
		cpa_die_usage("arguments after -- are the query command of "
			      "--tui");
	if (o.flamechart && o.format != FORMAT_SVG)
		cpa_die_usage("--flamechart draws an svg; it cannot go with "
			      "--format other than svg");
	cpa_options_checked();
	if (o.format == FORMAT_TEXT && !o.minwidth_set) {
		o.minwidth = 0.5;
		o.minwidth_pct = true;
	}

	/* speedscope's profiles are the processes or threads: the process
	 * name as a root frame would only repeat the profile's name */
	if (o.format == FORMAT_SPEEDSCOPE && !o.labels_set) {
		char err[128];
		cpa_labels_parse("none", &o.labels, err, sizeof(err));
	}
	rc = render_run(&o);
	return rc < 0 ? CPA_EXIT_FAILURE : 0;
}
