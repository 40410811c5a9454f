/* SPDX-License-Identifier: MIT */
/* Layer lib/base, the primitives: uses libc alone; every other layer
 * and every tool may use it (lib/local.mk holds the layers to this). */
/*
 * An output file that appears whole or not at all: written under a
 * temporary name beside it, renamed over it once complete, removed when
 * the writer fails or is interrupted. A profile cut short never leaves an
 * empty or half file where a good one was expected.
 *
 * Rules: a path that exists and is not a regular file (a FIFO,
 * /dev/stdout, a terminal) is written in place, as there is nothing to
 * rename over. The temporary file is removed at exit and on SIGINT,
 * SIGTERM, SIGHUP and SIGPIPE too (the signal then does what it would
 * have done); one file at a time per process.
 */
#ifndef CPA_OUTFILE_H
#define CPA_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>

struct cpa_outfile {
	int fd;
	char *path;	/* as given */
	char *tmp;	/* NULL when written in place */
};

/* Creates the temporary file (mode less the umask): 0, or -1 with
 * "PATH: reason" in err. */
int cpa_outfile_open(struct cpa_outfile *o, const char *path, int mode,
		     char *err, size_t errlen);
/* Closes the file and renames it into place: 0, or -1 with the reason
 * (the temporary file is then removed). A writer that closed fd itself
 * (fclose of its FILE) sets it to -1 first. */
int cpa_outfile_commit(struct cpa_outfile *o, char *err, size_t errlen);
/* Closes and removes the temporary file. */
void cpa_outfile_abort(struct cpa_outfile *o);

#endif
