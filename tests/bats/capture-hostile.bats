#!/usr/bin/env bats
# cpa-capture against files an unprivileged process chooses to be
# hostile (docs/security.md, "Files read on a process's behalf"): the
# capture reads the file of every new executable mapping named like a
# Python interpreter, and a process run as nobody puts a FIFO where that
# file was. The capture must end on time with the samples it took.
bats_require_minimum_version 1.5.0
load capture_helper

GOOD_CHAIN='main;run;level_a;level_b;hot_leaf'

setup() {
	require_bpf
	command -v setpriv >/dev/null || skip_missing "setpriv (util-linux) not installed"
	T=$BATS_TEST_TMPDIR
	# a directory nobody may write, reachable by nobody
	HOSTILE_DIR=$(mktemp -d /tmp/cpa-hostile.XXXXXX)
	chmod 755 "$HOSTILE_DIR"
	chown nobody "$HOSTILE_DIR"
}

teardown() {
	local f
	for f in "$T"/*.cpid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	kill_bg
	rm -rf "$HOSTILE_DIR"
}

# elapsed_ms SINCE_NS: milliseconds from SINCE_NS (date +%s%N) to now
elapsed_ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

@test "a FIFO where a python3.8 mapping was: the capture ends on time with its samples" {
	start_bg hostile setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$CPA_BUILDDIR/tests/hostile/fifo_python" --times 3 --seconds 30 "$HOSTILE_DIR"
	start_bg good "$WL/chain_nofp" --seconds 30
	cap c --pid "$(pidof_wl hostile),$(pidof_wl good)" --duration 4 --freq 199 --stats
	wait_for 20 cap_attached c
	local t0
	t0=$(date +%s%N)
	# the mappings come while the capture records them
	kill -USR1 "$(pidof_wl hostile)"
	wait_for 5 grep -q '^mapped' "$T/hostile.out"
	[ -p "$HOSTILE_DIR/python3.8" ]
	# --duration 4 from its start; before, it never ended
	wait_for 15 gone "$(cat "$T/c.cpid")"
	local ms
	ms=$(elapsed_ms "$t0")
	echo "capture ended $ms ms after it started recording"
	[ "$ms" -lt 8000 ]
	cap_stop c
	[ "$(cat "$T/c.status")" -eq 0 ]
	dump c > "$T/c.txt"
	grep '^end' "$T/c.txt"
	grep -q '^mmap .*path=.*/python3\.8$' "$T/c.txt"
	# the other workload's samples, after the hostile mapping too
	cpa-unwind --folded < "$T/c.cpa" > "$T/c.folded"
	local good
	good=$(awk -v pat=";$GOOD_CHAIN " 'index($0, pat) { n = split($0, f, " "); s += f[n] } END { print s + 0 }' "$T/c.folded")
	echo "good workload: $good samples"
	[ "$good" -ge 20 ]
	# the hostile process itself was sampled after it made the FIFO
	grep -q '^fifo_python;.*main;fifo_spin ' "$T/c.folded"
	# nothing lost while the FIFO was there
	run ! grep -E '^lost .*reason=ringbuf' "$T/c.txt"
	# the FIFO was refused, each time, not opened
	grep -E 'files refused: not-regular=[1-9]' "$T/c.err"
}
