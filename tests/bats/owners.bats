#!/usr/bin/env bats
# Owners of stored samples: workloads placed by the test into cgroups named
# as Docker, containerd (CRI) and the kubelet (systemd and cgroupfs
# drivers) name them, captured with BPF, unwound, stored and queried: each
# sample carries its cgroup path, container id and pod UID. One capture
# serves every test (setup_file); the cgroups are removed in teardown_file.
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

# in_cgroup NAME PATH: the chain workload started inside cgroup PATH,
# whose missing directories are made and recorded for teardown
in_cgroup() {
	local name=$1 cg=$2 part path=""
	local -a parts
	IFS=/ read -ra parts <<<"${cg#/}"
	for part in "${parts[@]}"; do
		path="$path/$part"
		if [ ! -d "$CGROOT$path" ]; then
			mkdir "$CGROOT$path"
			echo "$path" >>"$BATS_FILE_TMPDIR/made"
		fi
	done
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --seconds 12' sh \
		"$CGROOT$cg" "$WL/chain_fp" >"$BATS_FILE_TMPDIR/$name.out" 2>&1 3>&- &
	wait_for 10 grep -q '^ready ' "$BATS_FILE_TMPDIR/$name.out"
	awk '/^ready /{print $2; exit}' "$BATS_FILE_TMPDIR/$name.out" >"$BATS_FILE_TMPDIR/$name.pid"
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
	U1=$(cat /proc/sys/kernel/random/uuid)
	U2=$(cat /proc/sys/kernel/random/uuid)
	export D C K1 K2 L U1 U2
	local F=$BATS_FILE_TMPDIR i=0 cg
	: >"$F/made"
	while read -r cg; do
		i=$((i + 1))
		in_cgroup "w$i" "$cg"
	done < <(owner_cgroups)
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
		wait_for 10 cgroup_removed "$CGROOT$p"
	done
}

cgroup_removed() {
	rmdir "$1" 2>/dev/null || [ ! -d "$1" ] ||
		[ -n "$(find "$1" -mindepth 1 -maxdepth 1 -type d)" ]
}

setup() {
	F=$BATS_FILE_TMPDIR
}

# labels_of NAME LABELS: the distinct label prefixes of workload NAME's samples
labels_of() {
	cpa-query --dir "$F/s" --pid "$(cat "$F/$1.pid")" --labels "$2" |
		awk -F';' '{l = ""; for (i = 1; i <= NF && $i ~ /^\[/; i++) l = l (i > 1 ? ";" : "") $i; print l}' |
		sort -u
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
	cpa-query --dir "$F/s" "$@" |
		awk -F';' '{l = ""; for (i = 1; i <= NF && $i ~ /^\[/; i++) l = l (i > 1 ? ";" : "") $i; print l}' |
		sort -u
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
