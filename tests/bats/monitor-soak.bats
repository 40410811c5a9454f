#!/usr/bin/env bats
# The resident pipeline over a long run (CPA_SOAK_SECONDS, default 600):
# no stage restarts, memory stays flat (but for the ELF cache, which grows
# with the programs the host starts), and history has no gaps.
# Run with `make check-long`.
load helper

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	export CPA_RUN_DIR=$T/run CPA_CONFIG=$T/none.conf CPA_STATS_INTERVAL=5s
}

teardown() {
	[ -n "${MON:-}" ] && kill -TERM "$MON" 2>/dev/null && wait "$MON" 2>/dev/null
	kill_workloads
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# cpa-unwind's ELF cache in KB, from its stats file: it grows whenever a
# program new to the host runs (a compiler, say), up to --max-cache
cache_kb() { sed -n 's/^elf_cache_bytes=//p' "$CPA_RUN_DIR/unwind.stats" | awk '{ print int($1 / 1024) }'; }

@test "monitor soak: no restarts, flat memory, no gaps" {
	secs=${CPA_SOAK_SECONDS:-600}
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds $(( secs + 30 ))
	cpa monitor --dir "$T/store" --flush 2s 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	sleep 60	# warm-up: every process's objects loaded once
	unwind=$(sed -n 's/^unwind=//p' "$CPA_RUN_DIR/stages")
	store=$(sed -n 's/^store=//p' "$CPA_RUN_DIR/stages")
	u0=$(rss_kb "$unwind"); s0=$(rss_kb "$store"); c0=$(cache_kb)
	sleep $(( secs - 60 ))
	u1=$(rss_kb "$unwind"); s1=$(rss_kb "$store"); c1=$(cache_kb)
	echo "unwind RSS ${u0} -> ${u1} KB (ELF cache ${c0} -> ${c1} KB), store RSS ${s0} -> ${s1} KB"
	[ "$(sed -n 's/^restarts=//p' "$CPA_RUN_DIR/stages")" = 0 ]
	# the host is not ours: what unwind gained beyond objects it cached
	# for programs started since must be small
	grow=$(( c1 > c0 ? c1 - c0 : 0 ))
	[ "$u1" -le $(( u0 * 12 / 10 + grow * 12 / 10 + 4096 )) ]
	[ "$s1" -le $(( s0 * 12 / 10 + 4096 )) ]
	kill -TERM "$MON"
	wait "$MON"
	MON=""
	run cpa-query --dir "$T/store" --list
	echo "$output"
	[[ "$output" != *gap* ]]
	# The workload is there in every minute of the run.
	for m in $(seq 1 $(( secs / 60 - 1 ))); do
		from=$(( $(date +%s) - secs + (m - 1) * 60 ))
		cpa-query --dir "$T/store" --from "@$from" --to "@$(( from + 60 ))" | grep '^chain_fp;' >/dev/null
	done
}
