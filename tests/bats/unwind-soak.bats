#!/usr/bin/env bats
# Soak test, part of `make check-long`, not `make check`:
#   CPA_BUILDDIR=build CPA_SOAK_SECONDS=300 bats tests/bats/unwind-soak.bats
# Whole-host capture piped into cpa-unwind for CPA_SOAK_SECONDS while short
# processes come and go; cpa-unwind's memory must level off, its process
# table must not keep the dead ones, and the stream must end cleanly.
load helper

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	: "${CPA_SOAK_SECONDS:=120}"
}

teardown() {
	kill_workloads
}

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

@test "cpa-unwind stays bounded over a long capture with process churn" {
	start_workload "$T/wl.out" "$WL/chain_nofp" --seconds $(( CPA_SOAK_SECONDS + 10 ))
	# churn: a new short-lived process every 50 ms
	( end=$(( $(date +%s) + CPA_SOAK_SECONDS )); while [ "$(date +%s)" -lt "$end" ]; do
		"$WL/chain_nofp" --seconds 0.05 >/dev/null; done ) &
	WL_BG_PIDS="$WL_BG_PIDS $!"
	cpa-capture --duration "${CPA_SOAK_SECONDS}s" --freq 99 2>"$T/capture.err" |
		cpa-unwind --max-cache 64M --stats >/dev/null 2>"$T/stats" &
	sleep 1
	unwind=$(pgrep -n -x cpa-unwind)
	early=0 late=0
	for i in $(seq 1 $(( CPA_SOAK_SECONDS / 5 - 1 ))); do
		sleep 5
		r=$(rss_kb "$unwind")
		[ "$i" -eq $(( CPA_SOAK_SECONDS / 15 )) ] && early=$r
		[ "$r" -gt "$late" ] && late=$r
	done
	wait_for 30 grep -q 'latency per sample' "$T/stats"
	cat "$T/stats"
	echo "RSS at a third: ${early} KB, highest: ${late} KB"
	# the ELF cache is bounded at 64M; dictionaries, process state and
	# buffers must fit in as much again
	[ "$late" -le $(( 2 * 65536 )) ]
	live=$(awk '/processes/ { print $2 }' "$T/stats")
	echo "processes still held: $live"
	[ "$live" -lt 2000 ]
}
