#!/usr/bin/env bats
# The always-on pipeline, cpa-capture | cpa-unwind | cpa-store, on the real
# host, with a workload started in the middle: the store knows when it ran.
load helper

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
}

teardown() {
	kill_workloads
	[ -n "${PIPE_PID:-}" ] && kill "$PIPE_PID" 2>/dev/null || true
}

clock_reached() {
	[ "$(date +%s)" -ge "$1" ]
}

@test "live: a workload started mid-capture is absent before it started and present after" {
	( cpa-capture --duration 10 2>"$T/capture.err" |
		cpa-unwind 2>"$T/unwind.err" |
		cpa-store --dir "$T/s" --flush 500ms --grace 500ms 2>"$T/store.err" ) &
	PIPE_PID=$!
	# cpa-capture reports its features once it samples; then give it two
	# whole seconds of the host without the workload (the pipe between
	# the stages is buffered, so the store itself shows it only later)
	wait_for 20 grep -q 'backend' "$T/capture.err"
	local t=$(( $(date +%s) + 2 ))
	wait_for 5 clock_reached "$t"
	before=$(date +%s)
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	after=$(( $(date +%s) + 1 ))
	wait "$PIPE_PID"
	PIPE_PID=
	# whole windows ending before the workload existed: none of it
	cpa-query --dir "$T/s" --to "@$before" >"$T/before.folded"
	[ -s "$T/before.folded" ]
	must_fail grep -q '^chain_fp;' "$T/before.folded"
	# windows after it was ready: its chain, under its name
	cpa-query --dir "$T/s" --from "@$after" >"$T/after.folded"
	total=$(awk '/^chain_fp;/ { s += $NF } END { print s + 0 }' "$T/after.folded")
	echo "chain_fp weight after start: $total" >&2
	[ "$total" -ge 50 ]
	grep -q '^chain_fp;\(.*;\)\?main;run;level_a;level_b;hot_leaf' "$T/after.folded"
	# and the pid filter finds it by its pid, and nothing else: every
	# line is that pid (the comm may be the shell's for the instant
	# between fork and exec, when a sample can land on it too)
	cpa-query --dir "$T/s" --pid "$WL_PID" --labels comm,pid >"$T/pid.folded"
	grep -q "^chain_fp;\[pid $WL_PID\];" "$T/pid.folded"
	if grep -v "^[^;]*;\[pid $WL_PID\];" "$T/pid.folded" >&2; then
		echo "lines of other pids above" >&2
		false
	fi
}
