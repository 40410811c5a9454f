#!/usr/bin/env bats
# `cpa monitor` and `cpa status`: the resident pipeline under supervision,
# its documented examples and CPA's monitor options, on real BPF capture.
# Its fault handling (a stage killed or hung, the watchdog) is in
# monitor-faults.bats, run by `make check-long`; `cpa show` is in
# cpa-show.bats and cpa-compat.bats.
load helper
load monitor_helper

@test "monitor: SIGTERM stops it cleanly with the last window stored" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	# A long flush interval: only the clean stop can store the last seconds.
	cpa monitor --dir "$STORE" --flush 60s 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	# a few seconds of the workload recorded: the store's report says it
	# has run 3 s and taken samples
	wait_for 30 reported store 3
	wait_for 30 took_samples store
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
	[[ "$(stage_args capture)" == *"--freq=99"* ]]
	[[ "$(stage_args capture)" != *"--freq=10"* ]]
	[[ "$(stage_args store)" == *"--flush=1s"* ]]
}

@test "monitor: the memory modes from cpa.conf and the command line reach capture and unwind" {
	require_bpf
	printf 'mem = usage,malloc\nmem-probability = 100\nflush = 1s\n' >"$T/cpa.conf"
	# --pid: no other process on the host pays for the malloc uprobes
	cpa monitor --config "$T/cpa.conf" --dir "$STORE" --pid $$ \
		--mem-probability 50 --mem-sample-bytes 64K --max-allocs 5000 \
		2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	[[ "$(stage_args capture)" == *" --mem=usage,malloc "* ]]
	# the command line's --mem-probability replaces the file's
	[[ "$(stage_args capture)" == *" --mem-probability=50 "* ]]
	[[ "$(stage_args capture)" != *"--mem-probability=100"* ]]
	[[ "$(stage_args capture)" == *" --mem-sample-bytes=64K"* ]]
	[[ "$(stage_args unwind)" == *" --max-allocs=5000"* ]]
	# and the pipeline runs with them
	wait_for 20 grep -q '^cpa-capture: kernel ' "$T/monitor.err"
	run ! grep -q 'restarting the pipeline' "$T/monitor.err"
}

@test "status: shows non-zero rates while the monitor runs" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	start_monitor
	wait_for 30 test -s "$CPA_RUN_DIR/capture.stats"
	wait_for 30 test -s "$CPA_RUN_DIR/store.stats"
	# a second report (every 1 s) carries rates over a full interval;
	# on a loaded host unwind's first loads may hold the samples longer
	for stage in capture unwind store; do
		wait_for 30 reported "$stage" 2
	done
	wait_for 60 rates_positive
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

# rates_positive: cpa status shows each stage moving samples
rates_positive() {
	local out stage line
	out=$(cpa status) || return 1
	for stage in capture unwind store; do
		line=$(grep "^$stage " <<<"$out") || return 1
		[[ "$line" =~ samples[a-z_]*=[0-9]+\(([0-9.]+)/s\) ]] || return 1
		awk -v r="${BASH_REMATCH[1]}" 'BEGIN { exit !(r > 0) }' || return 1
	done
}

@test "status: says so when no monitor runs" {
	run cpa status
	[ "$status" -eq 1 ]
	[[ "$output" == *"no running monitor"* ]]
}

@test "monitor: README's and cpa(1)'s examples: cpa monitor, cpa monitor --freq 99 --retain 3d" {
	require_bpf
	printf 'dir = %s\nflush = 1s\n' "$STORE" >"$T/cpa.conf"
	export CPA_CONFIG=$T/cpa.conf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	for example in "cpa monitor" "cpa monitor --freq 99 --retain 3d"; do
		rm -rf "$STORE"
		$example 2>"$T/monitor.err" 3>&- &
		MON=$!
		wait_for 20 test -s "$CPA_RUN_DIR/stages"
		[[ "$(stage_args store)" == *"--dir=$STORE"* ]]
		if [[ "$example" == *99* ]]; then
			[[ "$(stage_args capture)" == *"--freq=99"* ]]
			[[ "$(stage_args store)" == *"--retain=3d"* ]]
		fi
		wait_for 40 store_has @0 '^chain_fp;.*hot_leaf'
		kill -TERM "$MON"
		wait "$MON"
		MON=""
	done
}

@test "monitor: --duration S stops after S seconds, exit 0; CPA's monitor names reach their stages" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	start=$(date +%s)
	cpa monitor --store_dir "$STORE" --flush 1s --record_interval 2 --persistent_day 3 \
		--max_store_size_mb 100 --max_cache_size_mb 64 --record_env_name HOME \
		--stack_size 8192 --bench --strip_name_disable 1 --freq 49 --backend bpf \
		--offcpu 1 --kernel_stack 0 --probe tracepoint:sched:sched_process_exec \
		--duration 5 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	cap=$(stage_args capture) unw=$(stage_args unwind) sto=$(stage_args store)
	for a in --freq=49 --backend=bpf --offcpu --stack-size=8192 \
		--probe=tracepoint:sched:sched_process_exec --duration=; do
		[[ " $cap " == *" $a"* ]]
	done
	[[ "$cap" != *--kernel-only* ]]
	# --bench: cpa-unwind's DWARF timings every stats interval, as CPA
	for a in --max-cache=64M --env=HOME --bench; do [[ " $unw " == *" $a "* ]]; done
	for a in "--dir=$STORE" --interval=2 --retain=3d --max-size=100M; do
		[[ " $sto " == *" $a "* ]]
	done
	st=0
	wait "$MON" || st=$?
	MON=""
	[ "$st" -eq 0 ]
	took=$(( $(date +%s) - start ))
	[ "$took" -ge 5 ]
	grep -q -- '--duration 5 reached' "$T/monitor.err"
	run ! grep -q 'restart' "$T/monitor.err"
	# Two-second windows of the workload were stored.
	cpa-query --dir "$STORE" --from @0 --to now | grep '^chain_fp;.*hot_leaf' >/dev/null
	[ ! -e "$CPA_RUN_DIR/monitor.pid" ]
}

@test "monitor: CPA's -s, -F, -r, -P, -d short options" {
	require_bpf
	cpa monitor -s "$STORE" -F 19 -r 3 -P 2 -d 3 --flush 1s 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	[[ "$(stage_args capture)" == *"--freq=19"* ]]
	[[ "$(stage_args store)" == *"--dir=$STORE --interval=3 --retain=2d"* ]]
	wait "$MON"
	MON=""
	grep -q -- '--duration 3 reached' "$T/monitor.err"
}

@test "monitor: CPA's 'name: value' config lines; bad values are rejected with their line" {
	require_bpf
	printf 'store_dir: %s\nfreq: 19\nflush = 1s\noffcpu: 1\nduration: 2\n' "$STORE" >"$T/cpa.conf"
	cpa monitor --config "$T/cpa.conf" 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	[[ "$(stage_args capture)" == *"--freq=19"*"--offcpu"* ]]
	[[ "$(stage_args store)" == *"--dir=$STORE"* ]]
	wait "$MON"
	MON=""
	printf 'persistent_day: soon\n' >"$T/bad.conf"
	run cpa monitor --config "$T/bad.conf"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: invalid --persistent_day 'soon': expected a whole number" ]]
	run cpa monitor --duration soon
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: invalid --duration 'soon': expected seconds or a duration such as 10m" ]]
	run cpa monitor --watchdog -1
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: invalid --watchdog '-1': expected a number of intervals (0: off)" ]]
	run cpa monitor --format svg
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: -o, --output, --output_prof, --format and --title need --oneshot" ]]
}
