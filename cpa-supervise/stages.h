/* SPDX-License-Identifier: MIT */
/*
 * The stage table: every program cpa-supervise runs, with what it reads,
 * the capabilities it keeps and why, the user it runs as, its statistics
 * file and what happens when it ends. It is the one statement of those
 * policies: `cpa monitor`, one-shot profiles, `cpa show` and cpa-serve's
 * jobs all start their stages from it, `cpa-supervise --stages` prints it
 * for the tests that compare running stages with it
 * (tests/bats/supervise.bats), and docs/security.md's privilege table is
 * `cpa-supervise --stages=markdown`, checked by the same suite.
 *
 * A new stage is a row here (and a man page entry): its tool must take
 * --check (parse the options, exit 0 or 2), and --stats-file and
 * --stats-interval when it names a statistics file.
 */
#ifndef CPA_SUPERVISE_STAGES_H
#define CPA_SUPERVISE_STAGES_H

#include <stdbool.h>
#include <stdio.h>

#define STAGE_MAX_CAPS 8

/* Where its standard input comes from. */
enum stage_input {
	INPUT_NONE,	/* /dev/null: it starts a chain */
	INPUT_PREVIOUS,	/* a pipe from the stage given before it */
};

/* The user it runs as when started by root. */
enum stage_user {
	USER_ROOT,	/* root, holding only the capabilities below */
	USER_SERVICE,	/* the service user (--user, default cpa), none */
};

/* What a resident run does when it ends (runs with --once never
 * restart). */
enum stage_restart {
	RESTART_CHAIN,	/* its chain is stopped and started again */
	RESTART_NEVER,	/* the run ends */
};

struct stage_cap {
	int cap;		/* CAP_... */
	const char *why;	/* NULL ends the list */
};

struct stage {
	const char *name;	/* as --stage=NAME gives it */
	const char *tool;	/* the program, found by cpa_find_tool */
	const char *job;	/* one line for the docs */
	enum stage_input input;
	enum stage_user user;
	struct stage_cap caps[STAGE_MAX_CAPS];
	const char *stats;	/* its statistics file in the run directory */
	/* the option naming the directory it writes, made for its user
	 * before it starts ("--dir="), or NULL */
	const char *dir_opt;
	/* the option that bounds its run ("--duration="): it is given the
	 * time left of the run's --duration at each start, and its clean end
	 * then is the run's end */
	const char *deadline_opt;
	enum stage_restart restart;
};

extern const struct stage stages[];
extern const unsigned n_stages;

/* What cpa-supervise itself keeps beyond its stages' capabilities, which
 * it must hold to hand them down. */
extern const struct stage_cap supervisor_caps[];

const struct stage *stage_find(const char *name);
/* The capabilities a stage keeps, ended by -1 (none for USER_SERVICE). */
void stage_cap_list(const struct stage *s, int out[STAGE_MAX_CAPS + 1]);
/* The supervisor's own set: every stage's and supervisor_caps; -1 ends. */
void supervisor_cap_list(int out[64]);

/* --stages: one line per stage, "NAME TOOL CAPS MASK USER STATS RESTART":
 * CAPS comma-separated or "-", MASK in hex as /proc/PID/status shows the
 * sets; the supervisor last, as "supervise". */
void stages_print(FILE *f);
/* --stages=markdown: docs/security.md's table. */
void stages_print_markdown(FILE *f);

#endif
