// SPDX-License-Identifier: MIT
/* Reading HotSpot's vmStructs tables, once per JVM (jvmstructs.h). */
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jvm.h"
#include "jvmstructs.h"
#include "log.h"
#include "procfs.h"
#include "safeopen.h"
#include "unwind.h"

#define MAX_ENTRIES 20000	/* vmStructs has a few thousand */
#define MAX_FIELD_OFF 65536	/* no HotSpot class is this large */
#define MAX_FLAGS 4096		/* JVMFlag::numFlags is about 1000 */

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
	SYM_STRUCTS, SYM_S_TYPE, SYM_S_FIELD, SYM_S_STATIC, SYM_S_OFFSET,
	SYM_S_ADDRESS, SYM_S_STRIDE,
	SYM_TYPES, SYM_T_TYPE, SYM_T_SIZE, SYM_T_STRIDE, NSYMS
};
static const char *const sym_names[NSYMS] = {
	"gHotSpotVMStructs", "gHotSpotVMStructEntryTypeNameOffset",
	"gHotSpotVMStructEntryFieldNameOffset",
	"gHotSpotVMStructEntryIsStaticOffset",
	"gHotSpotVMStructEntryOffsetOffset",
	"gHotSpotVMStructEntryAddressOffset",
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
	return addr && addr < (1ull << 63) &&
	       pread(memfd, v, 8, (off_t)addr) == 8;
}

static bool mem_u32(int memfd, uint64_t addr, uint32_t *v)
{
	return addr && addr < (1ull << 63) &&
	       pread(memfd, v, 4, (off_t)addr) == 4;
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

/* What is wanted of the tables: a field's offset, or a static field's
 * address (stat), or a type's size (field NULL). */
struct want {
	const char *type, *field;
	uint32_t *off;
	uint64_t *addr;
	bool *found;
};

#define NWANT_MAX 80

struct wants {
	struct want w[NWANT_MAX];
	bool found[NWANT_MAX];
	unsigned n;
};

static void want_off(struct wants *ws, const char *type, const char *field,
		     uint32_t *off)
{
	ws->w[ws->n] = (struct want){ type, field, off, NULL,
				      &ws->found[ws->n] };
	ws->n++;
}

static void want_addr(struct wants *ws, const char *type, const char *field,
		      uint64_t *addr)
{
	ws->w[ws->n] = (struct want){ type, field, NULL, addr,
				      &ws->found[ws->n] };
	ws->n++;
}

/* Whether a want for off was found (two names may fill one field). */
static bool found(const struct wants *ws, const uint32_t *off)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (ws->w[i].off == off && ws->found[i])
			return true;
	return false;
}

static bool found_addr(const struct wants *ws, const uint64_t *addr)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (ws->w[i].addr == addr)
			return ws->found[i];
	return false;
}

/* One pass over gHotSpotVMStructs, filling what ws wants. */
static bool read_structs(int memfd, const uint64_t *v, struct wants *ws)
{
	char type[96], field[96];
	if (!v[SYM_STRUCTS] || !v[SYM_S_STRIDE] || v[SYM_S_STRIDE] > 4096)
		return false;
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		uint64_t e = v[SYM_STRUCTS] + i * v[SYM_S_STRIDE], tp, fp;
		if (!mem_u64(memfd, e + v[SYM_S_TYPE], &tp))
			return false;
		if (!tp)
			return i > 0;	/* the table's end */
		if (!mem_str(memfd, tp, type, sizeof(type)))
			continue;
		bool any = false;
		for (unsigned k = 0; k < ws->n && !any; k++)
			any = !strcmp(type, ws->w[k].type) && ws->w[k].field;
		if (!any || !mem_u64(memfd, e + v[SYM_S_FIELD], &fp) ||
		    !mem_str(memfd, fp, field, sizeof(field)))
			continue;
		for (unsigned k = 0; k < ws->n; k++) {
			struct want *w = &ws->w[k];
			uint64_t val;
			if (!w->field || strcmp(type, w->type) ||
			    strcmp(field, w->field))
				continue;
			if (w->addr) {
				if (!mem_u64(memfd, e + v[SYM_S_ADDRESS], &val) ||
				    !val)
					continue;
				*w->addr = val;
			} else {
				if (!mem_u64(memfd, e + v[SYM_S_OFFSET], &val) ||
				    val >= MAX_FIELD_OFF)
					continue;
				*w->off = (uint32_t)val;
			}
			*w->found = true;
		}
	}
	return true;
}

/* One pass over gHotSpotVMTypes: the sizes ws wants (field NULL). */
static void read_types(int memfd, const uint64_t *v, struct wants *ws)
{
	char type[96];
	if (!v[SYM_TYPES] || !v[SYM_T_STRIDE] || v[SYM_T_STRIDE] > 4096)
		return;
	for (unsigned i = 0; i < MAX_ENTRIES; i++) {
		uint64_t e = v[SYM_TYPES] + i * v[SYM_T_STRIDE], tp, size;
		if (!mem_u64(memfd, e + v[SYM_T_TYPE], &tp) || !tp)
			return;	/* 0: the table's end */
		if (!mem_str(memfd, tp, type, sizeof(type)))
			continue;
		for (unsigned k = 0; k < ws->n; k++) {
			struct want *w = &ws->w[k];
			if (w->field || strcmp(type, w->type) ||
			    !mem_u64(memfd, e + v[SYM_T_SIZE], &size) ||
			    !size || size >= MAX_FIELD_OFF)
				continue;
			*w->off = (uint32_t)size;
			*w->found = true;
		}
	}
}

struct statics {
	uint64_t heaps, cc_lo, cc_hi, major, flags, nflags;
};

/* The boolean flags cpa-unwind asks about, from the JVM's flag table:
 * -XX:+PreserveFramePointer and -XX:+DebugNonSafepoints. */
static void read_flags(int memfd, const struct statics *st, uint32_t flag_size,
		       uint32_t name_off, uint32_t addr_off,
		       struct jvm_layout *l)
{
	uint64_t flags, n;
	char name[32];
	if (!flag_size || !mem_u64(memfd, st->flags, &flags) ||
	    !mem_u64(memfd, st->nflags, &n) || n > MAX_FLAGS)
		return;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t f = flags + i * flag_size, np, ap;
		uint8_t b;
		if (!mem_u64(memfd, f + name_off, &np) ||
		    !mem_str(memfd, np, name, sizeof(name)) ||
		    (strcmp(name, "PreserveFramePointer") &&
		     strcmp(name, "DebugNonSafepoints")))
			continue;
		if (!mem_u64(memfd, f + addr_off, &ap) ||
		    pread(memfd, &b, 1, (off_t)ap) != 1)
			continue;
		if (name[0] == 'P')
			l->fp = b ? JVM_FP_YES : JVM_FP_NO;
		else
			l->non_safepoints = b ? JVM_FP_YES : JVM_FP_NO;
	}
}

/* CodeCache::_heaps: a GrowableArray<CodeHeap*>*, each heap's reserved
 * range and segment map. False while the JVM has not set them up. */
static bool read_heaps(int memfd, const struct statics *st,
		       struct jvm_layout *l, uint32_t ga_len, uint32_t ga_data,
		       uint32_t heap_memory, uint32_t heap_segmap,
		       uint32_t vs_lo, uint32_t vs_hi, uint32_t heap_shift)
{
	uint64_t ga, data, lo, hi;
	uint32_t n;
	if (!mem_u64(memfd, st->heaps, &ga) || !mem_u32(memfd, ga + ga_len, &n) ||
	    !n || n > JVM_MAX_HEAPS || !mem_u64(memfd, ga + ga_data, &data) ||
	    !mem_u64(memfd, st->cc_lo, &lo) || !mem_u64(memfd, st->cc_hi, &hi) ||
	    lo >= hi)
		return false;
	l->cc_lo = lo;
	l->cc_hi = hi;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t h;
		struct jvm_heap *jh = &l->heaps[i];
		uint32_t shift;
		if (!mem_u64(memfd, data + 8 * i, &h) ||
		    !mem_u64(memfd, h + heap_memory + vs_lo, &jh->lo) ||
		    !mem_u64(memfd, h + heap_memory + vs_hi, &jh->hi) ||
		    !mem_u64(memfd, h + heap_segmap + vs_lo, &jh->segmap) ||
		    !mem_u32(memfd, h + heap_shift, &shift) || !shift ||
		    shift > 16 || jh->lo >= jh->hi || !jh->segmap)
			return false;
		/* one segment size for all heaps (CodeCacheSegmentSize) */
		if (l->seg_shift && l->seg_shift != shift)
			return false;
		l->seg_shift = shift;
	}
	l->nheaps = n;
	return true;
}

/* Whether every header field read lies within the blob_read bytes read
 * (jvmcode.c reads them from one buffer), and PcDesc's in its size:
 * the tables are the process's, and a field past the end would be read
 * past the buffer. */
static bool header_fits(const struct jvm_layout *l)
{
	const struct { uint32_t off, len; } f[] = {
		{ l->blob_name, 8 }, { l->blob_size, 4 },
		{ l->blob_frame_complete, l->frame_complete_width },
		{ l->blob_frame_size, 4 },
		{ l->blob_code_begin, l->code_offsets ? 4 : 8 },
		{ l->blob_code_end, l->code_offsets ? 4 : 8 },
		{ l->nm_method, 8 }, { l->nm_compile_id, 4 },
		{ l->nm_orig_pc, 4 }, { l->nm_deopt, l->deopt_offset ? 4 : 8 },
		{ l->nm_metadata_off, 4 }, { l->nm_scopes_data_begin, 8 },
		{ l->nm_scopes_pcs_off, 4 }, { l->nm_dependencies_off, 4 },
		{ l->nm_immutable, 8 }, { l->nm_immutable_size, 4 },
		{ l->nm_scopes_data_off, 4 }, { l->blob_mutable, 8 },
		{ l->blob_mutable_size, 4 }, { l->blob_reloc_size, 4 },
	};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if ((uint64_t)f[i].off + f[i].len > l->blob_read)
			return false;
	return !l->nm_scopes_pcs_off ||
	       (l->pcdesc_size <= 64 && l->pcdesc_pc + 4 <= l->pcdesc_size &&
		l->pcdesc_scope + 4 <= l->pcdesc_size);
}

static bool read_tables(int memfd, const uint64_t *addr, struct jvm_layout *l)
{
	uint64_t v[NSYMS];
	for (unsigned k = 0; k < NSYMS; k++)
		if (!mem_u64(memfd, addr[k], &v[k]))
			return false;
	struct wants ws = { .n = 0 };
	struct statics st = { 0 };
	uint32_t ga_len = 0, ga_data = 0, heap_memory = 0, heap_segmap = 0,
		 heap_shift = 0, vs_lo = 0, vs_hi = 0, flag_size = 0,
		 flag_name = 0, flag_addr = 0, nm_size = 0, deopt_off = 0, code_offset = 0, data_offset = 0;
	/* names */
	want_off(&ws, "Method", "_constMethod", &l->method_const);
	want_off(&ws, "ConstMethod", "_constants", &l->cmethod_constants);
	want_off(&ws, "ConstMethod", "_name_index", &l->cmethod_name_index);
	want_off(&ws, "ConstantPool", "_pool_holder", &l->cpool_holder);
	want_off(&ws, "Klass", "_name", &l->klass_name);
	want_off(&ws, "Symbol", "_length", &l->symbol_length);
	want_off(&ws, "Symbol", "_body", &l->symbol_body);
	want_off(&ws, "ConstantPool", NULL, &l->cpool_size);
	/* the code cache */
	want_addr(&ws, "CodeCache", "_heaps", &st.heaps);
	want_addr(&ws, "CodeCache", "_low_bound", &st.cc_lo);
	want_addr(&ws, "CodeCache", "_high_bound", &st.cc_hi);
	want_addr(&ws, "Abstract_VM_Version", "_vm_major_version", &st.major);
	want_addr(&ws, "JVMFlag", "flags", &st.flags);
	want_addr(&ws, "JVMFlag", "numFlags", &st.nflags);
	want_off(&ws, "JVMFlag", "_name", &flag_name);
	want_off(&ws, "JVMFlag", "_addr", &flag_addr);
	want_off(&ws, "JVMFlag", NULL, &flag_size);
	want_off(&ws, "GrowableArrayBase", "_len", &ga_len);
	want_off(&ws, "GrowableArray<int>", "_data", &ga_data);
	want_off(&ws, "CodeHeap", "_memory", &heap_memory);
	want_off(&ws, "CodeHeap", "_segmap", &heap_segmap);
	want_off(&ws, "CodeHeap", "_log2_segment_size", &heap_shift);
	want_off(&ws, "VirtualSpace", "_low_boundary", &vs_lo);
	want_off(&ws, "VirtualSpace", "_high_boundary", &vs_hi);
	want_off(&ws, "HeapBlock", NULL, &l->heapblock_size);
	want_off(&ws, "CodeBlob", "_name", &l->blob_name);
	want_off(&ws, "CodeBlob", "_size", &l->blob_size);
	want_off(&ws, "CodeBlob", "_frame_complete_offset",
		 &l->blob_frame_complete);
	want_off(&ws, "CodeBlob", "_frame_size", &l->blob_frame_size);
	want_off(&ws, "CodeBlob", "_code_begin", &l->blob_code_begin);
	want_off(&ws, "CodeBlob", "_code_end", &l->blob_code_end);
	want_off(&ws, "CodeBlob", "_code_offset", &code_offset);
	want_off(&ws, "CodeBlob", "_data_offset", &data_offset);
	want_off(&ws, "CodeBlob", "_mutable_data", &l->blob_mutable);
	want_off(&ws, "CodeBlob", "_mutable_data_size", &l->blob_mutable_size);
	want_off(&ws, "CodeBlob", "_relocation_size", &l->blob_reloc_size);
	want_off(&ws, "nmethod", NULL, &nm_size);
	want_off(&ws, "nmethod", "_compile_id", &l->nm_compile_id);
	want_off(&ws, "nmethod", "_orig_pc_offset", &l->nm_orig_pc);
	want_off(&ws, "CompiledMethod", "_deopt_handler_begin", &l->nm_deopt);
	want_off(&ws, "nmethod", "_deopt_handler_offset", &deopt_off);
	want_off(&ws, "nmethod", "_method", &l->nm_method);
	want_off(&ws, "CompiledMethod", "_method", &l->nm_method);
	want_off(&ws, "nmethod", "_metadata_offset", &l->nm_metadata_off);
	want_off(&ws, "CompiledMethod", "_scopes_data_begin",
		 &l->nm_scopes_data_begin);
	want_off(&ws, "nmethod", "_scopes_pcs_offset", &l->nm_scopes_pcs_off);
	want_off(&ws, "nmethod", "_dependencies_offset",
		 &l->nm_dependencies_off);
	want_off(&ws, "nmethod", "_immutable_data", &l->nm_immutable);
	want_off(&ws, "nmethod", "_immutable_data_size", &l->nm_immutable_size);
	want_off(&ws, "nmethod", "_scopes_data_offset", &l->nm_scopes_data_off);
	want_off(&ws, "PcDesc", NULL, &l->pcdesc_size);
	want_off(&ws, "PcDesc", "_pc_offset", &l->pcdesc_pc);
	want_off(&ws, "PcDesc", "_scope_decode_offset", &l->pcdesc_scope);

	if (!read_structs(memfd, v, &ws))
		return false;
	read_types(memfd, v, &ws);
	l->ok = found(&ws, &l->method_const) &&
		found(&ws, &l->cmethod_constants) &&
		found(&ws, &l->cmethod_name_index) &&
		found(&ws, &l->cpool_holder) && found(&ws, &l->klass_name) &&
		found(&ws, &l->symbol_length) && found(&ws, &l->symbol_body) &&
		found(&ws, &l->cpool_size);
	if (!l->ok)
		return false;

	uint32_t major = 0;
	if (found_addr(&ws, &st.major))
		mem_u32(memfd, st.major, &major);
	l->major = major < 256 ? (uint8_t)major : 0;
	/* JDK-8298448 (JDK 20): UNSIGNED5 no longer writes a zero byte */
	l->u5_x = major >= 20;
	if (found_addr(&ws, &st.flags) && found_addr(&ws, &st.nflags) &&
	    found(&ws, &flag_name) && found(&ws, &flag_addr))
		read_flags(memfd, &st, flag_size, flag_name, flag_addr, l);

	/* JDK 23 on: the code's bounds as offsets, a 16-bit
	 * frame_complete_offset beside a 16-bit header size */
	l->code_offsets = found(&ws, &code_offset) && found(&ws, &data_offset);
	if (l->code_offsets) {
		l->blob_code_begin = code_offset;
		l->blob_code_end = data_offset;
	}
	l->frame_complete_width = l->code_offsets ? 2 : 4;
	if (found(&ws, &deopt_off)) {
		l->nm_deopt = deopt_off;
		l->deopt_offset = true;
	} else if (!found(&ws, &l->nm_deopt) || !found(&ws, &l->nm_orig_pc)) {
		l->nm_deopt = 0;
	}
	l->immutable = found(&ws, &l->nm_immutable) &&
		       found(&ws, &l->nm_immutable_size) &&
		       found(&ws, &l->nm_scopes_data_off);
	l->mutable_meta = found(&ws, &l->blob_mutable) &&
			  found(&ws, &l->blob_mutable_size) &&
			  found(&ws, &l->blob_reloc_size);
	bool scopes = found(&ws, &l->nm_scopes_pcs_off) &&
		      found(&ws, &l->pcdesc_size) &&
		      found(&ws, &l->pcdesc_pc) && found(&ws, &l->pcdesc_scope) &&
		      l->pcdesc_size >= 8 &&
		      (l->immutable ? l->mutable_meta
				    : found(&ws, &l->nm_metadata_off) &&
					      found(&ws, &l->nm_scopes_data_begin) &&
					      found(&ws, &l->nm_dependencies_off));
	if (!scopes)
		l->nm_scopes_pcs_off = 0;	/* compiled frames not expanded */
	l->blob_read = nm_size;
	l->code_described = found_addr(&ws, &st.heaps) && found_addr(&ws, &st.cc_lo) &&
		     found_addr(&ws, &st.cc_hi) && found(&ws, &ga_len) &&
		     found(&ws, &ga_data) && found(&ws, &heap_memory) &&
		     found(&ws, &heap_segmap) && found(&ws, &heap_shift) &&
		     found(&ws, &vs_lo) && found(&ws, &vs_hi) &&
		     found(&ws, &l->heapblock_size) && found(&ws, &l->blob_name) &&
		     found(&ws, &l->blob_size) &&
		     found(&ws, &l->blob_frame_complete) &&
		     found(&ws, &l->blob_frame_size) &&
		     (l->code_offsets || (found(&ws, &l->blob_code_begin) &&
					  found(&ws, &l->blob_code_end))) &&
		     found(&ws, &l->nm_method) && found(&ws, &l->nm_compile_id) &&
		     nm_size >= 64 && nm_size <= 4096;
	l->code_described = l->code_described && header_fits(l);
	l->code_ok = l->code_described &&
		     read_heaps(memfd, &st, l, ga_len, ga_data, heap_memory,
				heap_segmap, vs_lo, vs_hi, heap_shift);
	return true;
}

int jvm_layout_read(uint32_t pid, int memfd, struct jvm_layout *l, char *err,
		    size_t errlen)
{
	char path[CPA_PATH_MAX];
	uint64_t start, first_vaddr, vaddr[NSYMS] = { 0 };
	struct stat st;
	int rootfd;
	memset(l, 0, sizeof(*l));
	if (memfd < 0)
		return cpa_fail(err, errlen, "/proc/%u/mem: cannot open", pid);
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
	if (!read_tables(memfd, vaddr, l) || !l->ok) {
		l->ok = false;
		return cpa_fail(err, errlen, "vmStructs: fields missing");
	}
	return 0;
}
