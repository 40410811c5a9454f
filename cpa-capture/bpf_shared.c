// SPDX-License-Identifier: MIT
/*
 * The BPF plumbing the backend and the add-ons share: the main object's
 * ring buffer and filter maps, which an add-on's object takes over before
 * its load, and the run time and --stats line of each BPF program. It
 * sits beneath both: the backend hands the maps down (struct
 * capture_shared), the add-ons use them, and neither calls the other.
 */
#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cpa-capture.h"
#include "log.h"

static struct bpf_object_open_opts open_opts = {
	.sz = sizeof(open_opts),
};

void capture_set_btf(const char *path)
{
	open_opts.btf_custom_path = path;
}

const struct bpf_object_open_opts *capture_open_opts(void)
{
	return &open_opts;
}

int capture_share_maps(struct bpf_object *obj, const struct capture_shared *sh)
{
	const struct bpf_map *theirs[] = { sh->events, sh->drops, sh->pids,
					   sh->tids, sh->comms, sh->cgroups,
					   sh->cgroups_v1, sh->cpus };

	for (size_t i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++) {
		struct bpf_map *ours = bpf_object__find_map_by_name(
			obj, bpf_map__name(theirs[i]));
		int err = ours ? bpf_map__reuse_fd(ours, bpf_map__fd(theirs[i]))
			       : -ENOENT;

		if (err)
			return err;
	}
	return 0;
}

/* A loaded program's runs and run time so far; false when it is not
 * loaded or the kernel does not say. */
static bool prog_info(struct bpf_program *p, uint64_t *runs, uint64_t *ns)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	if (!bpf_program__autoload(p) || bpf_program__fd(p) < 0)
		return false;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return false;
	*runs = info.run_cnt;
	*ns = info.run_time_ns;
	return true;
}

uint64_t capture_prog_ns(struct bpf_program *p)
{
	uint64_t runs, ns;

	return prog_info(p, &runs, &ns) ? ns : 0;
}

void capture_prog_stats(struct bpf_program *p, double seconds)
{
	uint64_t runs, ns;

	if (!prog_info(p, &runs, &ns))
		return;
	fprintf(stderr, "%s: bpf %s: %llu runs, %.0f ns/run, %.4f%% of one "
		"CPU\n", cpa_progname(), bpf_program__name(p),
		(unsigned long long)runs, runs ? (double)ns / runs : 0.0,
		seconds > 0 ? 100.0 * ns / (seconds * 1e9) : 0.0);
}

uint64_t capture_object_ns(struct bpf_object *obj)
{
	struct bpf_program *p;
	uint64_t ns = 0;

	if (!obj)
		return 0;
	bpf_object__for_each_program(p, obj)
		ns += capture_prog_ns(p);
	return ns;
}

void capture_object_stats(struct bpf_object *obj, double seconds)
{
	struct bpf_program *p;

	if (!obj)
		return;
	bpf_object__for_each_program(p, obj)
		capture_prog_stats(p, seconds);
}
