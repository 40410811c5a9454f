// SPDX-License-Identifier: MIT
/*
 * Loading one ELF object: segments, build id, function symbols (from the
 * object, else from its separate debug file) and the CFI table.
 */
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfobj.h"
#include "filepages.h"
#include "safeopen.h"

static const char *const fail_names[ELFOBJ_FAIL_COUNT] = {
	[ELFOBJ_OK] = "ok",
	[ELFOBJ_FAIL_OPEN] = "elf-open",
	[ELFOBJ_FAIL_NOT_ELF] = "elf-corrupt",
	[ELFOBJ_FAIL_CFI] = "cfi-corrupt",
	[ELFOBJ_FAIL_MISMATCH] = "build-id-mismatch",
	[ELFOBJ_FAIL_NOMEM] = "no-memory",
	[ELFOBJ_FAIL_SYMS_BUDGET] = "symbols-over-budget",
	[ELFOBJ_FAIL_CFI_BUDGET] = "cfi-over-budget",
};

const char *elfobj_fail_name(unsigned fail)
{
	return fail < ELFOBJ_FAIL_COUNT ? fail_names[fail] : "unknown";
}

static size_t note_build_id(Elf_Data *data, uint8_t *id, size_t cap)
{
	GElf_Nhdr nh;
	size_t off = 0, name_off, desc_off, next;
	while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(name, "GNU", 4) && nh.n_descsz > 0) {
			size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
			memcpy(id, (const uint8_t *)data->d_buf + desc_off, n);
			return n;
		}
		off = next;
	}
	return 0;
}

size_t elfobj_read_build_id(Elf *elf, uint8_t *id, size_t cap)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t n = data ? note_build_id(data, id, cap) : 0;
		if (n)
			return n;
	}
	/* No section headers (the vdso has them, but stripped images may
	 * not): try the program headers. */
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return 0;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset,
						      ph.p_filesz, ELF_T_NHDR);
		size_t n = data ? note_build_id(data, id, cap) : 0;
		if (n)
			return n;
	}
	return 0;
}

static int read_segments(struct elf_obj *o, Elf *elf)
{
	size_t phnum;
	if (elf_getphdrnum(elf, &phnum) != 0)
		return -1;
	o->nsegs = 0;
	for (size_t i = 0; i < phnum && o->nsegs < ELFOBJ_MAX_SEGS; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -1;
		if (ph.p_type != PT_LOAD)
			continue;
		o->segs[o->nsegs++] = (struct elf_seg){
			.offset = ph.p_offset, .vaddr = ph.p_vaddr,
			.filesz = ph.p_filesz,
		};
	}
	return 0;
}

/* A debug file, opened under the rules of safeopen.h: rootfd >= 0
 * resolves path inside that root, -1 opens a host path. */
static int open_elf_file(int rootfd, const char *path, int *fd, Elf **elf)
{
	struct stat st;
	*fd = rootfd >= 0 ? safeopen_in_root(rootfd, path, 0, &st)
			  : safeopen_host(path, 0, &st);
	if (*fd < 0)
		return -1;
	*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*elf || elf_kind(*elf) != ELF_K_ELF) {
		if (*elf)
			elf_end(*elf);
		close(*fd);
		return -1;
	}
	return 0;
}

/* A debug file only counts when it is the one built with the object. */
static bool same_build(Elf *dbg, const uint8_t *id, size_t len)
{
	uint8_t did[ELFOBJ_BUILD_ID_MAX];
	size_t dlen = elfobj_read_build_id(dbg, did, sizeof(did));
	return len == 0 || dlen == 0 || (dlen == len && !memcmp(did, id, len));
}

static const char *debuglink_name(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			continue;
		const char *sn = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!sn || strcmp(sn, ".gnu_debuglink"))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || d->d_size < 2 || !memchr(d->d_buf, '\0', d->d_size))
			return NULL;
		const char *name = d->d_buf;
		return *name && !strchr(name, '/') ? name : NULL;
	}
	return NULL;
}

static bool has_symtab(Elf *elf)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr shdr;
		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB)
			return true;
	}
	return false;
}

/* A debug file at a host path that counts when its build id is id. */
static Elf *open_by_build_id(const char *path, const uint8_t *id,
			     size_t id_len, bool id_required, int *fd)
{
	Elf *dbg;
	uint8_t did[ELFOBJ_BUILD_ID_MAX];
	if (open_elf_file(-1, path, fd, &dbg) < 0)
		return NULL;
	if (id_required ? elfobj_read_build_id(dbg, did, sizeof(did)) == id_len &&
				  !memcmp(did, id, id_len)
			: same_build(dbg, id, id_len))
		return dbg;
	elf_end(dbg);
	close(*fd);
	return NULL;
}

/*
 * Finds the separate debug file of an object: by build id on the host
 * (DIR/.build-id/xx/rest.debug, DIR being /usr/lib/debug unless
 * --debug-dir says otherwise: the id proves it is the object's), then by
 * .gnu_debuglink next to the object, in its .debug/ directory and under
 * /usr/lib/debug, all three inside the process's root: a name the object
 * chose is never looked up on the host. Last, for a stripped object only
 * (one with a .symtab has its names), a file fetched from a debuginfod
 * server, which must carry the object's build id.
 */
Elf *elfobj_open_debug_file(Elf *elf, const uint8_t *id, size_t id_len,
			    int rootfd, const char *dir,
			    const struct debug_sources *dbgs, int *fd,
			    bool *fetching)
{
	char path[PATH_MAX];
	Elf *dbg;

	if (fetching)
		*fetching = false;
	if (id_len >= 2 && dbgs && dbgs->dir) {
		int n = snprintf(path, sizeof(path), "%s/.build-id/%02x/",
				 dbgs->dir, id[0]);
		for (size_t i = 1; i < id_len && n > 0 &&
				   n < (int)sizeof(path) - 8; i++)
			n += snprintf(path + n, sizeof(path) - (size_t)n,
				      "%02x", id[i]);
		if (n > 0 && n < (int)sizeof(path) - 8) {
			snprintf(path + n, sizeof(path) - (size_t)n, ".debug");
			if ((dbg = open_by_build_id(path, id, id_len, false, fd)))
				return dbg;
		}
	}
	const char *link = debuglink_name(elf);
	/* next to the object, in its .debug/ and under /usr/lib/debug */
	static const char *const prefix[] = { "", "", "/usr/lib/debug" };
	static const char *const subdir[] = { "", "/.debug", "" };
	for (unsigned i = 0; link && dir && rootfd >= 0 && i < 3; i++) {
		int n = snprintf(path, sizeof(path), "%s%s%s/%s", prefix[i],
				 dir, subdir[i], link);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		if (open_elf_file(rootfd, path, fd, &dbg) == 0) {
			if (same_build(dbg, id, id_len))
				return dbg;
			elf_end(dbg);
			close(*fd);
		}
	}
	if (!id_len || !dbgs || !dbgs->fetched || has_symtab(elf))
		return NULL;
	if (!dbgs->fetched(dbgs->ctx, id, id_len, path, sizeof(path))) {
		if (fetching)
			*fetching = true;
		return NULL;
	}
	/* a server may answer anything: only the object's own build counts */
	return open_by_build_id(path, id, id_len, true, fd);
}

/*
 * A truncated file still parses as far as its headers go; what it
 * describes must also lie inside it, or its tables are silently empty.
 */
static bool complete(Elf *elf, const GElf_Ehdr *eh, const struct elf_obj *o)
{
	size_t size;
	if (!elf_rawfile(elf, &size))
		return false;
	if (eh->e_shoff && (eh->e_shoff > size ||
			    (uint64_t)eh->e_shnum * eh->e_shentsize >
				    size - eh->e_shoff))
		return false;
	for (unsigned i = 0; i < o->nsegs; i++)
		if (o->segs[i].offset > size ||
		    o->segs[i].filesz > size - o->segs[i].offset)
			return false;
	return true;
}

/*
 * PLT stubs have no symbols; without one of their own, the symbol before
 * them (often _init, whose size is 0) would claim them.
 */
static int add_plt_symbols(struct symtab *t, Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		const char *sn = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sn && (!strcmp(sn, ".plt") || !strcmp(sn, ".plt.sec") ||
			   !strcmp(sn, ".plt.got")) &&
		    symtab_add(t, sh.sh_addr, sh.sh_size, "[plt]", 5) < 0)
			return -1;
	}
	return 0;
}

/* Per symbol, besides the symbol table: its demangled name and output id
 * (allocated once the symbols are known). */
#define PER_SYMBOL_BYTES (sizeof(char *) + sizeof(uint32_t))

/*
 * Adds the function symbols of one table of elf (.symtab, else .dynsym)
 * after checking, from the section headers, that the object stays within
 * max_bytes. Returns the number added, -1 when out of memory, -2 when over
 * the budget (nothing added).
 */
static long add_symbols(struct elf_obj *o, Elf *elf, bool symtab,
			size_t max_bytes)
{
	uint64_t entries, cost;
	symtab_elf_cost(elf, symtab, !symtab, &entries, &cost);
	cost += sizeof(*o) + symtab_bytes(&o->syms) +
		(entries + o->syms.n) * PER_SYMBOL_BYTES;
	if (cost > max_bytes)
		return -2;
	return symtab_add_elf(&o->syms, elf, symtab, !symtab);
}

/* Gives back the pages of elf's file that a load has read (filepages.h). */
static void drop_file_pages(Elf *elf)
{
	size_t size;
	char *raw = elf ? elf_rawfile(elf, &size) : NULL;
	if (raw && filepages_droppable(raw, size))
		filepages_drop(raw, size);
}

static int load_elf(struct elf_obj *o, Elf *elf, int rootfd,
		    const char *dir, const struct debug_sources *dbgs,
		    size_t max_bytes, bool inl)
{
	GElf_Ehdr eh;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    read_segments(o, elf) < 0 || o->nsegs == 0 ||
	    !complete(elf, &eh, o)) {
		o->nsegs = 0;
		o->fail = ELFOBJ_FAIL_NOT_ELF;
		return -1;
	}
	uint8_t *id = o->build_id;
	size_t id_len = elfobj_read_build_id(elf, id, sizeof(o->build_id));
	o->build_id_len = (uint8_t)id_len;

	Elf *dbg = NULL;
	int dbg_fd = -1;
	if (dir)
		dbg = elfobj_open_debug_file(elf, id, id_len, rootfd, dir, dbgs,
					      &dbg_fd, &o->dbg_fetching);
	long nsym = add_symbols(o, elf, true, max_bytes);
	o->has_symtab = nsym > 0;
	if (nsym == 0 && dbg) {
		nsym = add_symbols(o, dbg, true, max_bytes);
		o->has_symtab = o->debug_file = nsym > 0;
	}
	if (nsym == 0)
		nsym = add_symbols(o, elf, false, max_bytes);
	if (nsym >= 0 && add_plt_symbols(&o->syms, elf) < 0)
		nsym = -1;
	if (nsym == -1)
		o->fail = ELFOBJ_FAIL_NOMEM;
	else if (nsym < 0)
		o->fail = ELFOBJ_FAIL_SYMS_BUDGET;
	/* the symbols are copied: their pages go before the CFI's come */
	drop_file_pages(elf);
	drop_file_pages(dbg);
	if (!o->fail) {
		symtab_finish(&o->syms);
		size_t kept = sizeof(*o) + symtab_bytes(&o->syms) +
			      (size_t)o->syms.n * PER_SYMBOL_BYTES;
		int rc = cfi_compile(elf, dbg ? dbg : elf, &o->cfi,
				     max_bytes > kept ? max_bytes - kept : 0);
		if (rc == CFI_OVER_BUDGET)
			o->fail = ELFOBJ_FAIL_CFI_BUDGET;
		else if (rc < 0)
			o->fail = ELFOBJ_FAIL_CFI;
	}
	/* the inlined instances are read apart (elfobj_read_inlines), so
	 * that the object serves samples meanwhile */
	Elf *dwarf = !inl ? NULL
		     : inline_has_dwarf(elf) ? elf
		     : dbg && inline_has_dwarf(dbg) ? dbg : NULL;
	o->inl_state = dwarf ? INLINE_PENDING : INLINE_NO_DWARF;
	o->inl_dwarf_bytes = dwarf ? cfi_dwarf_bytes(dwarf) : 0;
	if (dbg) {
		elf_end(dbg);
		close(dbg_fd);
	}
	/* An object over its budget is refused whole: none of it is kept,
	 * and its frames are named by module and offset. */
	if (o->fail != ELFOBJ_OK && o->fail != ELFOBJ_FAIL_CFI) {
		elfobj_unload(o);
		return -1;
	}
	/* A malformed CFI section still leaves the symbols (and any CFI rows
	 * compiled before the damage) usable; the failure is reported. */
	o->display = calloc(o->syms.n ? o->syms.n : 1, sizeof(*o->display));
	o->out_ids = calloc(o->syms.n ? o->syms.n : 1, sizeof(*o->out_ids));
	if (!o->display || !o->out_ids) {
		elfobj_unload(o);
		o->fail = ELFOBJ_FAIL_NOMEM;
		return -1;
	}
	o->bytes = sizeof(*o) + symtab_bytes(&o->syms) +
		   cfi_table_bytes(&o->cfi) + (size_t)o->syms.n * PER_SYMBOL_BYTES;
	o->loaded = true;
	return 0;
}

int elfobj_load(struct elf_obj *o, int fd, int rootfd, const char *dir,
		const struct debug_sources *dbgs, size_t max_bytes,
		enum elfobj_inlines inl)
{
	o->fail = ELFOBJ_OK;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		o->fail = ELFOBJ_FAIL_NOT_ELF;
		return -1;
	}
	int rc = load_elf(o, elf, rootfd, dir, dbgs, max_bytes,
			  inl != ELFOBJ_INLINES_OFF);
	elf_end(elf);
	if (rc == 0 && inl == ELFOBJ_INLINES_NOW &&
	    o->inl_state == INLINE_PENDING) {
		o->inl_state = (uint8_t)elfobj_read_inlines(
			&o->inl, fd, rootfd, dir, dbgs,
			o->bytes < max_bytes ? max_bytes - o->bytes : 0);
		o->bytes += o->inl.bytes;
	}
	return rc;
}

enum inline_build elfobj_read_inlines(struct inline_table *t, int fd,
				      int rootfd, const char *dir,
				      const struct debug_sources *dbgs,
				      size_t max_bytes)
{
	memset(t, 0, sizeof(*t));
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return INLINE_FAILED;
	Elf *dbg = NULL;
	int dbg_fd = -1;
	if (!inline_has_dwarf(elf) && dir) {
		uint8_t id[ELFOBJ_BUILD_ID_MAX];
		size_t len = elfobj_read_build_id(elf, id, sizeof(id));
		dbg = elfobj_open_debug_file(elf, id, len, rootfd, dir, dbgs,
					     &dbg_fd, NULL);
	}
	enum inline_build rc =
		inline_table_build(t, dbg ? dbg : elf, max_bytes);
	if (dbg) {
		elf_end(dbg);
		close(dbg_fd);
	}
	elf_end(elf);
	return rc;
}

int elfobj_load_image(struct elf_obj *o, const void *image, size_t size,
		      size_t max_bytes)
{
	o->fail = ELFOBJ_OK;
	/* libelf wants a writable buffer; the image is copied only for the
	 * duration of the load. */
	char *copy = malloc(size);
	if (!copy) {
		o->fail = ELFOBJ_FAIL_NOMEM;
		return -1;
	}
	memcpy(copy, image, size);
	Elf *elf = elf_memory(copy, size);
	int rc = -1;
	if (elf) {
		rc = load_elf(o, elf, -1, NULL, NULL, max_bytes, false);
		elf_end(elf);
	} else {
		o->fail = ELFOBJ_FAIL_NOT_ELF;
	}
	free(copy);
	return rc;
}

void elfobj_unload(struct elf_obj *o)
{
	if (o->display) {
		for (uint32_t i = 0; i < o->syms.n; i++)
			free(o->display[i]);
	}
	free(o->display);
	free(o->out_ids);
	o->display = NULL;
	o->out_ids = NULL;
	symtab_free(&o->syms);
	cfi_table_free(&o->cfi);
	inline_table_free(&o->inl);
	o->inl_state = INLINE_NO_DWARF;
	o->inl_frames = 0;
	o->loaded = false;
	o->has_symtab = o->debug_file = false;
	o->dbg_fetching = false;
	o->bytes = sizeof(*o);
}

void elfobj_move_load(struct elf_obj *to, struct elf_obj *from)
{
	elfobj_unload(to);
	to->nsegs = from->nsegs;
	memcpy(to->segs, from->segs, sizeof(to->segs));
	to->syms = from->syms;
	to->cfi = from->cfi;
	to->inl = from->inl;
	to->inl_state = from->inl_state;
	to->inl_dwarf_bytes = from->inl_dwarf_bytes;
	to->display = from->display;
	to->out_ids = from->out_ids;
	to->has_symtab = from->has_symtab;
	to->debug_file = from->debug_file;
	to->dbg_fetching = from->dbg_fetching;
	to->build_id_len = from->build_id_len;
	memcpy(to->build_id, from->build_id, sizeof(to->build_id));
	to->fail = from->fail;
	to->bytes = from->bytes;
	to->loaded = from->loaded;
	memset(&from->syms, 0, sizeof(from->syms));
	memset(&from->cfi, 0, sizeof(from->cfi));
	memset(&from->inl, 0, sizeof(from->inl));
	from->display = NULL;
	from->out_ids = NULL;
	elfobj_unload(from);
}
