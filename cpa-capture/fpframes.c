/* SPDX-License-Identifier: MIT */
/*
 * Code that keeps frame pointers: each new executable mapping is looked
 * at once per file, and the mappings of a file whose code keeps them go
 * to the BPF program's fp_procs map, keyed by process. A timer sample
 * whose ip lies in one of them takes the kernel's frame-pointer chain
 * and no stack snapshot (bpf/capture.bpf.c, fp_chain_code); any other
 * sample takes the snapshot as before, which cpa-unwind walks by CFI.
 *
 * A file keeps frame pointers when it is Go (a .go.buildinfo section:
 * Go keeps them on amd64 and arm64), or when its own CFI says so: in
 * each function .eh_frame_hdr lists, halfway through, the CFA is the
 * frame pointer plus an offset, which is what -fno-omit-frame-pointer
 * gives and -fomit-frame-pointer never does outside alloca, or, in a
 * leaf without a frame, sp plus the return address's slot. Such a leaf
 * is caught per sample by the BPF side, which looks at the word at sp.
 *
 * The chain is the frame-pointer code's alone up to the libc that runs
 * it, whose code keeps none: there it must end, at the return into one
 * of the two roots that call a program's code, __libc_start_call_main
 * and start_thread. Where in libc those returns lie is read off this
 * process (its own main's return, and a thread's), and each process
 * that maps the same libc file gets them at their address in it. A
 * chain through libc anywhere else (qsort calling a comparator) takes
 * the snapshot. A process with another libc gets no roots, and its
 * chains through libc take the snapshot too.
 *
 * Forgotten at exec (unless the mapping is the new image's, drained
 * first from another CPU's ring) and at exit. --snapshot=always turns
 * this off.
 */
#include <config.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cpa-capture.h"
#include "buf.h"
#include "capture.h"
#include "le.h"
#include "log.h"
#include "procfs.h"

/* Only the sections looked at are read (the file is mapped): a Go
 * binary or a browser is hundreds of MB. */
#define FP_FILE_MAX (4ull << 30)

/* DWARF's numbers of the frame pointer and sp, and the CFA's offset
 * from sp at a function's entry */
#if defined(__x86_64__)
#define FP_DWARF_REG 6	/* rbp */
#define FP_DWARF_SP 7
#define FP_ENTRY_CFA 8	/* the return address */
#elif defined(__aarch64__)
#define FP_DWARF_REG 29	/* x29 */
#define FP_DWARF_SP 31
#define FP_ENTRY_CFA 0
#endif

static int procs_fd = -1;
static uint64_t files_fp, files_other;

struct fp_file {
	dev_t dev;
	ino_t ino;
	bool fp;
	bool libc;	/* the file roots[] lie in */
};
static struct fp_file *files;
static size_t n_files, files_cap;

/* What is in fp_procs, per process, with the time of its first mapping
 * there (see forget). */
struct fp_seen {
	uint32_t pid;
	uint64_t time_ns;
	struct capture_fp_proc ranges;
};
static struct fp_seen *seen;
static size_t n_seen, seen_cap;

/* The roots' returns, as offsets into the libc file dev, ino: n_roots
 * of them, 0 when this process's libc could not be told. */
static struct {
	dev_t dev;
	ino_t ino;
	uint64_t off[CAPTURE_FP_ROOTS];
	unsigned n;
} roots;

static Elf_Scn *section(Elf *e, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t strndx;

	if (elf_getshdrstrndx(e, &strndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;

		if (gelf_getshdr(scn, sh) &&
		    (name = elf_strptr(e, strndx, sh->sh_name)) &&
		    !strcmp(name, want))
			return scn;
	}
	return NULL;
}

#ifdef FP_DWARF_REG
enum cfa_kind { CFA_OTHER, CFA_FP, CFA_LEAF };

/* Where the CFA at pc is: on the frame pointer, where a function with a
 * frame has it; at the entry's offset from sp, where a function that
 * neither pushed nor reserved anything has it (its return address is at
 * sp, which the BPF side looks at); or elsewhere. */
/* The CFA's rule at pc. */
static enum cfa_kind cfa_at(Dwarf_CFI *cfi, uint64_t pc)
{
	Dwarf_Frame *fr;
	Dwarf_Op *ops;
	size_t nops;
	enum cfa_kind k = CFA_OTHER;

	if (dwarf_cfi_addrframe(cfi, pc, &fr))
		return CFA_OTHER;
	if (!dwarf_frame_cfa(fr, &ops, &nops) && nops == 1 &&
	    ops[0].atom == DW_OP_bregx) {
		if (ops[0].number == FP_DWARF_REG)
			k = CFA_FP;
		else if (ops[0].number == FP_DWARF_SP &&
			 ops[0].number2 == FP_ENTRY_CFA)
			k = CFA_LEAF;
	}
	free(fr);
	return k;
}

/* Where the CFI of the function at start ends, at most end: the end of
 * its last row. */
static uint64_t cfi_end(Dwarf_CFI *cfi, uint64_t start, uint64_t end)
{
	uint64_t at = start;

	for (int rows = 0; rows < 64 && at < end; rows++) {
		Dwarf_Frame *fr;
		Dwarf_Addr lo, hi;

		if (dwarf_cfi_addrframe(cfi, at, &fr))
			break;
		bool on = dwarf_frame_info(fr, &lo, &hi, NULL) >= 0 && hi > at;
		free(fr);
		if (!on)
			break;
		at = hi;
	}
	return at < end ? at : end;
}

/* The CFA's rule halfway through the function at start, past its
 * prologue and before its epilogue: halfway to the next function, or,
 * where that is padding without CFI (a short leaf), halfway to the end
 * of its own CFI. */
static enum cfa_kind cfa_halfway(Dwarf_CFI *cfi, uint64_t start, uint64_t end)
{
	enum cfa_kind k = cfa_at(cfi, start + (end - start) / 2);

	if (k == CFA_OTHER) {
		uint64_t own = cfi_end(cfi, start, end);

		if (own > start && own < end)
			k = cfa_at(cfi, start + (own - start) / 2);
	}
	return k;
}

/* The function start of .eh_frame_hdr's table entry i (datarel). */
static uint64_t entry_pc(const uint8_t *h, uint64_t hdr_addr, uint32_t i)
{
	return hdr_addr + (uint64_t)(int64_t)(int32_t)cpa_get_le32(h + 12 + 8 * i);
}

/* The rule above, over .eh_frame_hdr's table of function starts (only
 * its usual encoding, pc-relative pointer, udata4 count and datarel
 * sdata4 entries, is read; anything else is no frame-pointer file):
 * every function in .text has its CFA on the frame pointer halfway
 * through, or is a leaf without a frame, and one at least is on the
 * frame pointer. The entry point (_start) is no function. A file that
 * mixes (Rust's std keeps frame pointers, the crates built against it
 * do not) is no frame-pointer file: the first function that is neither
 * ends the look, so a file without frame pointers costs a few. */
static bool cfi_keeps_fp(Elf *e)
{
	GElf_Shdr hs, ts;
	GElf_Ehdr eh;
	Elf_Scn *hdr = section(e, ".eh_frame_hdr", &hs);
	Elf_Scn *text = section(e, ".text", &ts);
	Elf_Data *d;
	Dwarf_CFI *cfi;
	unsigned fp = 0;
	bool mixed = false;

	if (!hdr || !text || !gelf_getehdr(e, &eh) ||
	    !(d = elf_getdata(hdr, NULL)) || d->d_size < 12)
		return false;
	const uint8_t *h = d->d_buf;
	if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b)
		return false;
	uint32_t n = cpa_get_le32(h + 8);
	if (n == 0 || (d->d_size - 12) / 8 < n || !(cfi = dwarf_getcfi_elf(e)))
		return false;
	for (uint32_t i = 0; i < n && !mixed; i++) {
		uint64_t start = entry_pc(h, hs.sh_addr, i);
		uint64_t end = i + 1 < n ? entry_pc(h, hs.sh_addr, i + 1)
					 : ts.sh_addr + ts.sh_size;

		if (start < ts.sh_addr || start >= ts.sh_addr + ts.sh_size ||
		    end <= start || start == eh.e_entry)
			continue;	/* the PLT, _init, _start */
		switch (cfa_halfway(cfi, start, end)) {
		case CFA_FP:
			fp++;
			break;
		case CFA_LEAF:
			break;
		case CFA_OTHER:
			mixed = true;
			break;
		}
	}
	dwarf_cfi_end(cfi);
	return fp && !mixed;
}
#else
static bool cfi_keeps_fp(Elf *e)
{
	(void)e;
	return false;
}
#endif

static bool file_keeps_fp(int fd)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Shdr sh;
	bool fp = false;

	if (e && elf_kind(e) == ELF_K_ELF)
		fp = section(e, ".go.buildinfo", &sh) || cfi_keeps_fp(e);
	if (e)
		elf_end(e);
	return fp;
}

/* What is known of the file m maps, looked at once; NULL when it
 * cannot be opened. */
static const struct fp_file *mapping_file(const struct cpa_mmap *m)
{
	struct stat st;
	int fd = capture_open_mapping(m, FP_FILE_MAX, &st);

	if (fd < 0)
		return NULL;
	for (size_t i = 0; i < n_files; i++)
		if (files[i].dev == st.st_dev && files[i].ino == st.st_ino) {
			close(fd);
			return &files[i];
		}
	CPA_GROW(files, files_cap, n_files + 1);
	struct fp_file *f = &files[n_files++];
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->libc = roots.n && st.st_dev == roots.dev && st.st_ino == roots.ino;
	f->fp = !f->libc && file_keeps_fp(fd);
	close(fd);
	if (f->fp)
		files_fp++;
	else
		files_other++;
	return f;
}

static void *thread_root(void *ret)
{
	*(void **)ret = __builtin_return_address(0);
	return NULL;
}

/* The file a return address of this process lies in, and its offset
 * there, into roots; false when the addresses are not all in one file. */
static bool root_of(uint64_t addr)
{
	struct cpa_maps it;
	struct cpa_map m;
	struct stat st;
	bool found = false;

	if (!addr || cpa_maps_open(&it, 0))
		return false;
	while (!found && cpa_maps_next(&it, &m))
		found = m.start <= addr && addr < m.end && m.path[0] == '/' &&
			!stat(m.path, &st);
	cpa_maps_close(&it);
	if (!found || (roots.n && (st.st_dev != roots.dev ||
				   st.st_ino != roots.ino)))
		return false;
	roots.dev = st.st_dev;
	roots.ino = st.st_ino;
	roots.off[roots.n++] = addr - m.start + m.pgoff;
	return true;
}

/* Where this process's libc returns to when main, and a thread's start
 * function, return. */
static void learn_roots(void)
{
	void *ret = NULL;
	pthread_t t;

	roots.n = 0;
	if (pthread_create(&t, NULL, thread_root, &ret) == 0)
		pthread_join(t, NULL);
	if (!root_of((uintptr_t)capture_main_return) ||
	    !root_of((uintptr_t)ret)) {
		roots.n = 0;
		cpa_debug("libc's roots not found: FP chains through libc take the snapshot");
	}
}

static int fpframes_open(const struct capture_config *cfg,
			 const struct capture_shared *sh, char *why,
			 size_t whylen)
{
	(void)why, (void)whylen;
	if (sh->user_stacks && cfg->stack_size && !cfg->snapshot_always) {
		procs_fd = sh->fp_procs_fd;
		learn_roots();
	}
	elf_version(EV_CURRENT);
	return 0;
}

static struct fp_seen *seen_of(uint32_t pid)
{
	for (size_t i = 0; i < n_seen; i++)
		if (seen[i].pid == pid)
			return &seen[i];
	return NULL;
}

static void fpframes_mapping(const struct cpa_mmap *m, bool at_start)
{
	(void)at_start;
	const struct fp_file *f;
	struct fp_seen *s;
	unsigned i;

	if (procs_fd < 0 || !m->pid || !(m->prot & 4 /* PROT_EXEC */) ||
	    !m->inode || !m->path_len || m->path[0] != '/')
		return;
	f = mapping_file(m);
	if (!f || (!f->fp && !f->libc))
		return;
	s = seen_of(m->pid);
	if (!s) {
		CPA_GROW(seen, seen_cap, n_seen + 1);
		s = &seen[n_seen++];
		memset(s, 0, sizeof(*s));
		s->pid = m->pid;
		s->time_ns = m->time_ns;
		s->ranges.learn = CAPTURE_FP_LEARN;
	}
	if (f->libc) {
		for (i = 0; i < roots.n; i++)
			if (m->pgoff <= roots.off[i] &&
			    roots.off[i] - m->pgoff < m->len)
				s->ranges.root[i] = m->start + roots.off[i] -
						    m->pgoff;
	} else {
		for (i = 0; i < CAPTURE_FP_RANGES && s->ranges.end[i]; i++)
			if (s->ranges.start[i] == m->start)
				return;
		if (i == CAPTURE_FP_RANGES)
			return;	/* the rest takes the snapshot */
		s->ranges.start[i] = m->start;
		s->ranges.end[i] = m->start + m->len;
	}
	/* a process is in fp_procs for its frame-pointer code alone: its
	 * libc's roots wait for it in seen */
	if (!s->ranges.end[0])
		return;
	if (bpf_map_update_elem(procs_fd, &m->pid, &s->ranges, BPF_ANY))
		cpa_debug("pid %u: fp_procs is full", m->pid);
}

/* The process's image ended (exec, exit) at time_ns. */
static void forget(uint32_t pid, uint64_t time_ns)
{
	struct fp_seen *s = seen_of(pid);

	if (!s || s->time_ns > time_ns)
		return;	/* none, or the new image's, drained first */
	*s = seen[--n_seen];
	bpf_map_delete_elem(procs_fd, &pid);
}

static void fpframes_exec(uint32_t pid, uint64_t time_ns)
{
	forget(pid, time_ns);
}

static void fpframes_exit(uint32_t pid, uint64_t time_ns)
{
	forget(pid, time_ns);
}

static void fpframes_close(void)
{
	if (procs_fd >= 0)
		cpa_debug("frame-pointer files: %llu of %llu",
			  (unsigned long long)files_fp,
			  (unsigned long long)(files_fp + files_other));
	free(files);
	free(seen);
	files = NULL;
	seen = NULL;
	n_files = n_seen = files_cap = seen_cap = 0;
	files_fp = files_other = 0;
	procs_fd = -1;
}

/* Processes whose code keeps frame pointers, for the BPF program's
 * fp_procs map, from their mappings, forgotten at exec and exit */
const struct capture_addon fpframes_addon = {
	.name = "fpframes",
	.open = fpframes_open,
	.on_mapping = fpframes_mapping,
	.on_exec = fpframes_exec,
	.on_exit = fpframes_exit,
	.close = fpframes_close,
};
