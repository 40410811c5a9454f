// SPDX-License-Identifier: MIT
/* Per-record work: raw samples to symbolized samples, task and mapping
 * records to per-process state. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "jvmwalk.h"
#include "log.h"
#include "node.h"
#include "python.h"
#include "unwind.h"

static void intern_fixed_names(struct unwinder *u);

void unwinder_init(struct unwinder *u, const struct unwind_opts *opts,
		   struct output *out)
{
	memset(u, 0, sizeof(*u));
	u->opts = *opts;
	u->out = out;
	u->cache = elfcache_new(opts->max_cache, opts->max_object);
	if (!u->cache)
		cpa_die("out of memory");
	elfcache_set_debug(u->cache, opts->debug_dir ? opts->debug_dir
						      : DEBUG_DIR_DEFAULT,
			   opts->fetch);
	/* a recording's loads read the inlined instances at once; a live
	 * stream's later, for the objects it samples much (frames.c) */
	elfcache_set_inlines(u->cache, !opts->inline_frames ? ELFOBJ_INLINES_OFF
				       : opts->load_wait_ns == LOAD_WAIT_FOREVER
					       ? ELFOBJ_INLINES_NOW
					       : ELFOBJ_INLINES_LATER);
	u->procs = proctab_new(u->cache, opts->max_procs, opts->max_cache);
	u->cgroups = cgroups_new(NULL);
	u->allocs = allocs_new(opts->max_allocs);
	if (opts->java_attach)
		u->jvm = jvm_attacher_new();
	perfmap_set_wait(opts->load_wait_ns);
	u->have_ksyms = kallsyms_load(&u->ksyms, opts->kallsyms) == 0;
	if (!u->have_ksyms)
		cpa_warn("%s: no kernel symbols (not readable, or all "
			 "addresses hidden): kernel frames will be [unknown]_[k]",
			 opts->kallsyms ? opts->kallsyms : "/proc/kallsyms");
	intern_fixed_names(u);
	u->st.start_ns = cpa_mono_ns();
}

/* Ids of the names every sample may need, interned once per dictionary. */
static void intern_fixed_names(struct unwinder *u)
{
	u->id_truncated = output_string(u->out, "[truncated]", 11);
	u->id_unknown = output_string(u->out, "[unknown]", 9);
	u->id_unknown_k = output_string(u->out, "[unknown]_[k]", 13);
	u->id_unknown_py = output_string(u->out, "[unknown]_[py]", 14);
	u->id_v8_entry = output_string(u->out, NODE_INTERPRETER_ENTRY,
				       sizeof(NODE_INTERPRETER_ENTRY) - 1);
}

void unwinder_free(struct unwinder *u)
{
	jvm_attacher_free(u->jvm);
	proctab_free(u->procs);
	perfmap_loader_stop();
	cgroups_free(u->cgroups);
	allocs_free(u->allocs);
	elfcache_free(u->cache);
	kallsyms_free(&u->ksyms);
}

static uint32_t label_id(struct unwinder *u, const char *s, size_t cap)
{
	return output_string(u->out, s, strnlen(s, cap));
}

void unwind_flush_alloc_lost(struct unwinder *u)
{
	struct cpa_lost l = {
		.time_ns = cpa_now_ns(),
		.count = u->alloc_lost,
		.reason = CPA_LOST_ALLOC_TABLE,
		.cpu = UINT32_MAX,
	};

	if (!u->alloc_lost)
		return;
	output_lost(u->out, &l);
	u->alloc_lost = 0;
}

/* A free comes without a stack: it is given its allocation's stack and
 * labels, at its own time, with its own weight. */
static void unwind_free(struct unwinder *u, const struct cpa_raw_sample *s)
{
	struct cpa_sample out;

	if (!allocs_take(u->allocs, s->alloc_id, s->kind, &out)) {
		u->st.frees_unknown++;
		u->alloc_lost++;
		return;
	}
	out.time_ns = s->time_ns;
	out.weight = s->weight;
	out.flags = (uint16_t)((out.flags & ~CPA_FLAG_ESTIMATE) |
			       CPA_FLAG_FREE |
			       (s->flags & CPA_FLAG_ESTIMATE));
	output_sample(u->out, &out);
	u->st.frees++;
}

/* The sample's named frames into ids, root first, at most room. */
static unsigned named_frames(struct unwinder *u,
			     const struct cpa_raw_sample *s, uint32_t *ids,
			     unsigned room)
{
	const char *name[CPA_MAX_NAMED_FRAMES];
	uint16_t len[CPA_MAX_NAMED_FRAMES];
	size_t pos = 0;
	unsigned n = s->n_named < room ? s->n_named : room;

	for (unsigned i = 0; i < s->n_named; i++)
		name[i] = cpa_named_frame(s->named, &pos, &len[i]);
	/* what does not fit is the root end */
	for (unsigned i = 0; i < n; i++)
		ids[i] = output_string(u->out, name[n - 1 - i], len[n - 1 - i]);
	return n;
}

/* Whether value is one of the comma-separated list. */
static bool env_listed(const char *list, const char *value)
{
	if (!value)
		return false;
	size_t n = strlen(value);
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (k == n && !strncmp(p, value, n))
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

int unwind_raw_sample(struct unwinder *u, const struct cpa_record *rec,
		      char *err, size_t errlen)
{
	struct cpa_raw_sample s;
	if (cpa_decode_raw_sample(rec, &s, u->snapshot, err, errlen) < 0)
		return -1;
	if ((s.flags & CPA_RAW_ALLOC_ID) && (s.flags & CPA_FLAG_FREE)) {
		unwind_free(u, &s);
		return 0;
	}
	uint64_t t0 = cpa_mono_ns();
	u->now_ns = t0;
	u->sample_rt_ns = s.time_ns;
	elfcache_set_deadline(u->cache, t0 + u->opts.load_wait_ns);
	u->st.raw_samples++;
	if (u->have_ksyms)
		kallsyms_refresh(&u->ksyms, t0);
	jvm_attacher_poll(u->jvm, u->procs, t0);

	struct proc *p = NULL;
	if (s.pid) {
		p = proctab_get(u->procs, s.pid);
		if (p->nmaps == 0)
			proc_read_maps(u->procs, p, t0, !p->proc_read);
		if (u->opts.env_keys)
			proc_read_env(p, u->opts.env_keys);
		proc_read_owner(p);
	}
	/* --env-values (CPA's --parse_env_values): the user stack of a
	 * process whose env label is not listed is not unwound at all */
	bool user = !u->opts.env_values ||
		    env_listed(u->opts.env_values, p ? p->env : NULL);
	if (!user) {
		s.n_user = 0;
		s.stack_len = 0;
		s.flags &= (uint16_t)~(CPA_RAW_PY_FRAMES | CPA_RAW_NAMED_FRAMES);
	}
	/* a JVM: its layout, for unwinding and naming its code cache */
	bool jcode = user && p && u->jvm && jvm_is_jvm(p) &&
		     jvm_prepare(u->jvm, u->procs, p, t0, u->opts.load_wait_ns);
	bool python = p && (s.flags & CPA_RAW_PY_FRAMES);
	if (python)
		python_read_codes(u, p, &s);

	/* A snapshot of the whole stack comes without the kernel's FP
	 * chain: the same chain is in the snapshot. */
	if (s.n_user == 0 && s.stack_len)
		s.n_user = (uint16_t)walk_fp(&s, s.user_ips, CPA_MAX_FRAMES);
	/* The user chain: DWARF walk of the snapshot and/or the FP chain
	 * the capture recorded, chosen per sample (bestof.c). */
	const uint64_t *ips = s.user_ips;
	unsigned nips = s.n_user;
	enum chain_choice choice = nips ? CHOSE_FP : CHOSE_NONE;
	if (p && u->opts.mode != UNWIND_FP && s.stack_len && s.n_regs > CPA_REG_BP) {
		walk_dwarf(u->procs, p, &s, &u->dwarf);
		if (u->opts.mode == UNWIND_BEST)
			splice_fp(&u->dwarf, s.user_ips, s.n_user,
				  s.regs[CPA_REG_BP]);
		u->st.walk_end[u->dwarf.end]++;
		u->st.fp_steps += u->dwarf.fp_steps;
		choice = u->opts.mode == UNWIND_DWARF
				 ? CHOSE_DWARF
				 : choose_chain(u, p, &u->dwarf, s.user_ips,
						s.n_user);
	}
	if (choice == CHOSE_DWARF) {
		ips = u->dwarf.ips;
		nips = u->dwarf.n;
		u->st.dwarf_frames += nips;
		if (walk_complete(&u->dwarf))
			root_tails_learn(u, p, ips, nips);
	} else if (choice == CHOSE_FP && p && !s.stack_len) {
		nips = root_tails_complete(p, s.user_ips, nips, CPA_MAX_FRAMES);
		s.n_user = (uint16_t)nips;
	}
	u->st.chose[choice]++;

	uint32_t n = 0, max = CPA_MAX_STACK_DEPTH;
	/* a chain that does not reach its thread's first frame says so */
	bool cut = nips && !chain_whole(u, p, choice, &u->dwarf, s.user_ips,
					s.n_user);
	/* a JVM walked by its own layout is trusted; its FP chain, or one
	 * walked without it, only where frame pointers are kept */
	bool jwalk = jcode && choice == CHOSE_DWARF;
	if (p && nips && u->jvm && !jwalk && jvm_is_jvm(p)) {
		unsigned keep = jvm_trusted_frames(p, ips, nips, t0);
		cut |= keep < nips;
		nips = keep;
	}
	/* what does not fit is the root end, and the chain is cut */
	if (nips + 1 + s.n_kernel > max) {
		nips = max - 1 - s.n_kernel;
		cut = true;
	}
	if (cut ||
	    (python && (s.py_flags & (CPA_PY_TRUNCATED | CPA_PY_BROKEN)))) {
		u->frames[n++] = u->id_truncated;
		u->st.truncated++;
	}
	/* root first: the user chain from its outermost frame, then the
	 * kernel chain on top of it */
	/* interpreted Java methods, named by the Method* their frames hold:
	 * found by the walk, or along the frame pointers */
	bool interp = p && u->jvm && !jwalk && jvm_is_jvm(p) &&
		      jvm_interp_fps(u, p, &s, ips, nips, u->jfp);
	if (python)	/* the interpreter's frames in place (python.c) */
		n += python_splice(u, p, &s, ips, nips, u->frames + n,
				   max - n - s.n_kernel);
	for (unsigned i = python ? 0 : nips; i-- > 0;) {
		uint64_t pc = i ? ips[i] - 1 : ips[i];
		if (jcode && jvm_in_code(p, pc)) {
			/* an interpreted frame's Method*: from the walk, or
			 * along the frame pointers */
			uint64_t m = jwalk ? u->dwarf.method[i] : 0;
			if (!m && interp && u->jfp[i])
				m = jvm_interp_method(p, &s, u->jfp[i]);
			unsigned k = jvm_code_frames(u, p, ips[i], i == 0, m,
						     u->frames + n,
						     max - n - s.n_kernel);
			if (k) {
				n += k;
				continue;
			}
		}
		uint32_t id = interp && u->jfp[i]
				      ? jvm_interp_frame(u, p, &s, u->jfp[i])
				      : 0;
		struct frame_at at = {0};
		u->frames[n++] = id ? id
				    : frame_user(u, p, ips[i], i == 0, NULL, &at);
		if (at.obj && n + s.n_kernel < max) {
			unsigned k = frame_inlined(u, &at, u->frames + n,
						   max - n - s.n_kernel);
			n += k;
			u->st.inline_frames += k;
		}
	}
	/* frames the capture named (a JVMTI agent's Java stack), leaf
	 * first in the record */
	if (s.flags & CPA_RAW_NAMED_FRAMES)
		n += named_frames(u, &s, u->frames + n, max - n - s.n_kernel);
	for (unsigned i = s.n_kernel; i-- > 0;)
		u->frames[n++] = frame_kernel(u, s.kernel_ips[i]);
	u->st.frames_out += n;

	const char *leader = s.pcomm[0] ? s.pcomm : s.comm;
	/* the owner: its cgroup path, from which container and pod are
	 * read (lib/format/owner.h): the v2 path of the sample's cgroup id, or the
	 * v1 one that names the process's container (proc_read_owner) */
	const char *cg = p && p->owner_path
				 ? p->owner_path
				 : cgroups_path(u->cgroups, s.cgroup_id, t0);
	struct cpa_sample out = {
		.time_ns = s.time_ns,
		.weight = s.weight,
		.cgroup_id = s.cgroup_id,
		.pid = s.pid,
		.tid = s.tid,
		.cpu = s.cpu,
		.kind = s.kind,
		/* the id pairs frees with this allocation here; a symbolized
		 * sample never carries it, nor how its stack was read */
		.flags = (uint16_t)(s.flags & CPA_SAMPLE_FLAGS),
		.stack_id = output_stack(u->out, u->frames, n),
		.comm_id = label_id(u, leader, CPA_COMM_LEN),
		.thread_id = label_id(u, s.comm, CPA_COMM_LEN),
		.container_id = cg ? output_string(u->out, cg, strlen(cg)) : 0,
		.env_id = p && p->env ? output_string(u->out, p->env,
						     strlen(p->env))
				      : 0,
	};
	output_sample(u->out, &out);
	if ((s.flags & CPA_RAW_ALLOC_ID) && cpa_kind_nets(s.kind)) {
		unsigned evicted = allocs_add(u->allocs, s.alloc_id, &out);

		u->st.allocs_evicted += evicted;
		u->alloc_lost += evicted;
	}
	/* Between samples, no id is held but the allocations' (which are
	 * interned again): the one safe point to start the dictionaries
	 * over when they outgrow their bound. */
	if (output_dict_bytes(u->out) > u->opts.max_dict) {
		allocs_before_reset(u->allocs, u->out);
		output_reset(u->out);
		allocs_after_reset(u->allocs, u->out);
		elfcache_forget_out_ids(u->cache);
		if (u->have_ksyms)
			memset(u->ksyms.out_ids, 0,
			       (u->ksyms.syms.n ? u->ksyms.syms.n : 1) *
				       sizeof(*u->ksyms.out_ids));
		intern_fixed_names(u);
		u->dict_resets++;
	}
	uint64_t took = cpa_mono_ns() - t0;
	stats_record_latency(&u->st, took);
	if (u->opts.bench_ns && choice == CHOSE_DWARF)
		stats_record_bench(&u->st, took);
	return 0;
}

/* A forked child starts with its parent's mappings. */
static void copy_mappings(struct unwinder *u, struct proc *child,
			  struct proc *parent)
{
	for (uint32_t i = 0; i < parent->nmaps; i++) {
		const struct mapping *m = &parent->maps[i];
		proc_add_mapping(u->procs, child, m->start, m->end, m->pgoff,
				 m->path, strlen(m->path), m->inode, m->build_id,
				 m->build_id_len);
	}
	child->have_records = parent->have_records;
}

int unwind_task(struct unwinder *u, const struct cpa_record *rec, char *err,
		size_t errlen)
{
	struct cpa_task t;
	if (cpa_decode_task(rec, &t, err, errlen) < 0)
		return -1;
	u->st.tasks++;
	switch (t.event) {
	case CPA_TASK_EXIT:
		if (t.pid == t.tid)
			proctab_remove(u->procs, t.pid);
		break;
	case CPA_TASK_EXEC: {
		struct proc *p = proctab_find(u->procs, t.pid);
		if (p) {
			proc_clear_mappings(u->procs, p);
			proc_forget_read(p);
			proc_drop_caches(p);
			jvm_proc_free(&p->jvm);
			p->n_tails = 0;	/* another image's roots */
		}
		break;
	}
	case CPA_TASK_FORK: {
		if (t.pid != t.tid || t.pid == t.ppid)
			break;	/* a new thread shares its process's state */
		struct proc *parent = proctab_find(u->procs, t.ppid);
		if (parent && parent->nmaps) {
			struct proc *child = proctab_get(u->procs, t.pid);
			if (child->nmaps == 0)
				copy_mappings(u, child, parent);
		}
		break;
	}
	default:
		break;
	}
	proctab_trim(u->procs);
	return 0;
}

int unwind_mmap(struct unwinder *u, const struct cpa_record *rec, char *err,
		size_t errlen)
{
	struct cpa_mmap m;
	if (cpa_decode_mmap(rec, &m, err, errlen) < 0)
		return -1;
	u->st.mmaps++;
	if (!m.pid || !m.len || m.start + m.len < m.start)
		return 0;
	struct proc *p = proctab_get(u->procs, m.pid);
	p->have_records = true;
	proc_add_mapping(u->procs, p, m.start, m.start + m.len, m.pgoff, m.path,
			 m.path_len, m.inode, m.build_id, m.build_id_len);
	proctab_trim(u->procs);
	return 0;
}
