#!/usr/bin/env bats
# `cpa monitor`, `cpa show` and `cpa status`: the resident pipeline under
# supervision, on real BPF capture.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	export CPA_RUN_DIR=$T/run CPA_CONFIG=$T/none.conf CPA_STATS_INTERVAL=1s
	STORE=$T/store
}

teardown() {
	[ -n "${MON:-}" ] && kill -TERM "$MON" 2>/dev/null && wait "$MON" 2>/dev/null
	kill_workloads
}

stage_pid() { sed -n "s/^$1=//p" "$CPA_RUN_DIR/stages" 2>/dev/null; }
restarts() { sed -n 's/^restarts=//p' "$CPA_RUN_DIR/stages" 2>/dev/null; }
restarted_once() { [ "$(restarts)" = 1 ]; }
store_has() { cpa-query --dir "$STORE" --from "$1" --to now 2>/dev/null | grep "$2" >/dev/null; }
windows_stored() { cpa-query --dir "$STORE" --list 2>/dev/null | awk '$1 ~ /^\// && $(NF-2) > 0 { ok = 1 } END { exit !ok }'; }

start_monitor() {
	cpa monitor --dir "$STORE" --flush 1s "$@" 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
}

@test "monitor: kill -9 of the unwind stage is survived; data after the restart is stored" {
	require_bpf
	start_monitor
	wait_for 30 windows_stored
	old=$(stage_pid unwind)
	kill -9 "$old"
	wait_for 30 restarted_once
	[ "$(stage_pid unwind)" != "$old" ]
	grep -q 'unwind stage ended' "$T/monitor.err"
	after=$(date +%s)
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	wait_for 40 store_has "@$after" '^chain_fp;.*hot_leaf'
	kill -TERM "$MON"
	wait "$MON"
	MON=""
}

@test "monitor: SIGTERM stops it cleanly with the last window stored" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	# A long flush interval: only the clean stop can store the last seconds.
	cpa monitor --dir "$STORE" --flush 60s 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	sleep 3	# let it record a few seconds of the workload
	stop=$(date +%s)
	kill -TERM "$MON"
	st=0
	wait "$MON" || st=$?
	MON=""
	[ "$st" -eq 0 ]
	grep -q 'stopped' "$T/monitor.err"
	# The seconds just before the stop are there.
	store_has "@$((stop - 2))" '^chain_fp;.*hot_leaf'
	[ ! -e "$CPA_RUN_DIR/monitor.pid" ]
}

@test "monitor: a config file with an unknown key is rejected with its line number" {
	printf 'freq = 49\n# a comment\n\nfrobnicate = 3\n' >"$T/bad.conf"
	run cpa monitor --config "$T/bad.conf" --dir "$STORE"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad.conf:4: unknown key 'frobnicate'"* ]]
	printf 'freq 49\n' >"$T/bad2.conf"
	run cpa monitor --config "$T/bad2.conf" --dir "$STORE"
	[ "$status" -eq 2 ]
	[[ "$output" == *"bad2.conf:1: expected 'key = value'"* ]]
	run cpa monitor --config "$T/missing.conf"
	[ "$status" -ne 0 ]
	[[ "$output" == *"missing.conf: no such config file"* ]]
}

@test "monitor: options come from the config file, the command line wins" {
	require_bpf
	printf 'freq = 10\nflush = 1s\n' >"$T/cpa.conf"
	cpa monitor --config "$T/cpa.conf" --dir "$STORE" --freq 99 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	args=$(tr '\0' ' ' <"/proc/$(stage_pid capture)/cmdline")
	[[ "$args" == *"--freq=10"*"--freq=99"* ]]
	args=$(tr '\0' ' ' <"/proc/$(stage_pid store)/cmdline")
	[[ "$args" == *"--flush=1s"* ]]
}

@test "status: shows non-zero rates while the monitor runs" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	start_monitor
	wait_for 30 test -s "$CPA_RUN_DIR/capture.stats"
	wait_for 30 test -s "$CPA_RUN_DIR/store.stats"
	sleep 2	# a second report carries rates over a full interval
	run cpa status
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"cost:"*"% of one core"* ]]
	# Each stage reports a positive rate of samples.
	for stage in capture unwind store; do
		line=$(grep "^$stage " <<<"$output")
		[[ "$line" =~ samples[a-z_]*=[0-9]+\(([0-9.]+)/s\) ]]
		awk -v r="${BASH_REMATCH[1]}" 'BEGIN { exit !(r > 0) }'
	done
}

@test "status: says so when no monitor runs" {
	run cpa status
	[ "$status" -eq 1 ]
	[[ "$output" == *"no running monitor"* ]]
}

@test "show: the same folded output as the equivalent cpa-query pipeline" {
	gen="$CPA_BUILDDIR/tests/tools/gen-stream"
	if [ -x "$gen" ]; then
		"$gen" >"$T/in.stream"
	else
		printf 'app;main;run;leaf 5\napp;main;idle 2\n' >"$T/in.stream"
	fi
	cpa-store --dir "$STORE" <"$T/in.stream"
	cpa show --dir "$STORE" --from @0 --to now --format folded -o "$T/show.folded"
	cpa-query --dir "$STORE" --from @0 --to now | cpa-render --format folded >"$T/query.folded"
	[ -s "$T/query.folded" ]
	cmp "$T/show.folded" "$T/query.folded"
	# CPA's name for the range listing works too.
	run cpa show --dir "$STORE" --show_range
	[ "$status" -eq 0 ]
	[[ "$output" == *range* ]]
	run cpa show --dir "$STORE" --bogus-option
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown option '--bogus-option'"* ]]
}

@test "CPA's option names: --oneshot writes one profile; show takes --read, --starttime, --output_prof" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 10
	cpa monitor --oneshot --duration 2 --output_prof "$T/one.svg" 2>"$T/err"
	xmllint --noout "$T/one.svg"
	grep -q 'hot_leaf' "$T/one.svg"
	printf 'app;main;run;leaf 5\n' | cpa-store --dir "$STORE"
	cpa show --read "$STORE" --starttime @0 --endtime now --output_prof "$T/show.svg" 2>"$T/err"
	grep -q 'leaf' "$T/show.svg"
	run cpa show --read "$STORE" --use_cui
	[ "$status" -eq 2 ]
	[[ "$output" == *"--use_cui (CPA) has no equivalent"* ]]
	run cpa monitor --persistent_day soon
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --persistent_day 'soon'"* ]]
}
