/* SPDX-License-Identifier: MIT */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "outfile.h"

/* The temporary file to remove should the process end before commit:
 * set while one is open, read by the signal handler. */
static char *volatile pending;
static bool handlers_set;

static void remove_pending(void)
{
	char *p = pending;

	if (p)
		unlink(p);
}

static void on_fatal(int sig)
{
	remove_pending();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void set_handlers(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction sa, old;

	if (handlers_set)
		return;
	handlers_set = true;
	atexit(remove_pending);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		/* a signal the program handles or ignores is its own */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_DFL)
			sigaction(sigs[i], &sa, NULL);
	}
}

int cpa_outfile_open(struct cpa_outfile *o, const char *path, int mode,
		     char *err, size_t errlen)
{
	struct stat sb;
	size_t n = strlen(path) + 32;

	memset(o, 0, sizeof(*o));
	o->path = cpa_strdup(path);
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		o->fd = open(path, O_WRONLY | O_CLOEXEC);
		if (o->fd < 0)
			goto fail;
		return 0;
	}
	o->tmp = cpa_malloc(n);
	snprintf(o->tmp, n, "%s.tmp.%d", path, (int)getpid());
	o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		     (mode_t)mode);
	if (o->fd < 0)
		goto fail;
	set_handlers();
	pending = o->tmp;
	return 0;
fail:
	cpa_fail_errno(err, errlen, errno, "%s", path);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	return -1;
}

static void forget(struct cpa_outfile *o)
{
	pending = NULL;
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

int cpa_outfile_commit(struct cpa_outfile *o, char *err, size_t errlen)
{
	int rc = 0;

	if (o->fd >= 0 && close(o->fd) < 0)
		rc = cpa_fail_errno(err, errlen, errno, "%s", o->path);
	else if (o->tmp && rename(o->tmp, o->path) < 0)
		rc = cpa_fail_errno(err, errlen, errno, "%s", o->path);
	if (rc && o->tmp)
		unlink(o->tmp);
	forget(o);
	return rc ? -1 : 0;
}

void cpa_outfile_abort(struct cpa_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->tmp)
		unlink(o->tmp);
	forget(o);
}
