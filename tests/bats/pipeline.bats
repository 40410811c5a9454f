#!/usr/bin/env bats
# The whole one-shot pipeline, cpa-capture | cpa-unwind | cpa-render, on
# real BPF capture of the whole host while workloads with known call
# chains run.
load helper

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
}

teardown() {
	kill_workloads
}

# Captures the whole host for $1 seconds while chain_fp spins; leaves the
# folded output in $T/host.folded.
# Sets WL_CPU_MS to the CPU time the workload got during the capture, so
# that sample counts are checked against what it really ran, loaded machine
# or not.
capture_chain_folded() {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds $(( $1 + 5 ))
	local before after
	before=$(cpu_ms "$WL_PID")
	cpa-capture --duration "$1" 2>"$T/capture.err" |
		cpa-unwind --folded >"$T/host.folded" 2>"$T/unwind.err"
	after=$(cpu_ms "$WL_PID")
	WL_CPU_MS=$(( after - before ))
}

cpu_ms() {	# utime + stime of a process, in ms
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$1/stat"
}

@test "whole host: the workload's full chain, comm as root, in >= 90% of its samples" {
	capture_chain_folded 4
	# Its samples are there, under its process name.
	total=$(awk '/^chain_fp;/ { n = split($0, f, " "); s += f[n] } END { print s + 0 }' "$T/host.folded")
	expected=$(( WL_CPU_MS * 49 / 1000 ))
	echo "chain_fp samples: $total, expected from its CPU time: $expected"
	[ "$expected" -ge 40 ]	# it really ran during the capture
	# 49 Hz of the CPU time it got. The CPU time also spans capture's
	# start-up and shutdown, hence the wider margin below.
	[ "$total" -ge $(( expected * 6 / 10 )) ]
	[ "$total" -le $(( expected * 13 / 10 + 2 )) ]
	share=$(share_with_chain "$T/host.folded" '^chain_fp;' 'main;run;level_a;level_b;hot_leaf')
	echo "share with the full chain: $share%"
	[ "$share" -ge 90 ]
	# The chain is rooted at the comm: "chain_fp;...;main;run;...".
	grep -q '^chain_fp;\(.*;\)\?main;run;level_a;level_b;hot_leaf\( \|;\)' "$T/host.folded"
}

@test "whole host: kernel frames carry _[k], and only kernel frames do" {
	capture_chain_folded 3
	grep -q '_\[k\]' "$T/host.folded"
	# Known kernel entry points are suffixed, never bare.
	! grep -qE '(^|;)(entry_SYSCALL_64|do_syscall_64|__x64_sys_[a-z_]+)(;| )' "$T/host.folded"
	# No user frame of the workload is marked as kernel.
	! grep -qE '(hot_leaf|level_a|level_b)_\[k\]' "$T/host.folded"
}

@test "capture | unwind | render writes an SVG flame graph with the chain" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 8
	cpa-capture --duration 3 | cpa-unwind | cpa-render --title "pipeline test" >"$T/host.svg"
	xmllint --noout "$T/host.svg"
	grep -q 'pipeline test' "$T/host.svg"
	for f in chain_fp main run level_a level_b hot_leaf; do
		grep -q "$f" "$T/host.svg"
	done
}

@test "frames of a workload without frame pointers stay attributed to its module" {
	start_workload "$T/wl.out" "$WL/chain_nofp" --seconds 7
	cpa-capture --duration 3 | cpa-unwind --folded >"$T/nofp.folded"
	# Whatever the unwinder recovers, the leaf is symbolized and no bare
	# address appears: unresolved frames are module+0xoffset.
	grep -q '^chain_nofp;.*hot_leaf [0-9]*$' "$T/nofp.folded"
	! grep -qE '(^|;)0x[0-9a-f]+(;| )' "$T/nofp.folded"
}
