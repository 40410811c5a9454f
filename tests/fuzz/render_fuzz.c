/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for cpa-render's input and output: any bytes, as folded
 * text or as a cpa stream, through the frame tree into every format.
 * The first byte picks options (reverse, flame chart, inverted, minwidth
 * in percent, labels), the rest is the input.
 */
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
	if (data[0] & 64)	/* speedscope keeps tasks apart, by thread */
		o.format = FORMAT_SPEEDSCOPE;
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
	if (input_read(&p, &o, true) == 0) {
		if (o.flamechart && p.from_stream)
			flamechart_build(&p);
		if (tree_finish(&p.tree) && p.tree.total[TREE_ROOT]) {
			FILE *f = fopen("/dev/null", "w");
			if (f) {
				svg_write(f, &p, &o);
				if (!o.flamechart) {
					html_write(f, &p, &o);
					text_write(f, &p, &o);
					folded_write(f, &p, &o);
					speedscope_write(f, &p, &o);
				}
				fflush(f);
				pprof_write(fileno(f), &p, &o);
				fclose(f);
			}
		}
		profile_free(&p);
	}
	close(fd);
	return 0;
}
