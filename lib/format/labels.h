/* SPDX-License-Identifier: MIT */
/* Layer lib/format, the wire and file formats: uses lib/base alone;
 * lib/analysis and the tools may use it (lib/local.mk holds them to this). */
/*
 * Root labels of a folded line, in the order the user asks with --labels:
 * comm, pid, tid, thread, container, env, cpu. The marker frame of the
 * event kind ("off-CPU blocked", ...) comes before them; on-CPU has none.
 * Default: comm.
 *
 *   comm       process (group leader) name, as is
 *   pid        "[pid 1234]"       tid   "[tid 1235]"
 *   thread     "[thread NAME]"    cpu   "[cpu 3]"
 *   container  "[container ID]": read from the cgroup path (lib/format/owner.h),
 *              or a container name recorded as is
 *   pod        "[pod UID]"        cgroup "[cgroup PATH]"
 *   env        "[env VALUE]"
 *   process    "process PID:COMM", HUATUO's profiler's root
 *   kind       not a label: where the event kind's marker goes among them
 *              (default first; "process,kind" is HUATUO's order)
 *   cpa        CPA's metadata string, "COMM(15)GROUP_COMM(15)-CGROUP-CPU-PID|ENV"
 *              (ENV SYSTEM when none), as CPA's show --show_raw prints it
 * A label whose value is missing (no env recorded) is left out.
 */
#ifndef CPA_LABELS_H
#define CPA_LABELS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "stream.h"
#include "symstream.h"

enum cpa_label {
	CPA_LABEL_COMM,
	CPA_LABEL_PID,
	CPA_LABEL_TID,
	CPA_LABEL_THREAD,
	CPA_LABEL_CONTAINER,
	CPA_LABEL_ENV,
	CPA_LABEL_CPU,
	CPA_LABEL_POD,
	CPA_LABEL_CGROUP,
	CPA_LABEL_CPA,
	CPA_LABEL_PROCESS,
};

#define CPA_LABELS_MAX 8

struct cpa_labels {
	unsigned n;
	enum cpa_label order[CPA_LABELS_MAX];
	unsigned kind_at;	/* the marker goes before order[kind_at] */
};

/* "comm,pid,cpu" or "none". 0, or -1 with err naming the bad word. */
int cpa_labels_parse(const char *spec, struct cpa_labels *out, char *err,
		     size_t errlen);
void cpa_labels_default(struct cpa_labels *out);

/*
 * The root frames of a sample, root first: the event kind's marker, then
 * each label that has a value, as fn(tag, value): tag NULL for the
 * marker and comm, else "pid", "thread", ... for a frame "[tag value]".
 */
typedef void (*cpa_root_fn)(const char *tag, const char *value, void *ctx);
void cpa_sample_roots(const struct cpa_labels *labels, const struct cpa_dict *d,
		      const struct cpa_sample *s, cpa_root_fn fn, void *ctx);

/*
 * Writes the folded line of a symbolized sample to f:
 * marker;labels;frames... weight\n. Frames come from d. Returns 0 or -1
 * when the sample names an undefined id.
 */
int cpa_folded_write_sample(FILE *f, const struct cpa_labels *labels,
			    const struct cpa_dict *d,
			    const struct cpa_sample *s);

#endif
