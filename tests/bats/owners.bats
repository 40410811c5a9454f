#!/usr/bin/env bats
# Owners of stored samples: workloads placed by the test into cgroups named
# as Docker, containerd (CRI) and the kubelet (systemd and cgroupfs
# drivers) name them, captured with BPF, unwound, stored and queried: each
# sample carries its cgroup path, container id and pod UID. Where the host
# has cgroup v1 controllers (v1 or hybrid), workloads are also placed as
# the cgroupfs driver places them there, in v1 hierarchies only
# (/sys/fs/cgroup/{cpu,memory,pids}/docker/ID), and a second capture
# selects one of them with --container. One capture serves every test
# (setup_file); the cgroups are removed in teardown_file.
load helper

# Ids drawn per run (setup_file exports them), so that two runs of this
# suite on one host never share a cgroup.
hex64() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }

cgroup2_root() { findmnt -t cgroup2 -n -o TARGET | sed -n 1p; }

# The cgroups, relative to the cgroup2 mount, in creation order.
owner_cgroups() {
	echo "/system.slice/docker-$D.scope"
	echo "/system.slice/cri-containerd-$C.scope"
	echo "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${U1//-/_}.slice/cri-containerd-$K1.scope"
	echo "/kubepods/burstable/pod$U2/$K2"
}

# mkcgroup ROOT PATH: the cgroup PATH in the hierarchy mounted at ROOT,
# each directory this makes recorded for teardown
mkcgroup() {
	local part path=$1
	local -a parts
	IFS=/ read -ra parts <<<"${2#/}"
	for part in "${parts[@]}"; do
		path="$path/$part"
		if [ ! -d "$path" ]; then
			mkdir "$path"
			echo "$path" >>"$BATS_FILE_TMPDIR/made"
		fi
	done
}

# in_cgroup NAME PATH: the chain workload started inside cgroup PATH
in_cgroup() {
	local name=$1 cg=$2
	mkcgroup "$CGROOT" "$cg"
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --seconds 12' sh \
		"$CGROOT$cg" "$WL/chain_fp" >"$BATS_FILE_TMPDIR/$name.out" 2>&1 3>&- &
	wait_for 10 grep -q '^ready ' "$BATS_FILE_TMPDIR/$name.out"
	awk '/^ready /{print $2; exit}' "$BATS_FILE_TMPDIR/$name.out" >"$BATS_FILE_TMPDIR/$name.pid"
}

# The v1 controllers a container is put in, those of them mounted here.
v1_controllers() {
	local c
	for c in cpu memory pids; do
		[ "$(findmnt -n -o FSTYPE "/sys/fs/cgroup/$c")" = cgroup ] && echo "$c"
	done
	return 0
}

# in_v1_cgroup NAME PATH [V2PATH]: the chain workload started inside v1
# cgroup PATH of every controller of v1_controllers (and v2 cgroup V2PATH,
# one that names no owner, as a hybrid host's service cgroup), the
# directories made recorded for teardown
in_v1_cgroup() {
	local name=$1 cg=$2 v2=${3:-} c
	local -a procs=()
	for c in $V1_CONTROLLERS; do
		mkcgroup "/sys/fs/cgroup/$c" "$cg"
		procs+=("/sys/fs/cgroup/$c$cg/cgroup.procs")
	done
	if [ -n "$v2" ]; then
		mkcgroup "$CGROOT" "$v2"
		procs+=("$CGROOT$v2/cgroup.procs")
	fi
	sh -c 'exe=$1; shift; for f; do echo $$ >"$f" || exit 1; done; exec "$exe" --seconds 12' sh \
		"$WL/chain_fp" "${procs[@]}" >"$BATS_FILE_TMPDIR/$name.out" 2>&1 3>&- &
	wait_for 10 grep -q '^ready ' "$BATS_FILE_TMPDIR/$name.out"
	awk '/^ready /{print $2; exit}' "$BATS_FILE_TMPDIR/$name.out" >"$BATS_FILE_TMPDIR/$name.pid"
	cat "/proc/$(cat "$BATS_FILE_TMPDIR/$name.pid")/cgroup" >"$BATS_FILE_TMPDIR/$name.cgroup"
}

walked() { grep -qE '^cgroup_walks=[1-9]' "$BATS_FILE_TMPDIR/unwind.stats"; }

setup_file() {
	require_bpf
	CGROOT=$(cgroup2_root)
	if [ -z "$CGROOT" ]; then
		skip "no cgroup2 hierarchy mounted"
	fi
	export CGROOT
	D=$(hex64) C=$(hex64) K1=$(hex64) K2=$(hex64) L=$(hex64)
	V=$(hex64) K3=$(hex64)
	U1=$(cat /proc/sys/kernel/random/uuid)
	U2=$(cat /proc/sys/kernel/random/uuid)
	U3=$(cat /proc/sys/kernel/random/uuid)
	V1_CONTROLLERS=$(v1_controllers | tr '\n' ' ')
	export D C K1 K2 L U1 U2 V K3 U3 V1_CONTROLLERS
	local F=$BATS_FILE_TMPDIR i=0 cg
	: >"$F/made"
	while read -r cg; do
		i=$((i + 1))
		in_cgroup "w$i" "$cg"
	done < <(owner_cgroups)
	if [ -n "$V1_CONTROLLERS" ]; then
		in_v1_cgroup v1docker "/docker/$V" "/cpa-owners-$V.service"
		in_v1_cgroup v1kube "/kubepods/burstable/pod$U3/$K3"
		# the kernel-side filter on a container of v1 hierarchies only
		cpa-capture --duration 6 --container "${V:0:12}" 2>"$F/v1cap.err" 3>&- |
			cpa-unwind --folded --labels pid,container 2>"$F/v1unwind.err" \
				>"$F/v1filter.folded" &
	fi
	cpa-capture --duration 10 2>"$F/cap.err" 3>&- |
		cpa-unwind --stats-file "$F/unwind.stats" --stats-interval 200ms 2>"$F/unwind.err" |
		cpa-store --dir "$F/s" 3>&- &
	# the late cgroup is made once unwind has walked the hierarchy
	# without it: found by a later walk
	wait_for 20 walked
	in_cgroup late "/system.slice/docker-$L.scope"
	wait
}

teardown_file() {
	local F=$BATS_FILE_TMPDIR p
	for p in "$F"/*.pid; do
		[ -e "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	[ -s "$F/made" ] || return 0
	# deepest first; a cgroup empties once its process has exited, and a
	# parent another run of this suite still uses is left to that run
	tac "$F/made" | while read -r p; do
		wait_for 10 cgroup_removed "$p"
	done
}

cgroup_removed() {
	rmdir "$1" 2>/dev/null || [ ! -d "$1" ] ||
		[ -n "$(find "$1" -mindepth 1 -maxdepth 1 -type d)" ]
}

setup() {
	F=$BATS_FILE_TMPDIR
}

# root_labels: the distinct root labels of the folded lines on stdin: the
# leading "[...]" frames, up to a marker ([truncated] roots a chain that
# was cut, under its labels)
root_labels() {
	awk -F';' '{l = ""; for (i = 1; i <= NF && $i ~ /^\[/ && $i != "[truncated]"; i++) l = l (i > 1 ? ";" : "") $i; print l}' |
		sort -u
}

# labels_of NAME LABELS: the distinct label prefixes of workload NAME's samples
labels_of() {
	cpa-query --dir "$F/s" --pid "$(cat "$F/$1.pid")" --labels "$2" | root_labels
}

@test "owners: samples carry their container id and pod UID after a round trip through the store" {
	run labels_of w1 container,pod
	echo "$output"
	[ "$output" = "[container $D]" ]
	run labels_of w2 container,pod
	[ "$output" = "[container $C]" ]
	run labels_of w3 container,pod
	[ "$output" = "[container $K1];[pod $U1]" ]
	run labels_of w4 container,pod
	[ "$output" = "[container $K2];[pod $U2]" ]
	run labels_of w4 cgroup
	[ "$output" = "[cgroup /kubepods/burstable/pod$U2/$K2]" ]
	# the chain below the labels is the workload's
	cpa-query --dir "$F/s" --pid "$(cat "$F/w1.pid")" --labels container >"$F/q"
	grep -q "^\[container $D\];.*;main;run;level_a;level_b;hot_leaf [0-9]*$" "$F/q"
}

# roots_of ARGS...: the distinct label prefixes cpa-query gives for ARGS
roots_of() {
	cpa-query --dir "$F/s" "$@" | root_labels
}

@test "owners: a filter on one container or pod returns only its samples" {
	# (under a sanitizer, LeakSanitizer's helper at a workload's exit is
	# another process of the same name in the same cgroup: the filters
	# are checked by cgroup, and by which workloads' pids are in)
	run roots_of --container "${D:0:12}" --labels cgroup
	echo "$output"
	[ "$output" = "[cgroup /system.slice/docker-$D.scope]" ]
	roots_of --container "${D:0:12}" --labels pid >"$F/pids"
	grep -qx "\[pid $(cat "$F/w1.pid")\]" "$F/pids"
	run grep -c -e "$(cat "$F/w2.pid")" -e "$(cat "$F/w3.pid")" -e "$(cat "$F/w4.pid")" "$F/pids"
	[ "$output" = 0 ]
	run roots_of --pod "$U1" --labels pod,cgroup
	[ "$output" = "[pod $U1];[cgroup /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${U1//-/_}.slice/cri-containerd-$K1.scope]" ]
	run roots_of --cgroup "/kubepods/burstable/pod$U2" --labels container
	[ "$output" = "[container $K2]" ]
	run cpa-query --dir "$F/s" --container "xyz"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "owners: a cgroup created after capture and unwinding started resolves" {
	# Samples of its first second may precede the next walk (at most one
	# a second) and go unlabelled; the rest carry the container.
	cpa-query --dir "$F/s" --pid "$(cat "$F/late.pid")" --labels container >"$F/q"
	cat "$F/q"
	grep cgroup "$F/unwind.stats"
	run bash -c "set -o pipefail; grep -o '^\[container [0-9a-f]*\]' '$F/q' | sort -u"
	[ "$output" = "[container $L]" ]
	local with without
	with=$(awk '/^\[container / {n += $NF} END {print n + 0}' "$F/q")
	without=$(awk '!/^\[container / {n += $NF} END {print n + 0}' "$F/q")
	[ "$with" -gt "$without" ]
	# found by a later walk, and not by one per sample
	[ "$(awk -F= '$1 == "cgroup_walks" {print $2}' "$F/unwind.stats")" -ge 2 ]
	[ "$(awk -F= '$1 == "cgroup_walks" {print $2}' "$F/unwind.stats")" -le 10 ]
}

need_v1() {
	[ -n "$V1_CONTROLLERS" ] || skip "this host has no cgroup v1 controller mounted (cgroup v2 only)"
}

@test "owners: containers in cgroup v1 hierarchies (cgroupfs driver) carry their container id and pod UID" {
	need_v1
	# the v2 cgroup of this one names no owner, as on a hybrid host
	cat "$F/v1docker.cgroup"
	grep -q "^0::/cpa-owners-$V.service$" "$F/v1docker.cgroup"
	grep -q ":/docker/$V$" "$F/v1docker.cgroup"
	run labels_of v1docker container,pod
	echo "$output"
	[ "$output" = "[container $V]" ]
	run labels_of v1docker cgroup
	[ "$output" = "[cgroup /docker/$V]" ]
	run labels_of v1kube container,pod
	[ "$output" = "[container $K3];[pod $U3]" ]
	cpa-query --dir "$F/s" --pid "$(cat "$F/v1kube.pid")" --labels pod >"$F/q"
	grep -q "^\[pod $U3\];.*;main;run;level_a;level_b;hot_leaf [0-9]*$" "$F/q"
	# and the query's filters find them
	run roots_of --container "${V:0:12}" --labels pid
	[ "$output" = "[pid $(cat "$F/v1docker.pid")]" ]
	run roots_of --pod "$U3" --labels container
	[ "$output" = "[container $K3]" ]
}

@test "owners: capture --container selects, in the kernel, a container of cgroup v1 hierarchies only" {
	need_v1
	cat "$F/v1cap.err"
	sort "$F/v1filter.folded" | uniq -c | sed -n 1,5p
	[ "$(awk '!/^\[lost\] / {n += $NF} END {print n + 0}' "$F/v1filter.folded")" -gt 3 ]
	# every sample is the container's; its workload's are there (under a
	# sanitizer LeakSanitizer's helper is another process of the
	# container: the check is by container, and by which workloads' pids
	# are in)
	# ([lost] lines count samples the capture lost, not samples)
	awk '/^\[lost\] / { next } { c = "none"; if (match($0, /\[container [0-9a-f]+\]/)) c = substr($0, RSTART + 11, RLENGTH - 12); print c }' "$F/v1filter.folded" | sort -u >"$F/v1filter.owners"
	run cat "$F/v1filter.owners"
	[ "$output" = "$V" ]
	grep -q "^\[pid $(cat "$F/v1docker.pid")\];" "$F/v1filter.folded"
	run grep -c -e "^\[pid $(cat "$F/v1kube.pid")\];" -e "^\[pid $(cat "$F/w1.pid")\];" "$F/v1filter.folded"
	[ "$output" = 0 ]
}
