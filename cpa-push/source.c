/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "log.h"
#include "source.h"

/* cpa-query beside this binary (installed), in the build tree's
 * cpa-query/, else on PATH. */
static void find_query(char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(out, len, "%s/cpa-query", self);
			if (!access(out, X_OK))
				return;
			snprintf(out, len, "%s/../cpa-query/cpa-query", self);
			if (!access(out, X_OK))
				return;
		}
	}
	snprintf(out, len, "cpa-query");
}

int source_spawn(const struct push_opts *o, const char *cursor, pid_t *pid)
{
	char query[PATH_MAX + 32];
	find_query(query, sizeof(query));
	const char *argv[12];
	int n = 0;
	argv[n++] = query;
	argv[n++] = "--dir";
	argv[n++] = o->dir;
	argv[n++] = "--follow";
	argv[n++] = "--cursor";
	argv[n++] = cursor;
	if (o->from) {
		argv[n++] = "--from";
		argv[n++] = o->from;
	}
	if (o->once)
		argv[n++] = "--once";
	argv[n] = NULL;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		cpa_die("pipe: %s", strerror(errno));
	pid_t parent = getpid();
	*pid = fork();
	if (*pid < 0)
		cpa_die("fork: %s", strerror(errno));
	if (*pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(0);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(p[1], STDOUT_FILENO) < 0)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "%s: %s: %s\n", cpa_progname(), argv[0],
			strerror(errno));
		_exit(127);
	}
	close(p[1]);
	return p[0];
}
