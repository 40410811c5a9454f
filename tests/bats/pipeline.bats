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
		cpa-unwind --folded --labels comm,pid >"$T/host.folded" 2>"$T/unwind.err"
	after=$(cpu_ms "$WL_PID")
	WL_CPU_MS=$(( after - before ))
}

cpu_ms() {	# utime + stime of a process, in ms
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / hz) }' "/proc/$1/stat"
}

@test "whole host: the workload's full chain, comm as root, in >= 90% of its samples" {
	capture_chain_folded 4
	# Its samples are there, under its process name and pid (another
	# test's chain_fp may still be finishing; [[] is a literal [ to awk)
	mine="^chain_fp;[[]pid $WL_PID[]];"
	total=$(awk -v pat="$mine" '$0 ~ pat { n = split($0, f, " "); s += f[n] } END { print s + 0 }' "$T/host.folded")
	expected=$(( WL_CPU_MS * 49 / 1000 ))
	echo "chain_fp samples: $total, expected from its CPU time: $expected"
	[ "$expected" -ge 40 ]	# it really ran during the capture
	# 49 Hz of the CPU time it got. The CPU time also spans capture's
	# start-up and shutdown, hence the wider margin below.
	[ "$total" -ge $(( expected * 6 / 10 )) ]
	[ "$total" -le $(( expected * 13 / 10 + 2 )) ]
	share=$(share_with_chain "$T/host.folded" "$mine" 'main;run;level_a;level_b;hot_leaf')
	echo "share with the full chain: $share%"
	[ "$share" -ge 90 ]
	# The chain is rooted at the comm: "chain_fp;...;main;run;...".
	grep -q '^chain_fp;\(.*;\)\?main;run;level_a;level_b;hot_leaf\( \|;\)' "$T/host.folded"
}

@test "whole host: kernel frames carry _[k], and only kernel frames do" {
	# dd reading zeros spends its time in the kernel: kernel stacks are
	# there however little else on the host enters the kernel meanwhile
	timeout 30 dd if=/dev/zero of=/dev/null bs=1M 2>/dev/null 3>&- &
	WL_BG_PIDS="${WL_BG_PIDS:-} $!"
	capture_chain_folded 3
	grep -q '^dd;[[]pid [0-9]*[]];.*_\[k\]' "$T/host.folded"
	# Known kernel entry points are suffixed, never bare.
	must_fail grep -qE '(^|;)(entry_SYSCALL_64|do_syscall_64|__x64_sys_[a-z_]+)(;| )' "$T/host.folded"
	# No user frame of the workload is marked as kernel.
	must_fail grep -qE '(hot_leaf|level_a|level_b)_\[k\]' "$T/host.folded"
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
	must_fail grep -qE '(^|;)0x[0-9a-f]+(;| )' "$T/nofp.folded"
}

@test "a dictionary reset (cpa-unwind --max-dict) changes nothing downstream" {
	start_workload "$T/a.out" "$WL/chain_fp" --seconds 8
	start_workload "$T/b.out" "$WL/chain_nofp" --seconds 8 --threads 1
	cpa-capture --duration 2 >"$T/rec.cpa"
	cpa-unwind <"$T/rec.cpa" >"$T/plain.cpa"
	# A bound of one byte starts the dictionaries over after every sample.
	cpa-unwind --max-dict 1 <"$T/rec.cpa" >"$T/reset.cpa"
	resets=$("$CPA_BUILDDIR/tests/tools/cpa-dump" "$T/reset.cpa" | grep -c '^reset$')
	samples=$("$CPA_BUILDDIR/tests/tools/cpa-dump" "$T/reset.cpa" | grep -c '^sample ')
	echo "resets $resets, samples $samples"
	[ "$samples" -ge 50 ]
	[ "$resets" -eq "$samples" ]
	# render and store see the same profile either way
	cpa-render --format folded <"$T/plain.cpa" | sort >"$T/plain.folded"
	cpa-render --format folded <"$T/reset.cpa" | sort >"$T/reset.folded"
	[ "$(wc -l <"$T/plain.folded")" -ge 2 ]
	cmp "$T/plain.folded" "$T/reset.folded"
	cpa-store --dir "$T/s1" <"$T/plain.cpa"
	cpa-store --dir "$T/s2" <"$T/reset.cpa"
	cpa-query --dir "$T/s1" --from @0 --to now --labels comm,tid | sort >"$T/q1"
	cpa-query --dir "$T/s2" --from @0 --to now --labels comm,tid | sort >"$T/q2"
	cmp "$T/q1" "$T/q2"
}
