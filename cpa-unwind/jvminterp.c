// SPDX-License-Identifier: MIT
/* Naming Java frames from HotSpot's vmStructs (jvminterp.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "jvmcode.h"
#include "unwind.h"

/* x86-64: interpreter_frame_method_offset, in words below the fp */
#define INTERP_METHOD_OFF 24
#define MAX_NAME 512

/* ---- the sample thread: naming frames --------------------------------- */

static int mem_fd(struct jvm_interp *ji, uint32_t pid)
{
	if (!ji->mem_open) {
		char mem[64];
		snprintf(mem, sizeof(mem), "/proc/%u/mem", pid);
		ji->memfd = open(mem, O_RDONLY | O_CLOEXEC);
		ji->mem_open = true;
	}
	return ji->memfd;
}

int jvm_memfd(struct proc *p)
{
	return mem_fd(&p->jvm.interp, p->pid);
}

/* len bytes of the process's memory at addr: from the sample's stack
 * snapshot when it holds them, else /proc/PID/mem. */
static bool rd(struct jvm_interp *ji, uint32_t pid,
	       const struct cpa_raw_sample *s, uint64_t addr, void *buf,
	       size_t len)
{
	uint64_t sp = s ? s->regs[CPA_REG_SP] : 0;
	if (s && s->stack_len && addr >= sp && addr - sp <= s->stack_len &&
	    s->stack_len - (addr - sp) >= len) {
		memcpy(buf, s->stack + (addr - sp), len);
		return true;
	}
	int fd = mem_fd(ji, pid);
	return fd >= 0 && addr < (1ull << 63) &&
	       pread(fd, buf, len, (off_t)addr) == (ssize_t)len;
}

static bool rd64(struct jvm_interp *ji, uint32_t pid,
		 const struct cpa_raw_sample *s, uint64_t addr, uint64_t *v)
{
	return rd(ji, pid, s, addr, v, 8);
}

/* A Symbol's text, appended to buf at *n; '/' read as '.'. */
static bool symbol_text(struct jvm_interp *ji, uint32_t pid,
			const struct cpa_raw_sample *s, uint64_t sym,
			char *buf, size_t *n)
{
	const struct jvm_layout *l = &ji->layout;
	uint16_t len;
	if (!sym || !rd(ji, pid, s, sym + l->symbol_length, &len, 2) ||
	    !len || *n + len >= MAX_NAME ||
	    !rd(ji, pid, s, sym + l->symbol_body, buf + *n, len))
		return false;
	size_t k = *n;
	for (size_t i = *n; i < *n + len; i++) {
		/* a hidden class (a lambda's) is "Name+0xADDRESS": the
		 * address differs in every run, and would split its time */
		if (buf[i] == '+' && i + 2 < *n + len && buf[i + 1] == '0' &&
		    buf[i + 2] == 'x') {
			i += 2;
			while (i + 1 < *n + len && buf[i + 1] &&
			       strchr("0123456789abcdef", buf[i + 1]))
				i++;
			continue;
		}
		char c = buf[i];
		buf[k++] = c == '/' ? '.' : c == ';' || c == '\n' || !c ? '_' : c;
	}
	*n = k;
	return true;
}

/* "pkg.Class.method" of a Method*, or NULL. */
static char *method_name(struct jvm_interp *ji, uint32_t pid,
			 const struct cpa_raw_sample *s, uint64_t method)
{
	const struct jvm_layout *l = &ji->layout;
	uint64_t cm, cp, holder, ksym, msym;
	uint16_t idx;
	char buf[MAX_NAME];
	size_t n = 0;
	if (!rd64(ji, pid, s, method + l->method_const, &cm) || !cm ||
	    !rd64(ji, pid, s, cm + l->cmethod_constants, &cp) || !cp ||
	    !rd(ji, pid, s, cm + l->cmethod_name_index, &idx, 2) || !idx ||
	    !rd64(ji, pid, s, cp + l->cpool_holder, &holder) || !holder ||
	    !rd64(ji, pid, s, holder + l->klass_name, &ksym) ||
	    !rd64(ji, pid, s, cp + l->cpool_size + (uint64_t)idx * 8, &msym) ||
	    !symbol_text(ji, pid, s, ksym, buf, &n))
		return NULL;
	buf[n++] = '.';
	if (!symbol_text(ji, pid, s, msym, buf, &n))
		return NULL;
	return cpa_strndup(buf, n);
}

bool jvm_interp_fps(struct unwinder *u, struct proc *p,
		    const struct cpa_raw_sample *s, const uint64_t *ips,
		    unsigned n, uint64_t *fps)
{
	struct jvm_interp *ji = &p->jvm.interp;
	bool any = false;
	if (!ji->layout.ok || !n ||
	    (!p->jvm.code && perfmap_refresh(&p->jit, p->pid, u->now_ns) < 0))
		return false;
	/* 1 marks a frame in the interpreter until its fp is found: by the
	 * code cache where it is read, else by the perf map */
	for (unsigned i = 0; i < n; i++) {
		uint64_t pc = i ? ips[i] - 1 : ips[i];
		if (p->jvm.code) {
			const struct jvm_blob *b = jvm_blob_at(
				p->jvm.code, &ji->layout, jvm_memfd(p), pc,
				u->now_ns);
			fps[i] = b && b->kind == JVM_BLOB_INTERP;
		} else {
			long k = symtab_lookup(&p->jit.syms, pc);
			fps[i] = k >= 0 && !strcmp(symtab_name(&p->jit.syms, k),
						   "Interpreter");
		}
		any |= fps[i] != 0;
	}
	if (!any)
		return false;
	uint64_t fp = s->regs[CPA_REG_BP];
	if (fps[0])
		fps[0] = fp;
	unsigned j = 1;
	for (unsigned step = 0; step < 2 * CPA_MAX_FRAMES && j < n; step++) {
		uint64_t next, ret;
		if (!rd64(ji, p->pid, s, fp, &next) ||
		    !rd64(ji, p->pid, s, fp + 8, &ret))
			break;
		unsigned k = j;
		while (k < n && ips[k] != ret)
			k++;
		if (k < n) {
			if (fps[k])
				fps[k] = next;
			j = k + 1;
		}
		if (next <= fp)
			break;
		fp = next;
	}
	any = false;
	for (unsigned i = 0; i < n; i++) {
		if (fps[i] == 1)
			fps[i] = 0;
		any |= fps[i] != 0;
	}
	return any;
}

/* The name of Method* m, "pkg.Class.method", cached; NULL if unreadable. */
static const char *cached_name(struct jvm_interp *ji, uint32_t pid,
			       uint64_t m)
{
	unsigned slot = (unsigned)((m >> 3) * 0x9E3779B97F4A7C15ull >> 54) %
			JVM_METHOD_CACHE;
	if (ji->method[slot] != m || !ji->name[slot]) {
		char *name = method_name(ji, pid, NULL, m);
		if (!name)
			return NULL;
		free(ji->name[slot]);
		ji->name[slot] = name;
		ji->method[slot] = m;
	}
	return ji->name[slot];
}

static uint32_t named(struct unwinder *u, const char *name,
		      const char *suffix)
{
	char buf[MAX_NAME + 8];
	int len = snprintf(buf, sizeof(buf), "%s%s", name, suffix);
	if (len < 0)
		return 0;
	if ((size_t)len >= sizeof(buf))
		len = sizeof(buf) - 1;
	return output_string(u->out, buf, (size_t)len);
}

uint32_t jvm_method_frame(struct unwinder *u, struct proc *p, uint64_t m)
{
	const char *name = m ? cached_name(&p->jvm.interp, p->pid, m) : NULL;
	if (!name)
		return 0;
	u->st.jit_frames++;
	return named(u, name, "_[j]");
}

uint64_t jvm_interp_method(struct proc *p, const struct cpa_raw_sample *s,
			   uint64_t fp)
{
	uint64_t method;
	return rd64(&p->jvm.interp, p->pid, s, fp - INTERP_METHOD_OFF, &method)
		       ? method
		       : 0;
}

uint32_t jvm_interp_frame(struct unwinder *u, struct proc *p,
			  const struct cpa_raw_sample *s, uint64_t fp)
{
	return jvm_method_frame(u, p, jvm_interp_method(p, s, fp));
}

unsigned jvm_code_frames(struct unwinder *u, struct proc *p, uint64_t ip,
			 bool exact, uint64_t method, uint32_t *ids,
			 unsigned max)
{
	struct jvm_interp *ji = &p->jvm.interp;
	uint64_t pc = exact ? ip : ip - 1, m[JVM_MAX_SCOPES];
	int fd = jvm_memfd(p);
	const struct jvm_blob *b =
		max ? jvm_blob_at(p->jvm.code, &ji->layout, fd, pc, u->now_ns)
		    : NULL;
	if (!b)
		return 0;
	if (b->kind == JVM_BLOB_INTERP) {
		uint32_t id = jvm_method_frame(u, p, method);
		ids[0] = id ? id : named(u, "Interpreter", "_[j]");
		return 1;
	}
	unsigned n = 0, k = jvm_blob_scopes(p->jvm.code, &ji->layout, fd, b,
					    ip, exact, m, max);
	for (unsigned i = 0; i < k; i++) {
		const char *name = cached_name(ji, p->pid, m[i]);
		uint32_t id = named(u, name ? name : "[unknown]",
				    i ? "_[i]" : "_[j]");
		if (id)
			ids[n++] = id;
	}
	u->st.jit_frames += n ? 1 : 0;
	u->st.inline_frames += n > 1 ? n - 1 : 0;
	if (n)
		return n;
	if (b->kind == JVM_BLOB_NMETHOD || b->kind == JVM_BLOB_NATIVE) {
		const char *name = b->method ? cached_name(ji, p->pid, b->method)
					     : NULL;
		ids[0] = named(u, name ? name : "[unknown]", "_[j]");
	} else {
		ids[0] = named(u, b->name ? b->name : "[unknown]", "_[j]");
	}
	u->st.jit_frames++;
	return 1;
}

void jvm_interp_free(struct jvm_interp *ji)
{
	if (ji->mem_open && ji->memfd >= 0)
		close(ji->memfd);
	for (unsigned i = 0; i < JVM_METHOD_CACHE; i++)
		free(ji->name[i]);
	memset(ji, 0, sizeof(*ji));
}
