/* SPDX-License-Identifier: MIT */
/*
 * --mem malloc: loads bpf/heap.bpf.c on the main BPF object's ring
 * buffer, drop counters and filter maps (as memory.c loads the page
 * modes), and attaches its uprobes to the C library each selected
 * process maps, found through /proc/PID/maps and opened through
 * /proc/PID/root, so a container's own libc is probed.
 *
 * With --pid, each process's libc is probed for that process alone: the
 * kernel installs the breakpoints in its address space only, and no other
 * process pays for them. Otherwise each distinct libc file is probed for
 * every process that maps it, now or later, and the BPF filters choose.
 *
 * The BPF side sends sampled sizes; this side scales them: an allocation
 * of s bytes is sampled with probability 1 - exp(-s/N) (N the mean of the
 * exponential intervals), so s / (1 - exp(-s/N)) is its unbiased weight.
 */
#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "cpa-capture.h"
#include "heap.h"
#include "heap.skel.h"
#include "log.h"
#include "mem.h"
#include "procfs.h"
#include "safeopen.h"

static const struct capture_config *cfg;
static struct heap_bpf *skel;
static struct bpf_link **links;
static size_t n_links;
static double mean_bytes;

/* With --pid: the processes probed, each for itself. */
static int *probed_pids;
static size_t n_probed_pids;

/* The libc files probed for every process, by device and inode. */
static struct { dev_t dev; ino_t ino; } *probed;
static size_t n_probed;

/* The allocator's functions: entry program, return program or NULL. */
static const struct {
	const char *func;
	int entry, exit;	/* index into progs() */
} funcs[] = {
	{ "malloc", 0, 6 },
	{ "calloc", 1, 6 },
	{ "realloc", 2, 6 },
	{ "aligned_alloc", 3, 6 },
	{ "posix_memalign", 4, 7 },
	{ "free", 5, -1 },
};

static struct bpf_program *prog(int i)
{
	struct bpf_program *p[] = {
		skel->progs.malloc_enter, skel->progs.calloc_enter,
		skel->progs.realloc_enter, skel->progs.aligned_alloc_enter,
		skel->progs.posix_memalign_enter, skel->progs.free_enter,
		skel->progs.alloc_exit_rc, skel->progs.alloc_exit_memptr,
	};
	return p[i];
}

/* The path of the C library pid maps, as the process sees it, into
 * buf; false when it maps none. */
static bool find_libc(int pid, char *buf, size_t len)
{
	struct cpa_maps it;
	struct cpa_map m;
	bool found = false;

	if (cpa_maps_open(&it, (uint32_t)pid) < 0)
		return false;
	while (!found && cpa_maps_next(&it, &m)) {
		const char *file = m.path, *base;

		if (file[0] != '/' ||
		    (strcmp(m.perms, "r-xp") && strcmp(m.perms, "r--p")))
			continue;
		base = strrchr(file, '/') + 1;
		/* glibc's libc.so.6 (libc-2.31.so before 2.34), musl's
		 * libc.musl-x86_64.so.1 or ld-musl (musl's libc is its
		 * loader) */
		if (!strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) ||
		    !strncmp(base, "libc.musl", 9) || !strncmp(base, "ld-musl", 7)) {
			snprintf(buf, len, "%s", file);
			found = true;
		}
	}
	cpa_maps_close(&it);
	return found;
}

static int attach_one(const char *file, int pid, int i, bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = funcs[i].func,
		    .retprobe = ret);
	struct bpf_program *p = prog(ret ? funcs[i].exit : funcs[i].entry);
	struct bpf_link *l = bpf_program__attach_uprobe_opts(p, pid, file, 0,
							      &opts);

	if (!l)
		return -errno;
	links = cpa_realloc(links, (n_links + 1) * sizeof(*links));
	links[n_links++] = l;
	return 0;
}

/* Probes the allocator of the libc at file (name: its path in
 * messages), for pid (-1: every process mapping it). 0, or -1 when not
 * even malloc and free could be probed. */
static int attach_libc(const char *file, const char *name, int pid)
{
	int got = 0;

	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		int err = attach_one(file, pid, (int)i, false);

		if (!err && funcs[i].exit >= 0)
			err = attach_one(file, pid, (int)i, true);
		if (err) {
			cpa_debug("--mem malloc: %s in %s: %s", funcs[i].func,
				  name, strerror(-err));
			continue;
		}
		got |= !strcmp(funcs[i].func, "malloc") ? 1 :
		       !strcmp(funcs[i].func, "free") ? 2 : 0;
	}
	if (got != 3) {
		cpa_warn("--mem malloc: cannot probe malloc and free in %s",
			 name);
		return -1;
	}
	cpa_debug("--mem malloc: probing %s for %s", name,
		  pid < 0 ? "every process" : "one process");
	return 0;
}

/* Probes the libc of pid for pid alone (with --pid), else once per
 * libc file for every process. The process names the file, and may put
 * a FIFO or a symlink out of its root there: opened by safeopen.h's
 * rules, and probed through our descriptor of it. */
static void probe_process(int pid)
{
	char path[4096], name[4200], file[64];
	struct stat st;
	int fd, rootfd;

	if (!find_libc(pid, path, sizeof(path)))
		return;
	snprintf(name, sizeof(name), "/proc/%d/root%s", pid, path);
	fd = safeopen_in_proc_root((uint32_t)pid, path, NULL, &st, &rootfd);
	if (fd < 0)
		return;
	close(rootfd);
	snprintf(file, sizeof(file), "/proc/self/fd/%d", fd);
	if (cfg->n_pids) {
		for (size_t i = 0; i < n_probed_pids; i++)
			if (probed_pids[i] == pid)
				goto out;
		probed_pids = cpa_realloc(probed_pids, (n_probed_pids + 1) *
					  sizeof(*probed_pids));
		probed_pids[n_probed_pids++] = pid;
		attach_libc(file, name, pid);
		goto out;
	}
	for (size_t i = 0; i < n_probed; i++)
		if (probed[i].dev == st.st_dev && probed[i].ino == st.st_ino)
			goto out;
	probed = cpa_realloc(probed, (n_probed + 1) * sizeof(*probed));
	probed[n_probed].dev = st.st_dev;
	probed[n_probed].ino = st.st_ino;
	n_probed++;
	attach_libc(file, name, -1);
out:
	close(fd);
}

/* A new mapping of a selected process: its libc, if that is one, is
 * probed (those of processes running at the start were, by open). */
static void heap_on_mapping(const struct cpa_mmap *m, bool at_start)
{
	const char *path = m->path, *base = path;
	size_t len = m->path_len;
	uint32_t pid = m->pid;

	if (!skel || at_start)
		return;
	for (size_t i = 0; i < len; i++)
		if (path[i] == '/')
			base = path + i + 1;
	len -= (size_t)(base - path);
	if ((len >= 7 && !memcmp(base, "libc.so", 7)) ||
	    (len >= 5 && !memcmp(base, "libc-", 5)) ||
	    (len >= 9 && !memcmp(base, "libc.musl", 9)) ||
	    (len >= 7 && !memcmp(base, "ld-musl", 7)))
		probe_process((int)pid);
}

/* Every selected process running now: with --pid those, else all of
 * /proc (the BPF filters select among them). */
static void probe_running(void)
{
	if (cfg->n_pids) {
		for (size_t i = 0; i < cfg->n_pids; i++)
			probe_process((int)cfg->pids[i]);
		return;
	}
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		if (capture_process_selected(cfg, (uint32_t)pid))
			probe_process((int)pid);
	}
	closedir(d);
}

/* Quantiles (i + 0.5) / steps of the exponential distribution of mean
 * bytes: the intervals the BPF side draws from. */
static void fill_intervals(volatile __u64 *out, double bytes)
{
	for (int i = 0; i < HEAP_INTERVAL_STEPS; i++) {
		double u = (i + 0.5) / HEAP_INTERVAL_STEPS;
		double v = -log(u) * bytes;

		out[i] = v < 1 ? 1 : (__u64)v;
	}
}

static void heap_close(void);

static int heap_open(const struct capture_config *c,
		     const struct capture_shared *sh, char *why, size_t whylen)
{
	int err;

	if (!(c->mem_modes & MEM_WANT_MALLOC))
		return 0;
	cfg = c;
	mean_bytes = (double)c->mem_sample_bytes;
	skel = heap_bpf__open_opts(capture_open_opts());
	if (!skel) {
		snprintf(why, whylen, "--mem malloc: cannot open the BPF "
			 "object: %s", strerror(errno));
		return -1;
	}
	CAPTURE_SET_FILTERS(skel->rodata, c);
	skel->rodata->ringbuf_bytes = sh->ringbuf_bytes;
	skel->rodata->heap_user_stacks = sh->user_stacks;
	skel->rodata->heap_stack_size = sh->user_stacks ? c->mem_stack_size : 0;
	fill_intervals(skel->rodata->heap_interval, mean_bytes);
	bpf_map__set_max_entries(skel->maps.heap_scratch, (uint32_t)sh->ncpus);
	if ((err = capture_share_maps(skel->obj, sh))) {
		snprintf(why, whylen, "--mem malloc: cannot share the ring "
			 "buffer and filters: %s", strerror(-err));
		goto fail;
	}
	err = heap_bpf__load(skel);
	if (err) {
		snprintf(why, whylen, "--mem malloc: cannot load the BPF "
			 "program: %s%s", strerror(-err),
			 cpa_verbose() ? "" : " (--verbose shows libbpf's log)");
		goto fail;
	}
	/* before the first block: no process ends unseen holding one */
	struct bpf_link *l = bpf_program__attach(skel->progs.heap_exit);
	if (!l) {
		snprintf(why, whylen, "--mem malloc: cannot attach heap_exit "
			 "to its raw tracepoint: %s", strerror(errno));
		goto fail;
	}
	links = cpa_realloc(links, (n_links + 1) * sizeof(*links));
	links[n_links++] = l;
	probe_running();
	return 0;
fail:
	heap_close();
	return -1;
}

uint64_t capture_unbiased_weight(uint64_t size, double mean)
{
	double p = -expm1(-(double)size / mean);

	return p > 0 ? (uint64_t)llround((double)size / p) : size;
}

/* The unbiased weight of a sampled block of size bytes. */
static uint64_t scaled(uint64_t size)
{
	return capture_unbiased_weight(size, mean_bytes);
}

/* Scales a heap sample's weight and queues it (a heap-inuse allocation
 * also as heap-alloc). */
static void heap_sample(struct cpa_raw_sample *s)
{
	s->weight = scaled(s->weight);
	if (s->kind == CPA_KIND_HEAP_INUSE && !(s->flags & CPA_FLAG_FREE)) {
		/* the allocation, once as allocated bytes */
		struct cpa_raw_sample a = *s;

		a.kind = CPA_KIND_HEAP_ALLOC;
		a.flags &= (uint16_t)~CPA_RAW_ALLOC_ID;
		a.alloc_id = 0;
		output_queue_sample(&a);
	}
	output_queue_sample(s);
}

/* Detaches, so nothing more is written to the ring. */
static void heap_detach(void)
{
	for (size_t i = 0; i < n_links; i++)
		bpf_link__destroy(links[i]);
	n_links = 0;
}

static struct bpf_object *heap_object(void)
{
	return skel ? skel->obj : NULL;
}

static void heap_close(void)
{
	heap_detach();
	free(links);
	links = NULL;
	free(probed);
	probed = NULL;
	n_probed = 0;
	free(probed_pids);
	probed_pids = NULL;
	n_probed_pids = 0;
	heap_bpf__destroy(skel);
	skel = NULL;
}

/* --mem malloc: uprobes on the C library's allocator, loaded like
 * memory.c; its samples come through the shared ring to be scaled */
const struct capture_addon heap_addon = {
	.name = "heap",
	.open = heap_open,
	.on_mapping = heap_on_mapping,
	.kinds = 1u << CPA_KIND_HEAP_ALLOC | 1u << CPA_KIND_HEAP_INUSE,
	.sample = heap_sample,
	.detach = heap_detach,
	.object = heap_object,
	.close = heap_close,
};
