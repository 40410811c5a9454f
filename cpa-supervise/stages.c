/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <ctype.h>
#include <string.h>

#include <linux/capability.h>

#include "child.h"
#include "stages.h"

const struct stage stages[] = {
	{
		.name = "capture", .tool = "cpa-capture",
		.job = "loads the BPF programs, opens one perf event per CPU "
		       "and writes raw samples",
		.input = INPUT_NONE, .user = USER_ROOT,
		.caps = {
			{ CAP_BPF, "BPF programs and maps" },
			{ CAP_PERFMON, "perf events on every CPU" },
			{ CAP_SYS_ADMIN, "mounting tracefs, uprobes, BPF on "
					 "kernels before 5.8" },
			{ CAP_SYS_RESOURCE, "the locked-memory limit on "
					    "kernels before 5.11" },
			{ CAP_SYS_PTRACE, "/proc/PID/maps of every process at "
					  "start" },
			{ CAP_DAC_READ_SEARCH, "/proc/PID of every process at "
					       "start" },
		},
		.stats = "capture.stats",
		.deadline_opt = "--duration=",
		.restart = RESTART_CHAIN,
	},
	{
		.name = "unwind", .tool = "cpa-unwind",
		.job = "names the frames: reads /proc/PID/maps and "
		       "/proc/PID/root of every process and the files they "
		       "map, kernel symbols, JVMs' perf maps",
		.input = INPUT_PREVIOUS, .user = USER_ROOT,
		.caps = {
			{ CAP_SYS_PTRACE, "/proc/PID/maps and /proc/PID/root "
					  "of every process" },
			{ CAP_DAC_READ_SEARCH, "the files every process maps" },
			{ CAP_SYSLOG, "kernel symbol addresses in "
				      "/proc/kallsyms, hidden by kptr_restrict" },
			{ CAP_KILL, "SIGQUIT to JVMs of any user, to "
				    "attach" },
			{ CAP_DAC_OVERRIDE, "the JVM's 0600 attach socket" },
			{ CAP_CHOWN, "the attach trigger file, given to the "
				     "JVM's user" },
		},
		.stats = "unwind.stats",
		.restart = RESTART_CHAIN,
	},
	{
		.name = "store", .tool = "cpa-store",
		.job = "writes second-level history into its own directory",
		.input = INPUT_PREVIOUS, .user = USER_SERVICE,
		.stats = "store.stats",
		.dir_opt = "--dir=",
		.restart = RESTART_CHAIN,
	},
	{
		.name = "push", .tool = "cpa-push",
		.job = "reads the store (cpa-query --follow, its child) and "
		       "inserts its windows into ClickHouse; keeps its cursor "
		       "in the store's directory",
		.input = INPUT_NONE, .user = USER_SERVICE,
		.stats = "push.stats",
		.dir_opt = "--dir=",
		.restart = RESTART_CHAIN,
	},
	{
		.name = "render", .tool = "cpa-render",
		.job = "writes a one-shot profile or cpa show's output, into "
		       "a file cpa-supervise opened",
		.input = INPUT_PREVIOUS, .user = USER_ROOT,
		.restart = RESTART_NEVER,
	},
	{
		.name = "query", .tool = "cpa-query",
		.job = "reads history for cpa show",
		.input = INPUT_NONE, .user = USER_ROOT,
		.caps = {
			{ CAP_DAC_READ_SEARCH, "a store the service user "
					       "owns, when root runs cpa show" },
		},
		.restart = RESTART_NEVER,
	},
};
const unsigned n_stages = sizeof(stages) / sizeof(stages[0]);

const struct stage_cap supervisor_caps[] = {
	{ CAP_SETPCAP, "reducing each stage's bounding set" },
	{ CAP_SETUID, "running stages as the service user" },
	{ CAP_SETGID, "running stages as the service user" },
	{ CAP_KILL, "stopping stages that run as the service user" },
	{ CAP_CHOWN, "giving the service user its directories" },
	{ 0, NULL },
};

const struct stage *stage_find(const char *name)
{
	for (unsigned i = 0; i < n_stages; i++)
		if (!strcmp(stages[i].name, name))
			return &stages[i];
	return NULL;
}

void stage_cap_list(const struct stage *s, int out[STAGE_MAX_CAPS + 1])
{
	unsigned n = 0;

	if (s->user == USER_ROOT)
		for (; n < STAGE_MAX_CAPS && s->caps[n].why; n++)
			out[n] = s->caps[n].cap;
	out[n] = -1;
}

static void add_cap(int out[64], int cap)
{
	int n = 0;

	for (; out[n] >= 0; n++)
		if (out[n] == cap)
			return;
	if (n < 63) {
		out[n] = cap;
		out[n + 1] = -1;
	}
}

void supervisor_cap_list(int out[64])
{
	int caps[STAGE_MAX_CAPS + 1];

	out[0] = -1;
	for (unsigned i = 0; i < n_stages; i++) {
		stage_cap_list(&stages[i], caps);
		for (int *c = caps; *c >= 0; c++)
			add_cap(out, *c);
	}
	for (const struct stage_cap *c = supervisor_caps; c->why; c++)
		add_cap(out, c->cap);
}

/* The names, then the mask as /proc/PID/status shows it. */
static void print_caps(FILE *f, const int *caps)
{
	unsigned long long mask = 0;

	if (caps[0] < 0)
		fputc('-', f);
	for (const int *c = caps; *c >= 0; c++) {
		fprintf(f, "%s%s", c == caps ? "" : ",", cpa_cap_name(*c));
		mask |= 1ull << *c;
	}
	fprintf(f, " %016llx", mask);
}

void stages_print(FILE *f)
{
	int caps[64];

	for (unsigned i = 0; i < n_stages; i++) {
		const struct stage *s = &stages[i];

		fprintf(f, "%s %s ", s->name, s->tool);
		stage_cap_list(s, caps);
		print_caps(f, caps);
		fprintf(f, " %s %s %s\n",
			s->user == USER_SERVICE ? "service" : "root",
			s->stats ? s->stats : "-",
			s->restart == RESTART_CHAIN ? "chain" : "never");
	}
	supervisor_cap_list(caps);
	fprintf(f, "supervise cpa-supervise ");
	print_caps(f, caps);
	fprintf(f, " root - -\n");
}

static void print_cap_reasons(FILE *f, const struct stage_cap *caps)
{
	if (!caps[0].why)
		fputs("none", f);
	for (const struct stage_cap *c = caps; c->why; c++) {
		fputs(c == caps ? "CAP_" : "; CAP_", f);
		for (const char *p = cpa_cap_name(c->cap); *p; p++)
			fputc(toupper((unsigned char)*p), f);
		fprintf(f, " (%s)", c->why);
	}
}

void stages_print_markdown(FILE *f)
{
	fputs("| stage | tool | runs as | keeps | its job |\n"
	      "| --- | --- | --- | --- | --- |\n", f);
	for (unsigned i = 0; i < n_stages; i++) {
		const struct stage *s = &stages[i];

		fprintf(f, "| %s | %s | %s | ", s->name, s->tool,
			s->user == USER_SERVICE
				? "the `cpa` user (root if it does not exist)"
				: "root");
		print_cap_reasons(f, s->user == USER_SERVICE
					     ? (struct stage_cap[]){ { 0, NULL } }
					     : s->caps);
		fprintf(f, " | %s |\n", s->job);
	}
	fputs("| supervise | cpa-supervise | root | every stage's, to hand "
	      "them down; ", f);
	print_cap_reasons(f, supervisor_caps);
	fputs(" | starts, watches and restarts the stages |\n", f);
}
