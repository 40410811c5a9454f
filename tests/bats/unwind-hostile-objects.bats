#!/usr/bin/env bats
# cpa-unwind against objects built to cost it CPU and memory (issue 17,
# sections 3 and 4): an FDE of 100k rows, a DW_CFA_remember_state flood,
# a table of 2M symbols and a .debug_frame beside a compressed .debug_info
# that inflates to 512 MB, written by tests/hostile/hostile-elf and
# mapped by a process spinning in them (tests/hostile/hostile-spin), live
# through cpa-capture | cpa-unwind beside a workload with a known chain.
# Each asserts: the workload's named samples keep coming, the hostile
# object is compiled in one pass or refused with a counted reason (then its
# frames are module+offset), and cpa-unwind's peak RSS stays under
# RSS_MAX_KB, well under the unit's MemoryMax=512M (it is about 12 MB).
bats_require_minimum_version 1.5.0
load helper

RSS_MAX_KB=65536
# Under ASan (scripts/check --sanitize) freed memory waits in a
# quarantine of 256 MB by default, which the peak RSS would measure
# instead of cpa-unwind: a small one (ignored without ASan), as
# unwind-hostile-procs.bats has.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"

setup_file() {
	local gen=$CPA_BUILDDIR/tests/hostile/hostile-elf
	"$gen" --rows 100000 "$BATS_FILE_TMPDIR/rows.so"
	"$gen" --remember 2000000 "$BATS_FILE_TMPDIR/flood.so"
	# 2M symbols: a 65 MB file
	"$gen" --symbols 2000000 "$BATS_FILE_TMPDIR/syms.so"
	# 2.3 MB on disk
	"$gen" --debug-bomb 512 "$BATS_FILE_TMPDIR/bomb.so"
}

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	B=$BATS_FILE_TMPDIR
	CAP_PID="" UNWIND_PID=""
}

teardown() {
	[ -z "$CAP_PID" ] || kill "$CAP_PID" 2>/dev/null || true
	[ -z "$UNWIND_PID" ] || kill "$UNWIND_PID" 2>/dev/null || true
	kill_workloads
}

# live OBJ [cpa-unwind options]: starts hostile-spin on OBJ and chain_nofp,
# then cpa-capture of both into cpa-unwind --folded (in the background,
# through a FIFO so that UNWIND_PID is cpa-unwind's own pid).
live() {
	local obj=$1
	shift
	start_workload "$T/hostile.out" "$CPA_BUILDDIR/tests/hostile/hostile-spin" "$obj"
	HOSTILE_PID=$WL_PID
	start_workload "$T/chain.out" "$WL/chain_nofp" --seconds 60
	mkfifo "$T/fifo"
	cpa-capture --pid "$HOSTILE_PID,$WL_PID" --freq 99 \
		--stats-file "$T/capture.stats" --stats-interval 200ms \
		>"$T/fifo" 2>"$T/capture.err" &
	CAP_PID=$!
	cpa-unwind --folded --stats --stats-file "$T/unwind.stats" \
		--stats-interval 200ms "$@" <"$T/fifo" >"$T/out.folded" 2>"$T/unwind.err" &
	UNWIND_PID=$!
}

# Ends the capture; cpa-unwind then drains the stream and exits.
stop() {
	kill -INT "$CAP_PID"
	wait "$CAP_PID"
	CAP_PID=""
	wait "$UNWIND_PID"
	UNWIND_PID=""
	cat "$T/unwind.err"
}

chain_samples() {
	awk '/^chain_nofp;.*main;run;level_a;level_b;hot_leaf /{ s += $NF } END { print s + 0 }' \
		"$T/out.folded"
}

chain_above() {
	[ "$(chain_samples)" -gt "$1" ]
}

# The workload's named samples arrive within 5 s of cpa-capture's first
# sample (its BPF set-up can take long on a loaded machine) and keep
# arriving: more within every 2 s, three times over. A load stalling the
# sample path fails this.
keeps_flowing() {
	wait_for 60 stat_at_least samples 1 "$T/capture.stats"
	wait_for 5 chain_above 0
	local i n
	for i in 1 2 3; do
		n=$(chain_samples)
		wait_for 2 chain_above "$n"
	done
}

# stat_at_least KEY N [FILE]: the --stats-file counter KEY (of cpa-unwind,
# or of FILE) is at least N.
stat_at_least() {
	local v
	v=$(awk -F= -v k="$1" '$1 == k { print $2 }' "${3:-$T/unwind.stats}" 2>/dev/null)
	[ "${v:-0}" -ge "$2" ]
}

# Peak RSS of the running cpa-unwind, checked against RSS_MAX_KB.
rss_within_bound() {
	local hwm
	hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$UNWIND_PID/status")
	echo "cpa-unwind VmHWM: $hwm kB (bound $RSS_MAX_KB kB)"
	[ "$hwm" -lt "$RSS_MAX_KB" ]
}

@test "an FDE of 100k rows compiles in one pass: samples flow, its chain is whole" {
	live "$B/rows.so"
	keeps_flowing
	# the spinning function unwinds through its own long FDE
	wait_for 5 grep -q '^hostile-spin;.*main;enter_hostile;hostile_spin ' "$T/out.folded"
	rss_within_bound
	stop
	grep -q 'cfi-over-budget=0 ' "$T/unwind.err"
	grep -q 'cfi refused    fdes=0$' "$T/unwind.err"
}

@test "an FDE of 100k rows fits --max-object 2M: rows are compiled 16 bytes each, in place" {
	# 24-byte rows and a table made beside them took 4 MB
	live "$B/rows.so" --max-object 2M
	keeps_flowing
	wait_for 5 grep -q '^hostile-spin;.*main;enter_hostile;hostile_spin ' "$T/out.folded"
	stop
	grep -q 'cfi-over-budget=0 ' "$T/unwind.err"
}

@test "an FDE of 100k rows past --max-object is refused whole, counted, its frames unnamed" {
	# 100k rows cost 1.6 MB while compiling (16 bytes each, merged in
	# place)
	live "$B/rows.so" --max-object 1M
	keeps_flowing
	wait_for 5 stat_at_least elf_over_budget 1
	wait_for 5 grep -Eq '^hostile-spin;(.*;)?rows\.so\+0x1000( |;)' "$T/out.folded"
	rss_within_bound
	stop
	run ! grep -q 'hostile_spin' "$T/out.folded"
	grep -Eq 'cfi-over-budget=[1-9]' "$T/unwind.err"
}

@test "a remember_state flood costs no memory: its FDE is refused, counted, its walks marked" {
	live "$B/flood.so"
	keeps_flowing
	wait_for 5 stat_at_least cfi_fdes_refused 1
	# the walk through the refused FDE ends there with its reason
	wait_for 5 stat_at_least walk_unsupported_rule 1
	rss_within_bound
	stop
	grep -q 'cfi refused    fdes=1$' "$T/unwind.err"
}

@test "a table of 2M symbols is refused before it is read: counted, frames unnamed" {
	live "$B/syms.so"
	keeps_flowing
	wait_for 5 stat_at_least elf_over_budget 1
	wait_for 5 grep -Eq '^hostile-spin;(.*;)?syms\.so\+0x1000( |;)' "$T/out.folded"
	rss_within_bound
	stop
	run ! grep -q 'hostile_spin' "$T/out.folded"
	grep -q 'symbols-over-budget=1 ' "$T/unwind.err"
}

@test "DWARF inflating to 512 MB is refused before libdw opens it: counted, frames unnamed" {
	live "$B/bomb.so"
	keeps_flowing
	wait_for 5 stat_at_least elf_over_budget 1
	wait_for 5 grep -Eq '^hostile-spin;(.*;)?bomb\.so\+0x1000( |;)' "$T/out.folded"
	rss_within_bound
	stop
	grep -q 'cfi-over-budget=1 ' "$T/unwind.err"
}
