/* SPDX-License-Identifier: MIT */
/*
 * Python processes: each new executable mapping of a CPython interpreter
 * (the python executable, or libpython) is looked at once per file: its
 * version from the Py_Version it exports (3.11 and later) or, before that,
 * from its file name, and where _PyRuntime is; 3.13 and later put their
 * own offsets (_Py_DebugOffsets) at its start, read in place of the
 * table where cpa knows their layout. A version cpa has offsets
 * for (lib/runtime/pyoffsets.c) is handed to the BPF walker through py_procs,
 * keyed by process; any other version is sampled natively, and the stream
 * says why, once per process, in a meta record (key "python").
 */
#include <config.h>

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cpa-capture.h"
#include "buf.h"
#include "log.h"
#include "name.h"
#include "pyframes.h"
#include "pyoffsets.h"

/* The largest interpreter file read: a libpython with its debug
 * symbols is tens of MB; a file far larger is no interpreter. */
#define PY_FILE_MAX (512ull << 20)

static int procs_fd = -1;

/* What one interpreter file holds, read once per device and inode. */
struct py_file {
	dev_t dev;
	ino_t ino;
	uint16_t version;	/* 0: not a CPython interpreter */
	uint64_t runtime;	/* _PyRuntime's address in the file */
	uint64_t vaddr, offset;	/* the PT_LOAD mapped at pgoff, see bias() */
	GElf_Phdr *loads;
	size_t n_loads;
	struct cpa_py_offsets dbg;	/* from _Py_DebugOffsets, if dbg_err */
	const char *dbg_err;		/* NULL: dbg holds them */
};
static struct py_file *files;
static size_t n_files, files_cap;

/* Processes already described or noted, so each is handled once, with
 * the time of the mapping that made them Python: the side-band rings are
 * drained CPU by CPU, so an exec can be drained after the new image's
 * mapping that another CPU reported. */
struct py_seen {
	uint32_t pid;
	uint64_t time_ns;
};
static struct py_seen *seen;
static size_t n_seen, seen_cap;

static int python_open(const struct capture_config *cfg,
		       const struct capture_shared *sh, char *why,
		       size_t whylen)
{
	(void)cfg, (void)why, (void)whylen;
	procs_fd = sh->py_procs_fd;
	elf_version(EV_CURRENT);
	return 0;
}

static bool name_is_python(const char *path, size_t len)
{
	const char *base = memrchr(path, '/', len);

	base = base ? base + 1 : path;
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython", 9);
}

/* 3.9 and 3.10 export no Py_Version: "python3.10", "libpython3.9.so.1.0" */
static uint16_t version_from_name(const char *path)
{
	const char *p = strstr(path, "python3.");
	unsigned minor;

	if (!p || sscanf(p + 8, "%u", &minor) != 1 || minor > 255)
		return 0;
	return (uint16_t)(3 << 8 | minor);
}

static bool read_at(int fd, const GElf_Phdr *loads, size_t n, uint64_t vaddr,
		    void *out, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (vaddr >= loads[i].p_vaddr &&
		    vaddr + len <= loads[i].p_vaddr + loads[i].p_filesz)
			return pread(fd, out, len, (off_t)(loads[i].p_offset +
							   vaddr - loads[i].p_vaddr)) ==
			       (ssize_t)len;
	return false;
}

static void read_file(struct py_file *pf, int fd, const char *path)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	uint64_t py_version = 0, version_at = 0;
	Elf_Scn *scn = NULL;
	size_t nph;

	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nph))
		goto out;
	pf->loads = cpa_calloc(nph ? nph : 1, sizeof(*pf->loads));
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			pf->loads[pf->n_loads++] = ph;
	}
	/* .dynsym first: Python exports both names from every build */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "_PyRuntime"))
				pf->runtime = sym.st_value;
			else if (!strcmp(name, "Py_Version"))
				version_at = sym.st_value;
		}
		if (pf->runtime && version_at)
			break;
	}
	if (!pf->runtime)
		goto out;
	/* Py_Version is PY_VERSION_HEX: 0x030b02f0 is 3.11.2 final */
	if (version_at &&
	    read_at(fd, pf->loads, pf->n_loads, version_at, &py_version, 4))
		pf->version = (uint16_t)((py_version >> 24) << 8 |
					 ((py_version >> 16) & 0xff));
	else
		pf->version = version_from_name(path);
	if (pf->version >= 0x030d) {
		uint8_t raw[CPA_PY_DEBUG_OFFSETS_SIZE];

		if (!read_at(fd, pf->loads, pf->n_loads, pf->runtime, raw,
			     sizeof(raw)))
			pf->dbg_err = "_PyRuntime unreadable";
		else if (!cpa_py_offsets_debug(raw, sizeof(raw), &pf->dbg,
					       &pf->dbg_err))
			pf->dbg_err = NULL;
	}
out:
	if (e)
		elf_end(e);
}

/* An interpreter file, read once per device and inode. */
static struct py_file *lookup_file(const struct cpa_mmap *m)
{
	struct stat st;
	struct py_file *pf;
	int fd = capture_open_mapping(m, PY_FILE_MAX, &st);

	if (fd < 0)
		return NULL;
	for (size_t i = 0; i < n_files; i++)
		if (files[i].dev == st.st_dev && files[i].ino == st.st_ino) {
			close(fd);
			return &files[i];
		}
	CPA_GROW(files, files_cap, n_files + 1);
	pf = &files[n_files++];
	memset(pf, 0, sizeof(*pf));
	pf->dev = st.st_dev;
	pf->ino = st.st_ino;
	char path[4200];
	snprintf(path, sizeof(path), "%.*s", (int)m->path_len, m->path);
	read_file(pf, fd, path);
	close(fd);
	return pf;
}

/* Load bias of the file in this process: the PT_LOAD segment that holds
 * the mapping's file offset says which address that offset has. */
static bool bias(const struct py_file *pf, const struct cpa_mmap *m,
		 uint64_t *out)
{
	for (size_t i = 0; i < pf->n_loads; i++) {
		const GElf_Phdr *ph = &pf->loads[i];

		if (m->pgoff >= (ph->p_offset & ~4095ull) &&
		    m->pgoff < ph->p_offset + ph->p_filesz) {
			*out = m->start - m->pgoff -
			       ((ph->p_vaddr - ph->p_offset) & ~4095ull);
			return true;
		}
	}
	return false;
}

static bool first_sight(uint32_t pid, uint64_t time_ns)
{
	for (size_t i = 0; i < n_seen; i++)
		if (seen[i].pid == pid)
			return false;
	CPA_GROW(seen, seen_cap, n_seen + 1);
	seen[n_seen++] = (struct py_seen){ pid, time_ns };
	return true;
}

/* The process's image ended (exec, exit) at time_ns. */
static void forget(uint32_t pid, uint64_t time_ns)
{
	for (size_t i = 0; i < n_seen; i++)
		if (seen[i].pid == pid) {
			if (seen[i].time_ns > time_ns)
				return;	/* the new image's, drained first */
			seen[i] = seen[--n_seen];
			break;
		}
	if (procs_fd >= 0)
		bpf_map_delete_elem(procs_fd, &pid);
}

static void describe(struct capture_py_proc *pp, const struct cpa_py_offsets *o,
		     uint64_t runtime)
{
	uint16_t top = o->frame_code;

	memset(pp, 0, sizeof(*pp));
	pp->interp_head = runtime + o->runtime_interp_head;
	pp->version = o->version;
	pp->interp_threads = o->interp_threads;
	pp->tstate_next = o->tstate_next;
	pp->tstate_tid = o->tstate_tid;
	pp->tstate_frame = o->tstate_frame;
	pp->cframe_frame = o->cframe_frame;
	pp->frame_code = o->frame_code;
	pp->frame_previous = o->frame_previous;
	pp->frame_instr = o->frame_instr;
	pp->frame_entry = o->frame_entry;
	pp->code_bytecode = o->code_bytecode;
	pp->tid_kind = o->tid_kind;
	pp->entry_mask = o->entry_mask;
	pp->entry_each = o->entry_each;
	pp->instr_index = o->instr_kind == CPA_PY_INSTR_INDEX;
	pp->instr_shift = o->instr_shift;
	pp->shim_owner = o->shim_owner;
	/* read up to the last field the walker needs */
	if (o->frame_previous > top)
		top = o->frame_previous;
	if (o->frame_instr > top)
		top = o->frame_instr;
	if (o->frame_entry > top)
		top = o->frame_entry;
	pp->frame_read = (uint16_t)((top + 8) & ~7u);
}

static void python_mapping(const struct cpa_mmap *m, bool at_start)
{
	(void)at_start;
	struct capture_py_proc pp;
	const struct cpa_py_offsets *o;
	struct py_file *pf;
	uint64_t b;
	const char *why = NULL;
	char note[320];

	if (procs_fd < 0 || !m->pid || !(m->prot & 4 /* PROT_EXEC */) ||
	    !name_is_python(m->path, m->path_len))
		return;
	pf = lookup_file(m);
	if (!pf || !pf->version || !bias(pf, m, &b) ||
	    !first_sight(m->pid, m->time_ns))
		return;
	o = cpa_py_offsets(pf->version);
	if (o && pf->version >= 0x030d) {
		/* the interpreter's own offsets; the table where it has none */
		if (!pf->dbg_err)
			o = &pf->dbg;
		else if (strcmp(pf->dbg_err, "no _Py_DebugOffsets"))
			why = pf->dbg_err;
	}
	if (!o || why) {
		/* the process named the file: its name is made clean, as
		 * any name a process chooses (lib/base/name.h) */
		char *copy;
		const char *path = cpa_name_safe(m->path, m->path_len, &copy);
		snprintf(note, sizeof(note),
			 "pid %u: CPython %u.%u (%.*s) is not supported (%s%s): "
			 "native frames only",
			 m->pid, pf->version >> 8, pf->version & 0xff,
			 (int)m->path_len, path, why ? why : "cpa knows ",
			 why ? "" : cpa_py_versions());
		free(copy);
		cpa_warn("%s", note);
		output_meta("python", note);
		return;
	}
	describe(&pp, o, b + pf->runtime);
	if (bpf_map_update_elem(procs_fd, &m->pid, &pp, BPF_ANY))
		cpa_debug("pid %u: py_procs is full", m->pid);
}

static void python_exec(uint32_t pid, uint64_t time_ns)
{
	forget(pid, time_ns);
}

static void python_exit(uint32_t pid, uint64_t time_ns)
{
	forget(pid, time_ns);
}

static void python_close(void)
{
	for (size_t i = 0; i < n_files; i++)
		free(files[i].loads);
	free(files);
	free(seen);
	files = NULL;
	seen = NULL;
	n_files = n_seen = files_cap = seen_cap = 0;
	procs_fd = -1;
}

/* CPython processes described for the BPF frame walker (its py_procs
 * map), from their interpreter's mappings, forgotten at exec and exit */
const struct capture_addon python_addon = {
	.name = "python",
	.open = python_open,
	.on_mapping = python_mapping,
	.on_exec = python_exec,
	.on_exit = python_exit,
	.close = python_close,
};
