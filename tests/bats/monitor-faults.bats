#!/usr/bin/env bats
# `cpa monitor`'s fault handling, on real BPF capture: a stage killed, a
# stage hung, and an idle pipeline the watchdog must leave alone. Each
# waits out restarts and watchdog periods, so they run with
# `make check-long`; monitor.bats has the rest.
load helper
load monitor_helper

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

@test "watchdog: a stopped unwind stage is found hung; the pipeline restarts, counted, and samples flow again" {
	require_bpf
	start_monitor --stats-interval 1s --watchdog 3
	wait_for 30 windows_stored || { grep -v 'stats:' "$T/monitor.err"; false; }
	wait_for 20 reported unwind 1
	old=$(stage_pid unwind)
	kill -STOP "$old"
	wait_for 30 restarted_once
	grep -q "unwind stage hung: no statistics for [0-9]*s (pid $old); restarting the pipeline" "$T/monitor.err"
	[ "$(sed -n 's/^hung=//p' "$CPA_RUN_DIR/stages")" = 1 ]
	[ "$(stage_pid unwind)" != "$old" ]
	run ! kill -0 "$old"
	run cpa status
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"pipeline restarts 1 (1 for a hung stage)" ]]
	after=$(date +%s)
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	wait_for 40 store_has "@$after" '^chain_fp;.*hot_leaf'
	[ "$(restarts)" = 1 ]
}

@test "watchdog: an idle but healthy pipeline is not restarted" {
	require_bpf
	# Capture only a process that sleeps: no samples reach unwind or store.
	sleep 120 3>&- &
	WL_BG_PIDS="${WL_BG_PIDS:-} $!"
	start_monitor --pid $! --stats-interval 1s --watchdog 2
	# Ten intervals, each stage reporting throughout: five times the
	# watchdog's limit.
	for stage in capture unwind store; do
		wait_for 40 reported "$stage" 10
	done
	[ "$(restarts)" = 0 ]
	run ! grep -q 'hung' "$T/monitor.err"
}
