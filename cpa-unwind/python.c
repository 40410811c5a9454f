// SPDX-License-Identifier: MIT
/*
 * Python frames spliced into the native chain (python.h).
 *
 * cpa-capture marks the entry frame of each call of the eval function
 * (3.11+: several Python frames run in one C call), so the k-th group of
 * Python frames from the leaf belongs to the k-th eval function frame from
 * the leaf of the native chain. The eval frame is replaced by its group;
 * a native chain with fewer eval frames than groups gets the outer groups
 * at its outermost eval frame, and one with none (its walk lost them)
 * gets every Python frame at its leaf end. The perf map frames of 3.12's
 * -X perf trampolines ("py::qualname:file.py", one before each eval
 * call) are dropped from a chain the walk named, so nothing is named
 * twice; a process the walker does not know keeps them.
 */
#include <stdio.h>
#include <string.h>

#include "pycode.h"
#include "python.h"
#include "unwind.h"

static uint32_t frame_id(struct unwinder *u, struct proc *p,
			 const struct cpa_py_offsets *o,
			 const struct cpa_py_frame *f)
{
	const struct pycode *pc =
		o ? pycode_get(p, proctab_budget(u->procs), o, f->code) : NULL;
	char buf[2 * PYCODE_MAX_STR * 4 + 64];
	int n;

	if (!pc || !pc->qualname) {
		u->st.py_unknown++;
		return u->id_unknown_py;
	}
	n = snprintf(buf, sizeof(buf), "%s (%s:%d)_[py]", pc->qualname,
		     pc->filename, pycode_line(pc, f->instr));
	return output_string(u->out, buf,
			     n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void python_read_codes(struct unwinder *u, struct proc *p,
		       const struct cpa_raw_sample *s)
{
	const struct cpa_py_offsets *o = cpa_py_offsets(s->py_version);

	for (unsigned i = 0; o && i < s->n_py; i++)
		pycode_get(p, proctab_budget(u->procs), o, s->py[i].code);
}

static bool is_eval_frame(const char *raw)
{
	return raw && !strncmp(raw, "_PyEval_EvalFrameDefault", 24);
}

/* Python frames [from, to) (leaf first), root first into out. */
static unsigned put_group(struct unwinder *u, struct proc *p,
			  const struct cpa_py_offsets *o,
			  const struct cpa_raw_sample *s, unsigned from,
			  unsigned to, uint32_t *out, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = to; i-- > from && n < max;)
		out[n++] = frame_id(u, p, o, &s->py[i]);
	u->st.py_frames += n;
	return n;
}

unsigned python_splice(struct unwinder *u, struct proc *p,
		       const struct cpa_raw_sample *s, const uint64_t *ips,
		       unsigned nips, uint32_t *out, unsigned max)
{
	const struct cpa_py_offsets *o = cpa_py_offsets(s->py_version);
	unsigned ends[CPA_MAX_PY_FRAMES], ngroups = 0, nevals = 0, n = 0;
	bool eval[WALK_MAX_FRAMES];

	/* group g is Python frames [g ? ends[g - 1] : 0, ends[g]) */
	for (unsigned i = 0; i < s->n_py; i++)
		if ((s->py[i].flags & CPA_PY_FRAME_ENTRY) || i + 1 == s->n_py)
			ends[ngroups++] = i + 1;
	if (nips > sizeof(eval))
		nips = sizeof(eval);
	for (unsigned i = 0; i < nips; i++) {
		eval[i] = is_eval_frame(frame_raw_name(u, p, ips[i], i == 0));
		nevals += eval[i];
	}
	/* root first: eval frame k from the leaf is nevals - 1 - k */
	unsigned k = nevals;
	for (unsigned i = nips; i-- > 0 && n < max;) {
		if (!eval[i] || k - 1 >= ngroups) {
			const char *raw;

			k -= eval[i];
			out[n] = frame_user(u, p, ips[i], i == 0, &raw, NULL);
			/* 3.12's -X perf trampolines name the code their eval
			 * call runs, which the walk names already */
			if (!raw || strncmp(raw, "py::", 4))
				n++;
			continue;
		}
		k--;
		unsigned from = k ? ends[k - 1] : 0;
		unsigned to = k + 1 == nevals ? ends[ngroups - 1] : ends[k];
		n += put_group(u, p, o, s, from, to, out + n, max - n);
	}
	if (nevals == 0)	/* the native chain missed them: leaf side */
		n += put_group(u, p, o, s, 0, s->n_py, out + n, max - n);
	return n;
}
