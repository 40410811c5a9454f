#!/usr/bin/env bats
# One-shot profiles and output files as a user types them: Ctrl-C during
# `cpa monitor --oneshot` writes the profile of what was captured, a
# failure never leaves an empty or half file, and an installed config's
# store options do not get in the one-shot's way. Real captures of a
# workload with a known chain.
load helper

CHAIN='^chain_fp;.*main;run;level_a;level_b;hot_leaf [0-9]+$'

setup_file() {
	require_bpf
	T=$BATS_FILE_TMPDIR
	"$WL/chain_fp" --seconds 60 >"$T/wl.out" 2>&1 3>&- &
	echo $! >"$T/wl.bgpid"
	wait_for 10 grep -q '^ready ' "$T/wl.out"
	export WL_PID=$(awk '/^ready /{print $2; exit}' "$T/wl.out")
}

teardown_file() {
	[ -f "$BATS_FILE_TMPDIR/wl.bgpid" ] && kill "$(cat "$BATS_FILE_TMPDIR/wl.bgpid")" 2>/dev/null
	true
}

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	export CPA_CONFIG=$T/none.conf CPA_RUN_DIR=$T/run
	cd "$T"
}

teardown() {
	[ -n "${ONE:-}" ] && kill -KILL -- "-$ONE" 2>/dev/null
	kill_workloads
}

# only_workload FILE: every line of FILE is the workload's, and its chain
# is there
only_workload() {
	run ! grep -v '^chain_fp;' "$1"
	grep -Eq "$CHAIN" "$1"
}

no_temporary_files() { run ! compgen -G "$T/*.tmp.*"; }

# unwind_read PID BYTES: the one-shot's cpa-unwind has read BYTES of stream
unwind_read() {
	local u
	u=$(pgrep -P "$1" -x cpa-unwind) || return 1
	[ "$(awk '/^rchar:/ { print $2 }' "/proc/$u/io")" -ge "$2" ]
}

@test "oneshot: Ctrl-C without -d ends the capture and writes the profile of what was captured" {
	# a process group of its own, led by cpa: a terminal's Ctrl-C goes to
	# the whole foreground group
	perl -e 'setpgrp(0, 0); exec @ARGV' cpa monitor --oneshot --pid "$WL_PID" \
		--freq 199 --output_prof ctrlc.prof 2>"$T/one.err" 3>&- &
	ONE=$!
	wait_for 30 unwind_read "$ONE" 200000
	kill -INT -- "-$ONE"
	st=0
	wait "$ONE" || st=$?
	ONE=""
	cat "$T/one.err"
	[ "$st" -eq 0 ]
	grep -q 'wrote ctrlc.prof' "$T/one.err"
	only_workload ctrlc.prof
	no_temporary_files
}

@test "oneshot: a profile that fails is not written, and the file from before is left as it was" {
	echo 'an earlier profile' >keep.prof
	sleep 30 3>&- &
	WL_BG_PIDS=$!
	# a process that never runs: nothing to draw, render fails
	run cpa monitor --oneshot -d 1 --pid "$WL_BG_PIDS" --output_prof keep.prof
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"keep.prof not written"* ]]
	[ "$(cat keep.prof)" = 'an earlier profile' ]
	run cpa monitor --oneshot -d 1 --pid "$WL_BG_PIDS" -o new.svg
	[ "$status" -eq 1 ]
	[ ! -e new.svg ]
	no_temporary_files
	# the tools' own -o alike
	run cpa-render -o bad.svg <<<'not a folded line'
	[ "$status" -ne 0 ]
	[ ! -e bad.svg ]
	no_temporary_files
}

@test "oneshot: with a store dir in the installed config, --oneshot -d 1 --output_prof works; typed store options are refused" {
	printf 'dir = %s\nretain = 3d\nflush = 1s\nfreq = 99\n' "$T/store" >"$T/cpa.conf"
	export CPA_CONFIG=$T/cpa.conf
	run cpa monitor --oneshot -d 1 --pid "$WL_PID" --output_prof a.prof
	echo "$output"
	[ "$status" -eq 0 ]
	only_workload a.prof
	[ ! -e "$T/store" ]
	run cpa monitor --oneshot -d 1 --pid "$WL_PID" --retain 3d --output_prof b.prof
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: store options do not apply to --oneshot" ]
	[ ! -e b.prof ]
}
