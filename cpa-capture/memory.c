/* SPDX-License-Identifier: MIT */
/*
 * --mem virt,phys,usage: loads bpf/mem.bpf.c through its own skeleton,
 * on the ring buffer, drop counters and filter maps of the main BPF
 * object (bpf_backend.c), so its samples reach user space, and are
 * counted when dropped, exactly as every other sample.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture.h"
#include "cpa-capture.h"
#include "log.h"
#include "mem.h"
#include "mem.skel.h"

static struct mem_bpf *skel;
static struct bpf_link **links;
static size_t n_links;

static int attach(struct bpf_program *p)
{
	struct bpf_link *l = bpf_program__attach(p);

	if (!l) {
		cpa_err("--mem: cannot attach %s: %s", bpf_program__name(p),
			strerror(errno));
		return -1;
	}
	links = cpa_realloc(links, (n_links + 1) * sizeof(*links));
	links[n_links++] = l;
	return 0;
}

static void memory_close(void);

static int memory_open(const struct capture_config *cfg,
		       const struct capture_shared *sh, char *why,
		       size_t whylen)
{
	unsigned want = cfg->mem_modes;
	bool pages = want & (MEM_WANT_PHYS | MEM_WANT_USAGE);
	struct bpf_program *virt[] = { NULL, NULL, NULL, NULL, NULL, NULL };
	int err;

	if (!(want & (MEM_WANT_VIRT | MEM_WANT_PHYS | MEM_WANT_USAGE)))
		return 0;
	skel = mem_bpf__open_opts(capture_open_opts());
	if (!skel) {
		snprintf(why, whylen, "--mem: cannot open the BPF object: %s",
			 strerror(errno));
		return -1;
	}
	CAPTURE_SET_FILTERS(skel->rodata, cfg);
	skel->rodata->ringbuf_bytes = sh->ringbuf_bytes;
	skel->rodata->mem_want = want;
	skel->rodata->mem_user_stacks = sh->user_stacks;
	skel->rodata->mem_stack_size = sh->user_stacks ? cfg->mem_stack_size : 0;
	skel->rodata->mem_probability = cfg->mem_probability;

	bpf_map__set_max_entries(skel->maps.mem_scratch,
				 (uint32_t)sh->ncpus * MEM_SLOT_COUNT);
	bpf_map__set_max_entries(skel->maps.mem_pages,
				 want & MEM_WANT_USAGE ? cfg->mem_max_pages : 1);
	if ((err = capture_share_maps(skel->obj, sh))) {
		snprintf(why, whylen, "--mem: cannot share the ring buffer and "
			 "filters: %s", strerror(-err));
		goto fail;
	}
	virt[0] = skel->progs.mmap_enter;
	virt[1] = skel->progs.mmap_exit;
	virt[2] = skel->progs.brk_enter;
	virt[3] = skel->progs.brk_exit;
	virt[4] = skel->progs.mremap_enter;
	virt[5] = skel->progs.mremap_exit;
	for (size_t i = 0; i < 6; i++)
		bpf_program__set_autoload(virt[i], want & MEM_WANT_VIRT);
	bpf_program__set_autoload(skel->progs.fault_mark, pages);
	bpf_program__set_autoload(skel->progs.page_alloc, pages);
	bpf_program__set_autoload(skel->progs.page_free,
				  want & MEM_WANT_USAGE);
	bpf_program__set_autoload(skel->progs.page_free_batched,
				  want & MEM_WANT_USAGE);
	err = mem_bpf__load(skel);
	if (err) {
		snprintf(why, whylen, "--mem: cannot load the BPF program: %s%s",
			 strerror(-err),
			 cpa_verbose() ? "" : " (--verbose shows libbpf's log)");
		goto fail;
	}
	for (size_t i = 0; i < 6; i++)
		if ((want & MEM_WANT_VIRT) && attach(virt[i]) < 0)
			goto fail_reported;
	/* frees first, so no page is allocated unseen by them */
	if ((want & MEM_WANT_USAGE) &&
	    (attach(skel->progs.page_free) < 0 ||
	     attach(skel->progs.page_free_batched) < 0))
		goto fail_reported;
	if (pages && (attach(skel->progs.page_alloc) < 0 ||
		      attach(skel->progs.fault_mark) < 0))
		goto fail_reported;
	return 0;

fail_reported:
	why[0] = 0;
fail:
	memory_close();
	return -1;
}

/* Appends the memory modes to the stream's "mode" meta value. */
static void memory_meta_mode(const struct capture_config *cfg, char *buf,
			     size_t len)
{
	static const char *const names[] = { "mem-virt", "mem-phys",
					      "mem-usage", "malloc" };

	for (unsigned i = 0; i < 4; i++) {
		size_t at = strlen(buf);

		if (cfg->mem_modes & (1u << i))
			snprintf(buf + at, len - at, "%s%s", at ? "," : "",
				 names[i]);
	}
}

/* Detaches, so nothing more is written to the ring. */
static void memory_detach(void)
{
	for (size_t i = 0; i < n_links; i++)
		bpf_link__destroy(links[i]);
	n_links = 0;
}

static struct bpf_object *memory_object(void)
{
	return skel ? skel->obj : NULL;
}

static void memory_close(void)
{
	memory_detach();
	free(links);
	links = NULL;
	mem_bpf__destroy(skel);
	skel = NULL;
}

/* --mem virt, phys, usage: loaded after the main BPF object, on its maps */
const struct capture_addon memory_addon = {
	.name = "memory",
	.open = memory_open,
	.detach = memory_detach,
	.object = memory_object,
	.meta_mode = memory_meta_mode,
	.close = memory_close,
};
