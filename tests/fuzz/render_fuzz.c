/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for cpa-render's input and output: any bytes, as folded
 * text or as a cpa stream, through the frame tree and each format's
 * accumulator into every format (read once for each, as each keeps what
 * it needs of the input). The first byte picks options (reverse, flame
 * chart, inverted, minwidth in percent, on-CPU only, labels, profiles by
 * process), the rest is the input.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct render_opts o = {
		.unit = -1, .kind = -1, .width = 1200, .frame_height = 16,
		.minwidth = 0.1, .top = 5,
	};
	struct profile p;
	char path[64];

	if (size < 1)
		return 0;
	o.reverse = data[0] & 1;
	o.flamechart = data[0] & 2;
	o.inverted = data[0] & 4;
	o.minwidth_pct = data[0] & 8;
	o.skip_bad = data[0] & 16;
	if (data[0] & 64)	/* on-CPU samples alone */
		o.kind = 0;
	o.by_process = data[0] & 128;
	if (data[0] & 32) {
		char err[64];
		cpa_labels_parse("comm,pid,tid,thread,container,env,cpu",
				 &o.labels, err, sizeof(err));
	} else {
		cpa_labels_default(&o.labels);
	}
	data++;
	size--;

	int fd = memfd_create("render-fuzz", 0);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET)) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	o.input = path;
	static const struct {
		enum render_format_id id;
		const struct render_format *format;
	} formats[] = {
		{ FORMAT_SVG, &svg_format }, { FORMAT_HTML, &html_format },
		{ FORMAT_TEXT, &text_format }, { FORMAT_FOLDED, &folded_format },
		{ FORMAT_SPEEDSCOPE, &speedscope_format },
		{ FORMAT_PPROF, &pprof_format },
	};
	for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++) {
		/* a flame chart is an svg; pprof takes any profile */
		if (o.flamechart && formats[i].id != FORMAT_SVG &&
		    formats[i].id != FORMAT_PPROF)
			continue;
		o.format = formats[i].id;
		if (input_read(&p, &o, formats[i].format) < 0)
			continue;
		if (tree_finish(&p.tree) && p.tree.total[TREE_ROOT]) {
			int out = open("/dev/null", O_WRONLY);
			if (out >= 0) {
				render_write(out, &p, &o);
				if (p.format->write_fd)
					close(out);
			}
		}
		profile_free(&p);
	}
	close(fd);
	return 0;
}
