// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The capture filters (--pid, --tid, --comm, --cgroup and --container,
 * --cpu), shared by every BPF object of cpa-capture: each object declares
 * the same maps, and the loader fills the first object's and hands their
 * fds to the others (bpf_map__reuse_fd), so one set of filters selects
 * for all.
 * The rodata switches are set per object.
 */
#ifndef CPA_BPF_FILTER_H
#define CPA_BPF_FILTER_H

/* Set by the loader before load: a filter kind not given costs nothing. */
const volatile bool filter_pid = false;
const volatile bool filter_tid = false;
const volatile bool filter_comm = false;
const volatile bool filter_cgroup = false;
const volatile bool filter_cpu = false;
/* The cgroup v1 hierarchy of the cgroups_v1 map, by the subsystem id of
 * one of its controllers; -1: no v1 cgroup selected. */
const volatile int cgroup_v1_ssid = -1;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1024);
} pids SEC(".maps"), tids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, __u8);
	__uint(max_entries, 1024);
} cgroups SEC(".maps"), cgroups_v1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct capture_comm);
	__type(value, __u8);
	__uint(max_entries, 256);
} comms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, 1);		/* possible CPUs, set by the loader */
} cpus SEC(".maps");

/*
 * For a task pointer the verifier does not trust, such as a raw
 * tracepoint's argument; fill_task reads the same field by plain loads
 * from the trusted current task.
 */
static __always_inline __u64 task_cgroup_id(struct task_struct *t)
{
	return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/* True when cg, or one of its ancestors, is in map. */
static __always_inline bool cgroup_in(struct cgroup *cg, void *map)
{
	for (int i = 0; i < 16 && cg; i++) {
		__u64 id = BPF_CORE_READ(cg, kn, id);

		if (bpf_map_lookup_elem(map, &id))
			return true;
		/* self is the first member of struct cgroup */
		cg = (struct cgroup *)BPF_CORE_READ(cg, self.parent);
	}
	return false;
}

/*
 * The task's cgroup in the v1 hierarchy of cgroup_v1_ssid: its css of
 * that controller. The sample's cgroup id is the v2 one, and on v1 and
 * hybrid hosts runtimes of the cgroupfs driver put a container in v1
 * hierarchies only (/sys/fs/cgroup/memory/docker/ID).
 */
static __always_inline struct cgroup *task_cgroup_v1(struct task_struct *t)
{
	struct css_set *cs = BPF_CORE_READ(t, cgroups);
	struct cgroup_subsys_state *css = NULL;
	unsigned int n = bpf_core_field_size(cs->subsys) / sizeof(css);

	if (!cs || cgroup_v1_ssid < 0 || (unsigned int)cgroup_v1_ssid >= n)
		return NULL;
	if (bpf_probe_read_kernel(&css, sizeof(css),
				  (void *)cs + bpf_core_field_offset(cs->subsys) +
					  cgroup_v1_ssid * sizeof(css)))
		return NULL;
	return css ? BPF_CORE_READ(css, cgroup) : NULL;
}

/* True when the task's cgroup, or one of its ancestors, was selected:
 * in cgroup v2, or in the one v1 hierarchy filtered. */
static __always_inline bool cgroup_selected(struct task_struct *t)
{
	if (cgroup_in(BPF_CORE_READ(t, cgroups, dfl_cgrp), &cgroups))
		return true;
	return cgroup_v1_ssid >= 0 && cgroup_in(task_cgroup_v1(t), &cgroups_v1);
}

static __always_inline bool comm_selected(struct task_struct *t)
{
	struct capture_comm key = {};

	BPF_CORE_READ_STR_INTO(&key.comm, t, comm);
	if (bpf_map_lookup_elem(&comms, &key))
		return true;
	__builtin_memset(&key, 0, sizeof(key));
	BPF_CORE_READ_STR_INTO(&key.comm, t, group_leader, comm);
	return bpf_map_lookup_elem(&comms, &key) != NULL;
}

/* The filters: each given kind must match (--pid and --comm both given
 * means both), any value of a kind matches. */
static __always_inline bool task_selected(struct task_struct *t, __u32 cpu)
{
	if (filter_cpu) {
		__u8 *on = bpf_map_lookup_elem(&cpus, &cpu);

		if (!on || !*on)
			return false;
	}
	if (filter_pid) {
		__u32 tgid = BPF_CORE_READ(t, tgid);

		if (!bpf_map_lookup_elem(&pids, &tgid))
			return false;
	}
	if (filter_tid) {
		__u32 tid = BPF_CORE_READ(t, pid);

		if (!bpf_map_lookup_elem(&tids, &tid))
			return false;
	}
	if (filter_comm && !comm_selected(t))
		return false;
	if (filter_cgroup && !cgroup_selected(t))
		return false;
	return true;
}

/*
 * The sample's task fields. t is bpf_get_current_task_btf()'s trusted
 * pointer, so its fields are plain loads (the verifier makes the ones
 * past a pointer fault-safe) where BPF_CORE_READ makes a helper call
 * each: five calls were a tenth of an on-CPU sample. comm is NUL-padded
 * by the kernel (strscpy_pad), so its 16 bytes are copied whole.
 */
static __always_inline void fill_task(struct capture_event *ev,
				      struct task_struct *t)
{
	ev->pid = t->tgid;
	ev->tid = t->pid;
	ev->cgroup_id = t->cgroups->dfl_cgrp->kn->id;
	__builtin_memcpy(ev->comm, t->comm, sizeof(ev->comm));
	__builtin_memcpy(ev->pcomm, t->group_leader->comm, sizeof(ev->pcomm));
}

#endif
