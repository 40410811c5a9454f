/* SPDX-License-Identifier: MIT */
/*
 * The output formats by --format, and writing a profile in its format: a
 * new format is a file with its struct render_format and a line here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "render.h"

const struct render_format *render_format_of(const struct render_opts *o)
{
	switch (o->format) {
	case FORMAT_HTML: return &html_format;
	case FORMAT_PPROF: return &pprof_format;
	case FORMAT_TEXT: return &text_format;
	case FORMAT_FOLDED: return &folded_format;
	case FORMAT_SPEEDSCOPE: return &speedscope_format;
	case FORMAT_SVG: break;
	}
	return &svg_format;
}

int render_write(int fd, struct profile *p, const struct render_opts *o)
{
	const struct render_format *fmt = p->format;
	const char *name = o->output ? o->output : "<stdout>";
	int rc;

	if (fmt->write_fd)
		return fmt->write_fd(fd, p, o);
	FILE *f = fdopen(fd, "w");
	if (!f)
		cpa_die("fdopen: %s", strerror(errno));
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	rc = fmt->write(f, p, o);
	if (fflush(f) != 0 || ferror(f)) {
		cpa_err("%s: write: %s", name, strerror(errno));
		rc = -1;
	}
	if (fclose(f) && rc >= 0) {
		cpa_err("%s: write: %s", name, strerror(errno));
		rc = -1;
	}
	return rc;
}
