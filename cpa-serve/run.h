/* SPDX-License-Identifier: MIT */
/*
 * The unprivileged tools the server itself runs (cpa-render for a job's
 * results, cpa-query for history, cpa-capture --features), found next to
 * cpa-serve as scripts/cpa finds them, and run without a shell.
 */
#ifndef CPA_SERVE_RUN_H
#define CPA_SERVE_RUN_H

#include <stddef.h>

#include "buf.h"
#include "child.h"

/* The path of tool NAME: beside this program, in the build tree, else
 * the first on PATH. Never NULL (the bare name when nowhere). */
const char *run_tool(const char *name);

struct run_result {
	struct cpa_buf out;	/* stdout, unless written to a file */
	char err[512];		/* the last line a stage wrote on stderr */
	int status[2];		/* wait statuses */
	enum cpa_limit_hit hit;	/* the bound that stopped it, if one did */
	bool over;		/* its output passed max */
};

/*
 * Runs argv1, piped into argv2 when not NULL, both under lim (NULL: no
 * bound; the wall time covers the whole pipeline), and waits for both.
 * argv1 reads in_fd (-1: /dev/null).
 * Their stdout goes to out_fd when >= 0, else into r->out, at most max
 * bytes (past that both are killed: "output over N bytes"). 0 when every
 * stage exited 0; -1 with r->err saying why otherwise.
 */
int run_pipeline(char *const *argv1, char *const *argv2, int in_fd,
		 int out_fd, size_t max, const struct cpa_limits *lim,
		 struct run_result *r);
void run_result_free(struct run_result *r);

#endif
