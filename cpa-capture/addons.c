// SPDX-License-Identifier: MIT
/*
 * The add-ons, in one table: what each does when the capture opens, at
 * each new mapping, exec and exit, each poll cycle and at the end
 * (struct capture_addon, cpa-capture.h). The backend, the side-band
 * tracking, the start scan and the main loop call these and never an
 * add-on by name, so a new runtime or event source is a file with its
 * table and a line here. Each call goes to the add-ons in table order.
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "cpa-capture.h"
#include "safeopen.h"

static const struct capture_addon *const addons[] = {
	&memory_addon,	/* --mem virt, phys, usage */
	&heap_addon,	/* --mem malloc */
	&java_addon,	/* --java-alloc, --java-live */
	&python_addon,	/* CPython frames for the BPF walker */
	&fpframes_addon,	/* code that keeps frame pointers */
};
#define N_ADDONS (sizeof(addons) / sizeof(addons[0]))

int capture_addons_open(const struct capture_config *cfg,
			const struct capture_shared *sh, char *why,
			size_t whylen)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->open && addons[i]->open(cfg, sh, why, whylen) < 0)
			return -1;
	return 0;
}

void capture_addons_start(const struct capture_config *cfg)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->start)
			addons[i]->start(cfg);
}

void capture_addons_mapping(const struct cpa_mmap *m, bool at_start)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->on_mapping)
			addons[i]->on_mapping(m, at_start);
}

void capture_addons_exec(uint32_t pid, uint64_t time_ns)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->on_exec)
			addons[i]->on_exec(pid, time_ns);
}

void capture_addons_exit(uint32_t pid, uint64_t time_ns)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->on_exit)
			addons[i]->on_exit(pid, time_ns);
}

bool capture_addons_sample(struct cpa_raw_sample *s)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->sample && s->kind < 32 && (addons[i]->kinds & 1u << s->kind)) {
			addons[i]->sample(s);
			return true;
		}
	return false;
}

void capture_addons_drain(void)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->drain)
			addons[i]->drain();
}

void capture_addons_detach(void)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->detach)
			addons[i]->detach();
}

void capture_addons_stop(void)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->stop)
			addons[i]->stop();
}

uint64_t capture_addons_run_ns(void)
{
	uint64_t ns = 0;

	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->object)
			ns += capture_object_ns(addons[i]->object());
	return ns;
}

void capture_addons_print_stats(double seconds)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->object)
			capture_object_stats(addons[i]->object(), seconds);
}

void capture_addons_meta_mode(const struct capture_config *cfg, char *buf,
			      size_t len)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->meta_mode)
			addons[i]->meta_mode(cfg, buf, len);
}

void capture_addons_close(void)
{
	for (size_t i = 0; i < N_ADDONS; i++)
		if (addons[i]->close)
			addons[i]->close();
}

/* The file of a mapping, through the process's own view of it, so a
 * process in another mount namespace, or one whose file was replaced,
 * is read as it runs. The process chooses the file and may have swapped
 * it since it mapped it (a FIFO would hold the capture forever): opened
 * by lib/base/safeopen.h's rules, a regular file of a bounded size, resolved
 * inside the process's root. */
int capture_open_mapping(const struct cpa_mmap *m, uint64_t max_size,
			 struct stat *st)
{
	const struct safeopen_rules rules = {
		.ino = m->inode, .max_size = max_size,
	};
	char fn[128];
	int fd;

	snprintf(fn, sizeof(fn), "/proc/%u/map_files/%" PRIx64 "-%" PRIx64,
		 m->pid, m->start, m->start + m->len);
	fd = safeopen_host(fn, &rules, st);
	if (fd < 0) {	/* gone already, or no CAP_SYS_ADMIN */
		char path[4200];
		int rootfd;

		snprintf(path, sizeof(path), "%.*s", (int)m->path_len, m->path);
		fd = safeopen_in_proc_root(m->pid, path, &rules, st, &rootfd);
		if (fd >= 0)
			close(rootfd);
	}
	return fd;
}
