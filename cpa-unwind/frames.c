// SPDX-License-Identifier: MIT
/*
 * Naming frames. A user address resolves, in order, to: a symbol of the
 * mapped ELF object ("name"), a JIT symbol from the process's perf map
 * ("name_[j]"), or the module and offset ("libfoo.so+0x1a2b", the offset
 * being the ELF virtual address that addr2line takes, or the file offset
 * when the object could not be read); anonymous memory without a JIT
 * symbol reads "[anon:NAME]" or "[anon]". Kernel addresses become
 * "name_[k]".
 * The output string id of each symbol is cached beside it, so a hot frame
 * costs two binary searches and an array read.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inline.h"
#include "intern.h"
#include "log.h"
#include "node.h"
#include "unwind.h"

/* "module+0xOFFSET" */
static uint32_t module_offset(struct unwinder *u, const char *module,
			      uint64_t off)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, module, off);
	if (n < 0)
		return u->id_unknown;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	return output_string(u->out, buf, (size_t)n);
}

/* Mapping of pc, re-reading /proc/PID/maps (rate-limited) on a miss:
 * the process may have loaded a library since. */
static struct mapping *mapping_of(struct unwinder *u, struct proc *p,
				  uint64_t pc)
{
	struct mapping *m = proc_find_mapping(p, pc);
	if (!m && proc_read_maps(u->procs, p, u->now_ns, false) == 0)
		m = proc_find_mapping(p, pc);
	return m;
}

/* Index of pc in p's perf map, or -1: the map is read again when the
 * address was not in it when the sample was taken (perfmap.h). */
static long jit_lookup(struct unwinder *u, struct proc *p, uint64_t pc)
{
	long i = perfmap_refresh(&p->jit, p->pid, u->now_ns) == 0
			 ? symtab_lookup(&p->jit.syms, pc)
			 : -1;
	if (i < 0 && perfmap_missed(&p->jit, p->pid, u->now_ns, u->sample_rt_ns,
				    u->now_ns + u->opts.load_wait_ns)) {
		i = symtab_lookup(&p->jit.syms, pc);
		u->st.jit_late += i >= 0;
	}
	if (p->jit.syms.n && !p->v8_exe_checked)
		node_check_jit(u, p);
	return i;
}

static uint32_t jit_frame(struct unwinder *u, struct proc *p, uint64_t pc,
			  const char **raw)
{
	long i = jit_lookup(u, p, pc);
	/* a JVM writes its map when asked, and again when it has compiled
	 * more. One never asked is asked once even when a map is there
	 * (another tool's, or its own from long ago): the answer also
	 * brings its flags and the layout that names interpreted frames. */
	bool never_asked = !p->jvm.backoff_ms && !p->jvm.refused;
	if ((i < 0 || never_asked) &&
	    jvm_map_missed(u->jvm, p, u->now_ns, u->opts.load_wait_ns)) {
		jvm_attacher_poll(u->jvm, u->procs, u->now_ns);
		long k = jit_lookup(u, p, pc);
		if (k >= 0)
			i = k;
	}
	if (i < 0)
		return 0;
	u->st.jit_frames++;
	const char *name = symtab_name(&p->jit.syms, i);
	if (raw)
		*raw = name;
	size_t len = strlen(name);
	if (jvm_is_jvm(p))
		len = jvm_method_name(name, len, &name);
	char buf[512];
	if (len > sizeof(buf) - 5)
		len = sizeof(buf) - 5;
	memcpy(buf, name, len);
	memcpy(buf + len, "_[j]", 5);
	return output_string(u->out, buf, len + 4);
}

/* Whether the kernel named the anonymous mapping m ("[anon:NAME]",
 * "[anon_shmem:NAME]"): perf's mapping records never carry the name,
 * which a process sets after mapping the memory. */
static bool anon_named(const struct mapping *m)
{
	return !strncmp(m->path, "[anon:", 6) ||
	       !strncmp(m->path, "[anon_shmem:", 12);
}

/*
 * Anonymous executable memory that no perf map names: "[anon:NAME]" with
 * the name the process gave it (prctl PR_SET_VMA_ANON_NAME), else
 * "[anon]". No offset: anonymous addresses differ in every process and
 * run, so an offset would split one region's time into a frame per PC.
 * An unnamed mapping is looked up again in /proc/PID/maps (at most once
 * a second per process), since the name comes after the mapping.
 */
static uint32_t anon_frame(struct unwinder *u, struct proc *p,
			   struct mapping *m, uint64_t pc)
{
	if (!anon_named(m) && proc_read_maps(u->procs, p, u->now_ns, false) == 0)
		m = proc_find_mapping(p, pc);
	if (!m || !anon_named(m))
		return output_string(u->out, "[anon]", 6);
	char buf[128];
	int n = snprintf(buf, sizeof(buf), "%s", m->path);
	if (n < 0)
		return output_string(u->out, "[anon]", 6);
	if ((size_t)n >= sizeof(buf)) {
		n = sizeof(buf) - 1;
		buf[n - 1] = ']';
	}
	return output_string(u->out, buf, (size_t)n);
}

/* Symbol index of pc in the object of m, or -1; *vaddr set when known. */
static long obj_symbol(struct unwinder *u, struct proc *p, struct mapping *m,
		       uint64_t pc, struct elf_obj **objp, uint64_t *vaddr,
		       bool *have_vaddr)
{
	*objp = NULL;
	*have_vaddr = false;
	if (m->kind != MAPPING_FILE && m->kind != MAPPING_VDSO)
		return -1;
	struct elf_obj *o = proc_mapping_obj(u->procs, p, m);
	if (!o)
		return -1;
	*objp = o;
	*have_vaddr = elfobj_vaddr(o, pc - m->start + m->pgoff, vaddr);
	if (!*have_vaddr || !o->syms.n)
		return -1;
	return symtab_lookup(&o->syms, *vaddr);
}

const char *frame_raw_name(struct unwinder *u, struct proc *p, uint64_t ip,
			   bool exact)
{
	uint64_t pc = exact ? ip : ip - 1, vaddr;
	struct mapping *m = proc_find_mapping(p, pc);
	struct elf_obj *o;
	bool have_vaddr;
	if (!m)
		return NULL;
	long i = obj_symbol(u, p, m, pc, &o, &vaddr, &have_vaddr);
	return i >= 0 ? symtab_name(&o->syms, i) : NULL;
}

/*
 * CPA's --disable_sym (--no-symbols): every file-backed frame is its
 * module and offset, no symbol or perf map read; --include_full_path
 * (--full-paths): the module by the path the process maps it from.
 */
static uint32_t frame_raw(struct unwinder *u, struct proc *p,
			  struct mapping *m, uint64_t pc)
{
	if (m->kind == MAPPING_ANON)
		return anon_frame(u, p, m, pc);
	if (m->kind == MAPPING_OTHER)
		return output_string(u->out, m->path, strlen(m->path));
	uint64_t off = pc - m->start + m->pgoff, vaddr;
	struct elf_obj *o = proc_mapping_obj(u->procs, p, m);
	if (o && elfobj_vaddr(o, off, &vaddr))
		off = vaddr;
	return module_offset(u, u->opts.full_paths ? m->path : m->base, off);
}

/* --full-paths: a symbol's frame with its object's path, as CPA writes
 * it, "name [PATH]" (not cached per object: the path is the process's) */
static uint32_t frame_with_path(struct unwinder *u, const char *name,
				const struct mapping *m)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "%s [%s]", name, m->path);
	if (n < 0)
		return u->id_unknown;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	return output_string(u->out, buf, (size_t)n);
}

uint32_t frame_user(struct unwinder *u, struct proc *p, uint64_t ip,
		    bool exact, const char **raw, struct frame_at *at)
{
	uint64_t pc = exact ? ip : ip - 1, vaddr;
	struct elf_obj *o;
	bool have_vaddr;
	uint32_t id;

	if (raw)
		*raw = NULL;
	if (at)
		at->obj = NULL;
	struct mapping *m = p ? mapping_of(u, p, pc) : NULL;
	if (!m) {
		if (p && !u->opts.no_symbols && (id = jit_frame(u, p, pc, raw)))
			return id;
		u->st.unresolved_user++;
		return u->id_unknown;
	}
	if (u->opts.no_symbols) {
		u->st.unresolved_user++;
		return frame_raw(u, p, m, pc);
	}
	long i = obj_symbol(u, p, m, pc, &o, &vaddr, &have_vaddr);
	if (i >= 0) {
		if (raw)
			*raw = symtab_name(&o->syms, i);
		if (at)
			*at = (struct frame_at){o, vaddr, p, m};
		if (o->out_ids[i] == u->id_v8_entry && !p->v8_checked)
			node_check(u, p);
		if (o->out_ids[i])
			return o->out_ids[i];
		if (!o->display[i]) {
			o->display[i] = display_name(symtab_name(&o->syms, i),
						     &u->opts.names);
			elfcache_charge(u->cache, o, strlen(o->display[i]) + 1);
		}
		if (u->opts.full_paths)
			return frame_with_path(u, o->display[i], m);
		id = output_string(u->out, o->display[i],
				   strlen(o->display[i]));
		o->out_ids[i] = id;
		if (id == u->id_v8_entry)
			node_check(u, p);
		return id;
	}
	if (m->kind == MAPPING_ANON) {
		if ((id = jit_frame(u, p, pc, raw)))
			return id;
		u->st.unresolved_user++;
		return anon_frame(u, p, m, pc);
	}
	if (m->kind == MAPPING_OTHER) {
		u->st.unresolved_user++;
		return output_string(u->out, m->path, strlen(m->path));
	}
	u->st.unresolved_user++;
	return module_offset(u, u->opts.full_paths ? m->path : m->base,
			  have_vaddr ? vaddr : pc - m->start + m->pgoff);
}

uint32_t frame_kernel(struct unwinder *u, uint64_t ip)
{
	if (u->have_ksyms) {
		long i = symtab_lookup(&u->ksyms.syms, ip);
		if (i >= 0) {
			if (!u->ksyms.out_ids[i]) {
				const char *n = symtab_name(&u->ksyms.syms, i);
				u->ksyms.out_ids[i] =
					output_string(u->out, n, strlen(n));
			}
			return u->ksyms.out_ids[i];
		}
	}
	u->st.unresolved_kernel++;
	return u->id_unknown_k;
}

/* The output id of name k of o's inlined instances, "name_[i]". */
static uint32_t inlined_name_id(struct unwinder *u, struct elf_obj *o,
				uint32_t k)
{
	struct inline_table *t = &o->inl;
	if (t->out_ids[k])
		return t->out_ids[k];
	if (!t->display[k]) {
		char *disp = display_name(cpa_strtab_get(t->names, k, NULL),
					  &u->opts.names);
		size_t len = strlen(disp);
		char *s = cpa_malloc(len + 5);
		memcpy(s, disp, len);
		memcpy(s + len, "_[i]", 5);
		free(disp);
		t->display[k] = s;
		elfcache_charge(u->cache, o, len + 5);
	}
	t->out_ids[k] = output_string(u->out, t->display[k],
				      strlen(t->display[k]));
	return t->out_ids[k];
}

unsigned frame_inlined(struct unwinder *u, const struct frame_at *at,
		       uint32_t *ids, unsigned max)
{
	struct elf_obj *o = at->obj;
	if (!o)
		return 0;
	/* A live stream reads an object's table once the object has named
	 * INLINE_HOT_FRAMES frames, and goes on without inlined frames until
	 * it is there: on a host whose programs come and go (a build), most
	 * objects are sampled a few times and gone, and reading the DWARF of
	 * each cost more than loading it. (A recording reads it with the
	 * load: sample.c.) */
	if (o->inl_state == INLINE_PENDING &&
	    ++o->inl_frames >= INLINE_HOT_FRAMES) {
		struct elf_src src = mapping_src(at->p, at->m);
		elfcache_queue_inlines(u->cache, o, &src);
	}
	if (!o->inl.nranges)
		return 0;
	unsigned n = inline_chain(&o->inl, at->vaddr, ids, max);
	for (unsigned k = 0; k < n; k++)
		ids[k] = inlined_name_id(u, o, ids[k]);
	return n;
}
