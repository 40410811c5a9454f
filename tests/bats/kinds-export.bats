#!/usr/bin/env bats
# A range or a one-shot profile of several kinds exports without an
# extra option, as CPA's users type it (`cpa monitor -u 1`, `--probe`):
# folded text with each kind under its root marker, a graph per unit
# (docs/render.md, "Several kinds"). Real captures, run at once.
load capture_helper

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR CPA_CONFIG=/dev/null CPA_RUN_DIR=$BATS_FILE_TMPDIR/run
	# on-CPU and off-CPU in one process: one thread spins, one yields,
	# both on one CPU, from now on
	start_bg c "$WL/sleeper" --contend 60 --pin 0
	C=$(pidof_wl c)
	kill -USR1 "$C"
	# probe hits, counted: the writer calls counted_call 50 times once
	# the uprobe is attached
	start_bg w "$WL/writer" --writes 0 --calls 50
	W=$(pidof_wl w)

	cd "$T"
	cpa monitor -s S -u 1 -d 3 -p "$C" >m.log 2>&1 &
	local m=$!
	CPA_RUN_DIR=$T/run1 cpa monitor --oneshot --offcpu 1 -p "$C" -d 3 -o o.svg >o.log 2>&1 &
	local o=$!
	CPA_RUN_DIR=$T/run2 cpa monitor --oneshot --probe "uprobe:$WL/writer:counted_call" \
		-p "$W" -d 8 --output_prof p.prof >p.log 2>&1 &
	local p=$!
	wait_for 30 grep -q '^cpa-capture: kernel ' p.log
	kill -USR1 "$W"
	local rc=0
	wait "$m" || rc=$?
	echo "$rc" >m.status
	rc=0; wait "$o" || rc=$?
	echo "$rc" >o.status
	rc=0; wait "$p" || rc=$?
	echo "$rc" >p.status
	export C W
}

teardown_file() {
	T=$BATS_FILE_TMPDIR
	kill_bg
}

setup() {
	require_bpf
	cd "$BATS_FILE_TMPDIR"
	export CPA_CONFIG=/dev/null CPA_RUN_DIR=$BATS_TEST_TMPDIR/run
}

@test "kinds: cpa monitor -s S -u 1 -d 3; cpa show -r S --output_prof x.prof holds both kinds" {
	cat m.log
	[ "$(cat m.status)" = 0 ]
	run cpa show -r S --output_prof "$BATS_TEST_TMPDIR/x.prof"
	[ "$status" -eq 0 ]
	local x=$BATS_TEST_TMPDIR/x.prof
	grep -q '^sleeper;.*spin_main [0-9]*$' "$x"
	grep -q '^scheduling delay (yielded);sleeper;.*yield_main;.*[0-9]$' "$x"
	# every line is the workload's, under a marker or on-CPU
	run ! grep -Ev '^((scheduling delay( \((preempted|yielded)\))?|off-CPU blocked);)?sleeper;' "$x"
}

@test "kinds: cpa show -o x.svg of that range draws a graph per unit" {
	run cpa show -r S -o x.svg
	[ "$status" -eq 0 ]
	[[ "$output" == *"cpa-render: wrote x.ns.svg, the graph in ns (one graph has one unit)"* ]]
	grep -q '<title>spin_main (' x.svg
	run ! grep -q 'scheduling delay' x.svg
	grep -q '<title>scheduling delay (yielded) (' x.ns.svg
	run ! grep -q '<title>sleeper (.* samples' x.ns.svg
}

@test "kinds: one-shot --offcpu 1 writes the on-CPU graph and the off-CPU one beside it" {
	cat o.log
	[ "$(cat o.status)" = 0 ]
	grep -q '<title>spin_main (' o.svg
	grep -q '<title>scheduling delay (yielded) (' o.ns.svg
	grep -q 'cpa-render: wrote o.ns.svg, the graph in ns' o.log
}

@test "kinds: one-shot --probe writes each hit under probe hits" {
	cat p.log
	[ "$(cat p.status)" = 0 ]
	hits=$(awk '/^probe hits;writer;.*;counted_call [0-9]+$/ { s += $NF } END { print s + 0 }' p.prof)
	[ "$hits" -eq 50 ]
	run ! grep -v -e '^probe hits;writer;.*;counted_call [0-9]*$' -e '^writer;' p.prof
}
