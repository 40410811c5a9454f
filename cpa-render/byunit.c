/* SPDX-License-Identifier: MIT */
/*
 * A profile of several units, the one policy (render.h, enum
 * render_units): a range holding on-CPU samples and off-CPU nanoseconds,
 * say, is never refused. Folded text keeps every kind under its root
 * marker, pprof a column per unit; a graph has one unit, so svg, html
 * and speedscope draw one graph per unit and text writes one report per
 * unit. The input is read once per unit (a pipe spooled to a temporary
 * file, or memory, first), each pass exactly what --kind of that unit's
 * kinds would have drawn: the lowest unit (samples, ns, count, bytes, pages) goes to
 * the output, each other unit's graph to NAME.UNIT.EXT beside it
 * (--unit-files NAME.EXT, or -o's name).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "io.h"
#include "log.h"
#include "outfile.h"
#include "render.h"

/* NAME.EXT with .UNIT before its extension: cpa.svg -> cpa.ns.svg. */
static char *unit_file(const char *base, enum cpa_unit u)
{
	const char *slash = strrchr(base, '/');
	const char *dot = strrchr(slash ? slash + 1 : base, '.');
	size_t stem = dot && dot != (slash ? slash + 1 : base)
			      ? (size_t)(dot - base) : strlen(base);
	const char *unit = cpa_unit_name(u);
	size_t len = strlen(base) + strlen(unit) + 2;
	char *out = cpa_malloc(len);
	snprintf(out, len, "%.*s.%s%s", (int)stem, base, unit,
		 base + stem);
	return out;
}

/* A copy of standard input that can be read again: in $TMPDIR, else in
 * memory (a service whose /tmp is read-only). -1 after reporting. */
static int spool_stdin(void)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	int fd = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/cpa-render.XXXXXX", tmp);
		fd = mkostemp(path, O_CLOEXEC);
		if (fd >= 0)
			unlink(path);
	}
	if (fd < 0)
		fd = memfd_create("cpa-render-spool", MFD_CLOEXEC);
	if (fd < 0) {
		cpa_err("%s: cannot spool the input to read it once per unit: "
			"%s", tmp, strerror(errno));
		return -1;
	}
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(0, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			cpa_err("<stdin>: read: %s", strerror(errno));
			close(fd);
			return -1;
		}
		if (n == 0)
			return fd;
		int e = cpa_write_full(fd, buf, (size_t)n);
		if (e < 0) {
			cpa_err("%s: spooling the input: %s", tmp, strerror(-e));
			close(fd);
			return -1;
		}
	}
}

/* Reads one unit's profile (unit_pick) and sums its tree. */
static int read_unit(struct profile *p, struct render_opts *o, int unit)
{
	const char *name = o->input ? o->input : "<stdin>";
	o->unit_picked = unit >= 0;
	o->unit_pick = unit >= 0 ? (enum cpa_unit)unit : CPA_UNIT_SAMPLES;
	uint64_t t0 = cpa_now_ns();
	if (input_read(p, o, render_format_of(o)) < 0)
		return -1;
	uint64_t t1 = cpa_now_ns();
	if (!tree_finish(&p->tree)) {
		cpa_err("%s: total weight overflows 64 bits", name);
		profile_free(p);
		return -1;
	}
	cpa_debug("%s: %u distinct frames, %u names; read and merged in "
		  "%.3f s, totalled and sorted in %.3f s", name, p->tree.n,
		  cpa_strtab_count(p->tree.names), (t1 - t0) / 1e9,
		  (cpa_now_ns() - t1) / 1e9);
	return 0;
}

/* Writes p to the file path (whole or not at all). */
static int write_file(const char *path, struct profile *p,
		      const struct render_opts *o)
{
	struct cpa_outfile of = { .fd = -1 };
	char err[512];
	if (cpa_outfile_open(&of, path, 0644, err, sizeof(err)) < 0) {
		cpa_err("%s", err);
		return -1;
	}
	struct render_opts oo = *o;
	oo.output = path;
	int rc = render_write(of.fd, p, &oo);
	if (!p->format->write_fd)
		of.fd = -1;	/* closed with its FILE */
	if (rc < 0) {
		cpa_outfile_abort(&of);
		return -1;
	}
	if (cpa_outfile_commit(&of, err, sizeof(err)) < 0) {
		cpa_err("%s", err);
		return -1;
	}
	return 0;
}

/* Writes p to the output: -o's file or standard output. */
static int write_output(struct profile *p, const struct render_opts *o)
{
	if (o->output && strcmp(o->output, "-"))
		return write_file(o->output, p, o);
	/* a FILE on standard output would close it: a copy, so that the
	 * next section finds it open */
	int fd = p->format->write_fd ? 1 : dup(1);
	if (fd < 0)
		cpa_die("dup: %s", strerror(errno));
	return render_write(fd, p, o);
}

static int nothing_drawn(const struct profile *p, const struct render_opts *o)
{
	const char *name = o->input ? o->input : "<stdin>";
	if (p->raw)
		cpa_err("%s: %llu raw samples but no symbolized ones: pipe "
			"cpa-capture through cpa-unwind first", name,
			(unsigned long long)p->raw);
	else
		cpa_err("%s: no samples to draw", name);
	return -1;
}

int render_run(struct render_opts *o)
{
	const struct render_format *fmt = render_format_of(o);
	bool by_unit = fmt->units == UNITS_GRAPHS ||
		       fmt->units == UNITS_SECTIONS;
	int spool = -1;
	/* a second unit reads standard input again: from where it started,
	 * or from a copy of a pipe */
	if (by_unit && (!o->input || !strcmp(o->input, "-"))) {
		off_t at = lseek(0, 0, SEEK_CUR);
		if (at < 0) {
			if ((spool = spool_stdin()) < 0)
				return -1;
			at = 0;
		}
		o->input_again = true;
		o->input_fd = spool >= 0 ? spool : 0;
		o->input_off = (uint64_t)at;
	}
	struct profile first;
	if (read_unit(&first, o, -1) < 0)
		goto fail;
	uint32_t units = first.units_seen;
	if (!by_unit || !(units & (units - 1))) {
		int rc = first.tree.total[TREE_ROOT] ? write_output(&first, o)
						     : nothing_drawn(&first, o);
		profile_free(&first);
		if (spool >= 0)
			close(spool);
		return rc;
	}

	/* One pass per unit, written lowest unit first. */
	const char *base = o->unit_files ? o->unit_files
			   : o->output && strcmp(o->output, "-") ? o->output
								  : NULL;
	int rc = 0;
	bool wrote_first = false;
	for (unsigned u = 0; u < 32 && rc == 0; u++) {
		if (!(units >> u & 1))
			continue;
		struct profile p;
		if (u == first.unit) {
			p = first;
			first.tree.names = NULL;	/* moved */
			first.format = NULL;
		} else if (read_unit(&p, o, (int)u) < 0) {
			rc = -1;
			break;
		}
		if (!p.tree.total[TREE_ROOT]) {
			profile_free(&p);
			continue;	/* its weights all netted away */
		}
		if (!wrote_first || fmt->units == UNITS_SECTIONS) {
			/* a blank line between two reports */
			if (wrote_first && cpa_write_full(1, "\n", 1) < 0)
				rc = -1;
			if (rc == 0)
				rc = write_output(&p, o);
			wrote_first = true;
		} else if (base) {
			char *path = unit_file(base, (enum cpa_unit)u);
			rc = write_file(path, &p, o);
			if (rc == 0)
				fprintf(stderr, "%s: wrote %s, the graph in %s "
					"(one graph has one unit)\n",
					cpa_progname(), path, cpa_unit_name(u));
			free(path);
		} else {
			cpa_warn("the %llu %s of the input are not drawn: one "
				 "graph has one unit; -o FILE writes a graph per "
				 "unit, --kind picks one",
				 (unsigned long long)p.tree.total[TREE_ROOT],
				 cpa_unit_name(u));
		}
		profile_free(&p);
	}
	if (first.format)
		profile_free(&first);
	if (rc == 0 && !wrote_first)
		rc = nothing_drawn(&first, o);
	if (spool >= 0)
		close(spool);
	return rc;
fail:
	if (spool >= 0)
		close(spool);
	return -1;
}
