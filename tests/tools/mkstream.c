/* SPDX-License-Identifier: MIT */
/*
 * mkstream: writes a symbolized cpa stream from a text description, so
 * cpa-render's tests can feed it exact samples without capturing. Test
 * code only; not installed.
 *
 * Input lines (fields separated by single spaces, the stack last):
 *   TIME_NS KIND PID TID CPU COMM THREAD WEIGHT frame;frame;leaf
 *     (KIND may end in +free and +estimate, the sample flags)
 *   lost COUNT [TIME_NS]
 *   raw COUNT        (COUNT unsymbolized samples, as cpa-capture writes)
 *   meta KEY VALUE
 *   container PATH   (the container-or-cgroup label of later samples;
 *                    "container -" for none)
 *   env VALUE        (their env label; "env -" for none)
 *   noend            (leave out the END record: a truncated stream)
 *   flush            (write out what the lines so far made, now: a test
 *                    feeds a reader by steps)
 *   escapes          (from here on, "\xNN" in names, container and env
 *                    values is the byte NN, "\\" a backslash: names
 *                    no writer of cpa would write)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "stream.h"
#include "symstream.h"

static int escapes;

/* Decodes "\xNN" and "\\" in place when escapes are on. */
static char *unescape(char *s)
{
	char *o = s;
	if (!escapes)
		return s;
	for (const char *p = s; *p; p++) {
		unsigned v;
		if (p[0] == '\\' && p[1] == 'x' && sscanf(p + 2, "%2x", &v) == 1) {
			*o++ = (char)v;
			p += 3;
		} else if (p[0] == '\\' && p[1] == '\\') {
			*o++ = *p++;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return s;
}

int main(int argc, char **argv)
{
	struct cpa_symwriter sw;
	char line[65536];
	int end = 1;
	char container[4096] = "", env[4096] = "";
	unsigned long lineno = 0;

	cpa_set_progname(argv[0]);
	if (argc != 1)
		cpa_die_usage("usage: mkstream < description > stream");
	if (cpa_symw_init(&sw, 1) < 0)
		cpa_die("cannot start the stream");
	while (fgets(line, sizeof(line), stdin)) {
		char kind[64], comm[64], thread[64], key[256], val[256];
		unsigned long long t, w, count;
		unsigned pid, tid, cpu;
		int off = 0;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (!strcmp(line, "noend")) {
			end = 0;
			continue;
		}
		if (!strcmp(line, "flush")) {
			if (cpa_writer_flush(&sw.w) < 0)
				cpa_die("write failed");
			continue;
		}
		if (!strcmp(line, "escapes")) {
			escapes = 1;
			continue;
		}
		unsigned long long lt = 0;
		if (sscanf(line, "lost %llu %llu", &count, &lt) >= 1) {
			struct cpa_lost l = { .time_ns = lt, .count = count,
					      .reason = CPA_LOST_RINGBUF,
					      .cpu = UINT32_MAX };
			cpa_write_lost(&sw.w, &l);
			continue;
		}
		if (sscanf(line, "raw %llu", &count) == 1) {
			struct cpa_raw_sample r = { .time_ns = 1, .weight = 1,
						    .pid = 1, .tid = 1 };
			for (unsigned long long i = 0; i < count; i++)
				cpa_write_raw_sample(&sw.w, &r);
			continue;
		}
		if (sscanf(line, "container %4095s", container) == 1) {
			if (!strcmp(container, "-"))
				container[0] = '\0';
			unescape(container);
			continue;
		}
		if (sscanf(line, "env %4095s", env) == 1) {
			if (!strcmp(env, "-"))
				env[0] = '\0';
			unescape(env);
			continue;
		}
		if (sscanf(line, "meta %255s %255s", key, val) == 2) {
			cpa_write_meta(&sw.w, key, unescape(val));
			continue;
		}
		if (sscanf(line, "%llu %63s %u %u %u %63s %63s %llu %n", &t, kind,
			   &pid, &tid, &cpu, comm, thread, &w, &off) != 8 || !off)
			cpa_die("line %lu: expected TIME KIND PID TID CPU COMM "
				"THREAD WEIGHT STACK", lineno);
		uint16_t flags = 0;
		for (char *plus; (plus = strrchr(kind, '+')); *plus = '\0') {
			if (!strcmp(plus, "+free"))
				flags |= CPA_FLAG_FREE;
			else if (!strcmp(plus, "+estimate"))
				flags |= CPA_FLAG_ESTIMATE;
			else
				cpa_die("line %lu: unknown flag '%s'", lineno,
					plus);
		}
		int k = cpa_kind_parse(kind);
		if (k < 0)
			cpa_die("line %lu: unknown kind '%s'", lineno, kind);

		uint32_t frames[CPA_MAX_STACK_DEPTH], n = 0;
		char *save = NULL;
		for (char *f = strtok_r(line + off, ";", &save); f && n < CPA_MAX_STACK_DEPTH;
		     f = strtok_r(NULL, ";", &save))
			frames[n++] = cpa_symw_cstr(&sw, unescape(f));
		struct cpa_sample s = {
			.time_ns = t, .weight = w, .pid = pid, .tid = tid,
			.cpu = cpu, .kind = (uint16_t)k, .flags = flags,
			.stack_id = cpa_symw_stack(&sw, frames, n),
			.comm_id = cpa_symw_cstr(&sw, unescape(comm)),
			.thread_id = cpa_symw_cstr(&sw, unescape(thread)),
			.container_id = container[0] ? cpa_symw_cstr(&sw, container) : 0,
			.env_id = env[0] ? cpa_symw_cstr(&sw, env) : 0,
		};
		cpa_write_sample(&sw.w, &s);
	}
	int rc = end ? cpa_write_end(&sw.w) : cpa_writer_flush(&sw.w);
	if (rc < 0 || sw.w.err)
		cpa_die("write failed");
	cpa_symw_free(&sw);
	return 0;
}
