// SPDX-License-Identifier: MIT
/* Naming interpreted Java frames from HotSpot's vmStructs (jvminterp.h). */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "procfs.h"
#include "safeopen.h"
#include "unwind.h"

/* x86-64: interpreter_frame_method_offset, in words below the fp */
#define INTERP_METHOD_OFF 24
#define MAX_NAME 512
#define MAX_ENTRIES 20000	/* vmStructs has a few thousand */

/* ---- the attach thread: reading the tables once per JVM --------------- */

/* libjvm.so's first mapping in pid, from /proc/PID/maps. */
static bool find_libjvm(uint32_t pid, uint64_t *start, char *path,
			size_t pathlen)
{
	struct cpa_maps it;
	struct cpa_map m;
	bool found = false;
	if (cpa_maps_open(&it, pid) < 0)
		return false;
	while (!found && cpa_maps_next(&it, &m)) {
		const char *base = strrchr(m.path, '/');
		if (!m.pgoff && base && !strcmp(base, "/libjvm.so")) {
			*start = m.start;
			snprintf(path, pathlen, "%s", m.path);
			found = true;
		}
	}
	cpa_maps_close(&it);
	return found;
}

enum {
	SYM_STRUCTS, SYM_S_TYPE, SYM_S_FIELD, SYM_S_OFFSET, SYM_S_STRIDE,
	SYM_TYPES, SYM_T_TYPE, SYM_T_SIZE, SYM_T_STRIDE, NSYMS
};
static const char *const sym_names[NSYMS] = {
	"gHotSpotVMStructs", "gHotSpotVMStructEntryTypeNameOffset",
	"gHotSpotVMStructEntryFieldNameOffset",
	"gHotSpotVMStructEntryOffsetOffset",
	"gHotSpotVMStructEntryArrayStride", "gHotSpotVMTypes",
	"gHotSpotVMTypeEntryTypeNameOffset", "gHotSpotVMTypeEntrySizeOffset",
	"gHotSpotVMTypeEntryArrayStride",
};

/* The vaddrs of sym_names in the object's .dynsym, and its load base. */
static bool read_dynsym(int fd, uint64_t *vaddr, uint64_t *first_vaddr)
{
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	unsigned found = 0;
	if (!e)
		return false;
	size_t nph = 0;
	*first_vaddr = 0;
	if (elf_getphdrnum(e, &nph) == 0)
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    ph.p_offset == 0) {
				*first_vaddr = ph.p_vaddr;
				break;
			}
		}
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM ||
		    !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name || strncmp(name, "gHotSpotVM", 10))
				continue;
			for (unsigned k = 0; k < NSYMS; k++)
				if (!vaddr[k] && !strcmp(name, sym_names[k])) {
					vaddr[k] = sym.st_value;
					found++;
				}
		}
	}
	elf_end(e);
	return found == NSYMS;
}

static bool mem_u64(int memfd, uint64_t addr, uint64_t *v)
{
	return addr < (1ull << 63) &&
	       pread(memfd, v, 8, (off_t)addr) == 8;
}

/* A NUL-terminated string of the JVM's, into buf. */
static bool mem_str(int memfd, uint64_t addr, char *buf, size_t len)
{
	if (!addr || addr >= (1ull << 63))
		return false;
	ssize_t k = pread(memfd, buf, len - 1, (off_t)addr);
	if (k <= 0)
		return false;
	buf[k] = '\0';
	return true;
}

struct want {
	const char *type, *field;
	uint32_t *dst;
};

static bool read_tables(int memfd, const uint64_t *addr, struct jvm_layout *l)
{
	uint64_t v[NSYMS];
	for (unsigned k = 0; k < NSYMS; k++)
		if (!mem_u64(memfd, addr[k], &v[k]))
			return false;
	const struct want want[] = {
		{ "Method", "_constMethod", &l->method_const },
		{ "ConstMethod", "_constants", &l->cmethod_constants },
		{ "ConstMethod", "_name_index", &l->cmethod_name_index },
		{ "ConstantPool", "_pool_holder", &l->cpool_holder },
		{ "Klass", "_name", &l->klass_name },
		{ "Symbol", "_length", &l->symbol_length },
		{ "Symbol", "_body", &l->symbol_body },
	};
	unsigned nwant = sizeof(want) / sizeof(want[0]), got = 0;
	char type[64], field[64];
	if (!v[SYM_STRUCTS] || !v[SYM_S_STRIDE] || v[SYM_S_STRIDE] > 4096)
		return false;
	for (unsigned i = 0; i < MAX_ENTRIES && got < nwant; i++) {
		uint64_t e = v[SYM_STRUCTS] + i * v[SYM_S_STRIDE], tp, fp, off;
		if (!mem_u64(memfd, e + v[SYM_S_TYPE], &tp))
			return false;
		if (!tp)
			break;	/* the table's end */
		if (!mem_str(memfd, tp, type, sizeof(type)))
			continue;
		unsigned k;
		for (k = 0; k < nwant; k++)
			if (!strcmp(type, want[k].type))
				break;
		if (k == nwant ||
		    !mem_u64(memfd, e + v[SYM_S_FIELD], &fp) ||
		    !mem_str(memfd, fp, field, sizeof(field)) ||
		    !mem_u64(memfd, e + v[SYM_S_OFFSET], &off) || off > 4096)
			continue;
		for (k = 0; k < nwant; k++)
			if (!strcmp(type, want[k].type) &&
			    !strcmp(field, want[k].field)) {
				*want[k].dst = (uint32_t)off;
				got++;
			}
	}
	if (got < nwant || !v[SYM_TYPES] || !v[SYM_T_STRIDE] ||
	    v[SYM_T_STRIDE] > 4096)
		return false;
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		uint64_t e = v[SYM_TYPES] + i * v[SYM_T_STRIDE], tp, size;
		if (!mem_u64(memfd, e + v[SYM_T_TYPE], &tp) || !tp)
			return false;
		if (mem_str(memfd, tp, type, sizeof(type)) &&
		    !strcmp(type, "ConstantPool") &&
		    mem_u64(memfd, e + v[SYM_T_SIZE], &size) && size &&
		    size < 4096) {
			l->cpool_size = (uint32_t)size;
			return true;
		}
	}
	return false;
}

int jvm_layout_read(uint32_t pid, struct jvm_layout *l, char *err,
		    size_t errlen)
{
	char path[CPA_PATH_MAX];
	uint64_t start, first_vaddr, vaddr[NSYMS] = { 0 };
	struct stat st;
	int rootfd;
	memset(l, 0, sizeof(*l));
	if (!find_libjvm(pid, &start, path, sizeof(path)))
		return cpa_fail(err, errlen, "no libjvm.so mapped");
	int fd = safeopen_in_proc_root(pid, path, 0, &st, &rootfd);
	if (fd < 0)
		return cpa_fail(err, errlen, "%s: cannot open", path);
	close(rootfd);
	bool have = read_dynsym(fd, vaddr, &first_vaddr);
	close(fd);
	if (!have)
		return cpa_fail(err, errlen, "%s: no vmStructs symbols", path);
	uint64_t bias = start - first_vaddr;
	for (unsigned k = 0; k < NSYMS; k++)
		vaddr[k] += bias;
	char mem[64];
	snprintf(mem, sizeof(mem), "/proc/%u/mem", pid);
	int memfd = open(mem, O_RDONLY | O_CLOEXEC);
	if (memfd < 0)
		return cpa_fail(err, errlen, "%s: cannot open", mem);
	l->ok = read_tables(memfd, vaddr, l);
	close(memfd);
	return l->ok ? 0 : cpa_fail(err, errlen, "vmStructs: fields missing");
}

/* ---- the sample thread: naming frames --------------------------------- */

/* len bytes of the process's memory at addr: from the sample's stack
 * snapshot when it holds them, else /proc/PID/mem. */
static bool rd(struct jvm_interp *ji, uint32_t pid,
	       const struct cpa_raw_sample *s, uint64_t addr, void *buf,
	       size_t len)
{
	uint64_t sp = s->regs[CPA_REG_SP];
	if (s->stack_len && addr >= sp && addr - sp <= s->stack_len &&
	    s->stack_len - (addr - sp) >= len) {
		memcpy(buf, s->stack + (addr - sp), len);
		return true;
	}
	if (!ji->mem_open) {
		char mem[64];
		snprintf(mem, sizeof(mem), "/proc/%u/mem", pid);
		ji->memfd = open(mem, O_RDONLY | O_CLOEXEC);
		ji->mem_open = true;
	}
	return ji->memfd >= 0 && addr < (1ull << 63) &&
	       pread(ji->memfd, buf, len, (off_t)addr) == (ssize_t)len;
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
	for (size_t i = *n; i < *n + len; i++) {
		if (buf[i] == '/')
			buf[i] = '.';
		else if (buf[i] == ';' || buf[i] == '\n' || !buf[i])
			buf[i] = '_';
	}
	*n += len;
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
	    perfmap_refresh(&p->jit, p->pid, u->now_ns) < 0)
		return false;
	/* 1 marks a frame in the interpreter until its fp is found */
	for (unsigned i = 0; i < n; i++) {
		long k = symtab_lookup(&p->jit.syms, i ? ips[i] - 1 : ips[i]);
		fps[i] = k >= 0 && !strcmp(symtab_name(&p->jit.syms, k),
					   "Interpreter");
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

uint32_t jvm_interp_frame(struct unwinder *u, struct proc *p,
			  const struct cpa_raw_sample *s, uint64_t fp)
{
	struct jvm_interp *ji = &p->jvm.interp;
	uint64_t method;
	if (!rd64(ji, p->pid, s, fp - INTERP_METHOD_OFF, &method) || !method)
		return 0;
	unsigned slot = (unsigned)((method >> 3) * 0x9E3779B97F4A7C15ull >> 56) %
			JVM_METHOD_CACHE;
	if (ji->method[slot] != method || !ji->name[slot]) {
		char *name = method_name(ji, p->pid, s, method);
		if (!name)
			return 0;
		free(ji->name[slot]);
		ji->name[slot] = name;
		ji->method[slot] = method;
	}
	char buf[MAX_NAME + 8];
	int len = snprintf(buf, sizeof(buf), "%s_[j]", ji->name[slot]);
	u->st.jit_frames++;
	return output_string(u->out, buf, (size_t)len);
}

void jvm_interp_free(struct jvm_interp *ji)
{
	if (ji->mem_open && ji->memfd >= 0)
		close(ji->memfd);
	for (unsigned i = 0; i < JVM_METHOD_CACHE; i++)
		free(ji->name[i]);
	memset(ji, 0, sizeof(*ji));
}
