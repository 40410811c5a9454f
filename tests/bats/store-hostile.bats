#!/usr/bin/env bats
# The store against what a process, or a failing host, does to it: a
# flood of never-repeating names must not push others' history out of a
# store of bounded size (each process has a budget per window, what goes
# over it is counted and listed), retention deleting history younger than
# --retain says so, segment meta that grows is summarized and never cut
# (a loss stays in --list), a capture killed leaves no 1970 loss, and a
# full disk resumes when space returns, however much the dictionaries
# grew meanwhile.
bats_require_minimum_version 1.5.0
load helper

AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
# Debian's interpreter: one that nobody may run
PY=/usr/bin/python3
MKSTREAM=$CPA_BUILDDIR/tests/tools/mkstream

setup() {
	T=$BATS_TEST_TMPDIR
	PIPE_PIDS=""
	MNT=""
}

teardown() {
	local p
	exec 5>&-	# the ENOSPC test's feed: its mkstream ends
	for p in $PIPE_PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	for p in $PIPE_PIDS; do wait "$p" 2>/dev/null || true; done
	kill_workloads
	if [ -n "$MNT" ]; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
		rmdir "$MNT" 2>/dev/null || true
	fi
}

# store_bytes DIR: the bytes of its segments' files
store_bytes() { find "$1" -path '*/2*' -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'; }

# total FILE: the weight of a folded file
total() { awk '{ s += $NF } END { print s + 0 }' "$1"; }

# stat_of FILE KEY: a value of a --stats-file
stat_of() { awk -F= -v k="$2" '$1 == k { print $2 }' "$1"; }

# stat_at_least FILE KEY N
stat_at_least() { [ -f "$1" ] && [ "$(stat_of "$1" "$2")" -ge "$3" ] 2>/dev/null; }

# history FROM N: N one-second windows of pid 7 from FROM (seconds),
# five samples each, as mkstream lines
history() {
	local i
	for i in $(seq 0 $(( $2 - 1 ))); do
		echo "$(( $1 + i ))000000000 oncpu 7 7 0 app app 5 main;work;leaf$(( i % 5 ))"
	done
}

@test "store flood: never-repeating names at depth 60 leave the history before them, and are counted" {
	require_bpf
	command -v setpriv >/dev/null || skip_missing "setpriv (util-linux) not installed"
	local now
	now=$(date +%s)
	history $(( now - 600 )) 60 | "$MKSTREAM" | cpa-store --dir "$T/store"
	start_workload "$T/flood.out" "${AS_NOBODY[@]}" "$PY" "$CPA_SRCDIR/tests/hostile/py_flood.py" 120
	mkfifo "$T/raw"
	cpa-capture --pid "$WL_PID" --duration 60 --freq 199 >"$T/raw" 2>"$T/capture.err" &
	local cap=$!
	cpa-unwind <"$T/raw" 2>"$T/unwind.err" |
		cpa-store --dir "$T/store" --max-size 8M --stats-file "$T/stats" \
			--stats-interval 200ms 2>"$T/store.err" &
	PIPE_PIDS="$cap $!"
	# 400 flood samples: 60 new 1000-character names each, 24 MB of
	# names, three times the whole store
	wait_for 60 stat_at_least "$T/stats" samples 400
	kill -INT "$cap"
	wait "$cap"
	wait "${PIPE_PIDS#* }"
	PIPE_PIDS=""
	# the minute before the flood is all there
	cpa-query --dir "$T/store" --from @$(( now - 600 )) --to @$(( now - 540 )) >"$T/before.folded"
	[ "$(total "$T/before.folded")" -eq 300 ]
	run stat_of "$T/stats" segments_deleted
	[ "$output" -eq 0 ]
	# what the flood added is bounded: its budget, not its names
	local bytes
	bytes=$(store_bytes "$T/store")
	[ "$bytes" -lt $(( 2 << 20 )) ]
	# held to its budget, counted, listed with its pid and name
	run stat_of "$T/stats" over_budget_stacks
	[ "$output" -gt 100 ]
	run stat_of "$T/stats" over_budget_bytes
	[ "$output" -gt $(( 8 << 20 )) ]
	run cpa-query --dir "$T/store" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"over budget pid $WL_PID (python3): "*" stacks, "*" bytes of new names not stored"* ]]
	grep -q "pid $WL_PID (python3): over the budget of one process in one window" "$T/store.err"
	# and its weight is all kept, what went over under [over budget]
	cpa-query --dir "$T/store" --pid "$WL_PID" >"$T/flood.folded"
	[ "$(total "$T/flood.folded")" -eq "$(stat_of "$T/stats" samples)" ]
	grep -q '^python3;\[over budget\] [0-9]*$' "$T/flood.folded"
}

@test "store flood: the budget is per process: one over it keeps its weight, others keep their stacks" {
	local t=1700000000 i
	{
		for i in $(seq 1 10); do
			echo "${t}000000000 oncpu 7 7 0 app app $i main;f$i"
		done
		for i in $(seq 1 5); do
			echo "${t}000000000 oncpu 8 8 0 other other 1 main;g$i"
		done
		# the next window: pid 7's budget of distinct stacks is anew
		echo "$(( t + 1 ))000000000 oncpu 7 7 0 app app 1 main;f1"
	} | "$MKSTREAM" | CPA_STORE_NOW=@$(( t + 10 )) cpa-store --dir "$T/store" \
		--max-process-stacks 8 --stats-file "$T/stats" 2>"$T/store.err"
	run stat_of "$T/stats" over_budget_stacks
	[ "$output" -eq 2 ]
	grep -q 'pid 7 (app): over the budget of one process in one window' "$T/store.err"
	run ! grep -q 'pid 8 ' "$T/store.err"
	cpa-query --dir "$T/store" --pid 7 >"$T/app.folded"
	[ "$(total "$T/app.folded")" -eq 56 ]
	run grep -c ';f[0-9]* ' "$T/app.folded"
	[ "$output" -eq 8 ]
	# f1 of the next window joins f1: its budget began anew
	grep -qx 'app;main;f1 2' "$T/app.folded"
	grep -q '^app;\[over budget\] [0-9]*$' "$T/app.folded"
	cpa-query --dir "$T/store" --pid 8 >"$T/other.folded"
	run grep -c '^other;main;g[0-9]* 1$' "$T/other.folded"
	[ "$output" -eq 5 ]
	run cpa-query --dir "$T/store" --list
	[[ "$output" == *"over budget pid 7 (app): 2 stacks, "* ]]
	[[ "$output" != *"over budget pid 8"* ]]
}

@test "store flood: --max-size deleting history younger than --retain warns and counts" {
	local now
	now=$(date +%s)
	# one segment a minute, ten minutes of history of new names
	for m in $(seq 0 9); do
		history $(( now - 1200 + m * 60 )) 3
	done | "$MKSTREAM" |
		cpa-store --dir "$T/store" --segment 1m
	local size
	size=$(store_bytes "$T/store")
	history $(( now - 60 )) 3 | "$MKSTREAM" |
		cpa-store --dir "$T/store" --segment 1m --max-size $(( size * 3 / 4 )) \
			--stats-file "$T/stats" 2>"$T/store.err"
	grep -q 'deleted with history up to .*, younger than --retain: the store is over --max-size' "$T/store.err"
	run stat_of "$T/stats" segments_deleted_early
	[ "$output" -ge 1 ]
	# history older than --retain goes without a word
	history $(( now - 30 )) 3 | "$MKSTREAM" |
		cpa-store --dir "$T/store" --segment 1m --retain 5m --max-size $(( size / 2 )) \
			--stats-file "$T/stats2" 2>"$T/store2.err"
	run stat_of "$T/stats2" segments_deleted
	[ "$output" -ge 1 ]
	run ! grep -q 'younger than --retain' "$T/store2.err"
}

@test "store meta: thousands of notes are summarized, and a loss stays in --list" {
	local t=1700000000 i
	{
		echo escapes
		for i in $(seq 1 3000); do
			echo "meta python pid\\x20$(( 10000 + i )):\\x20CPython\\x203.8\\x20(/usr/lib/x86_64-linux-gnu/libpython3.8.so.1.0)\\x20is\\x20not\\x20supported:\\x20native\\x20frames\\x20only"
		done
		echo "${t}000000000 oncpu 7 7 0 app app 5 main;work"
		echo "lost 1504 $(( t + 1 ))000000000"
		echo "$(( t + 2 ))000000000 oncpu 7 7 0 app app 5 main;work"
	} | "$MKSTREAM" >"$T/notes.cpa"
	CPA_STORE_NOW=@$(( t + 10 )) cpa-store --dir "$T/store" <"$T/notes.cpa"
	run cpa-query --dir "$T/store" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"(1s, 1504 samples lost)"* ]]
	[[ "$output" != *"skipping"* ]]
	local meta
	meta=$(ls -d "$T"/store/2*/meta)
	[ "$(stat -c %s "$meta")" -lt 16384 ]
	grep -qx 'stream_repeated=python:3000' "$meta"
	grep -q '^stream.python=pid 13000: ' "$meta"
	# the samples are there
	cpa-query --dir "$T/store" >"$T/q.folded"
	[ "$(total "$T/q.folded")" -eq 10 ]
}

@test "store meta: more stream keys than a segment keeps are counted, not cut" {
	local i
	{
		for i in $(seq 1 500); do echo "meta key$i value$i"; done
		echo "1700000000000000000 oncpu 7 7 0 app app 5 main;work"
		echo "lost 12 1700000001000000000"
	} | "$MKSTREAM" | CPA_STORE_NOW=@1700000010 cpa-store --dir "$T/store"
	local meta
	meta=$(ls -d "$T"/store/2*/meta)
	grep -qx 'stream_dropped=452' "$meta"
	grep -qx 'stream.key48=value48' "$meta"
	run cpa-query --dir "$T/store" --list
	[[ "$output" == *"12 samples lost"* ]]
}

@test "store: a capture killed mid-stream leaves no 1970 loss in --list" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	mkfifo "$T/raw"
	cpa-capture --pid "$WL_PID" --duration 30 --freq 99 >"$T/raw" 2>"$T/capture.err" &
	local cap=$!
	cpa-unwind <"$T/raw" 2>"$T/unwind.err" |
		cpa-store --dir "$T/store" --stats-file "$T/stats" --stats-interval 200ms 2>"$T/store.err" &
	PIPE_PIDS="$cap $!"
	wait_for 20 stat_at_least "$T/stats" samples 20
	kill -KILL "$cap"
	# cpa-unwind says the stream was cut, and fails (wait, not run: a
	# subshell cannot wait for this shell's children)
	local rc=0
	wait "${PIPE_PIDS#* }" || rc=$?
	PIPE_PIDS=""
	[ "$rc" -ne 0 ]
	grep -q 'stream ended without an end record' "$T/unwind.err"
	run cpa-query --dir "$T/store" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"range "* ]]
	[[ "$output" != *"1970"* ]]
	[[ "$output" != *" 0 samples lost"* ]]
}

@test "store format: a 1.1 segment reads, its epoch loss of no sample is not listed" {
	history 1700000000 3 | "$MKSTREAM" | cpa-store --dir "$T/store"
	local meta
	meta=$(ls -d "$T"/store/2*/meta)
	# as a 1.1 writer left it after its upstream was cut off
	sed -i 's/^format=1\.[0-9]*$/format=1.1/' "$meta"
	echo 'lost=0-1000000000:0,1700000001000000000-1700000002000000000:7' >>"$meta"
	run cpa-query --dir "$T/store" --list
	[ "$status" -eq 0 ]
	[[ "$output" != *"1970"* ]]
	[[ "$output" == *"(1s, 7 samples lost)"* ]]
	cpa-query --dir "$T/store" >"$T/q.folded"
	[ "$(total "$T/q.folded")" -eq 15 ]
}

# A stream fed line by line from fd 5, into cpa-store on a file system
# of 3 MiB. windows DIR FROM TO N: files DIR/T of one window each, of N
# new 200-byte names, written by one interpreter (one per window would
# cost seconds on a loaded host).
windows() {
	"$PY" -c '
import os, sys
d, a, b, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for t in range(a, b + 1):
    with open("%s/%d" % (d, t), "w") as f:
        for j in range(n):
            f.write("%d000000000 oncpu 7 7 0 app app 1 main;f%s\n" % (t, os.urandom(100).hex()))
        f.write("flush\n")' "$@"
}

@test "store ENOSPC: writing resumes once space returns, though the pending dictionary outgrew it" {
	[ "$(id -u)" -eq 0 ] || skip "mounting a small file system needs root"
	MNT=$(mktemp -d /tmp/cpa-enospc.XXXXXX)
	mount -t tmpfs -o size=3m cpa-enospc "$MNT"
	mkfifo "$T/lines"
	"$MKSTREAM" <"$T/lines" | cpa-store --dir "$MNT/store" --flush 100ms --backlog 16K \
		--max-process-bytes 0 --stats-file "$T/stats" --stats-interval 100ms \
		2>"$T/store.err" &
	PIPE_PIDS=$!
	exec 5>"$T/lines"
	local t=1700000000 i
	mkdir "$T/w"
	windows "$T/w" "$t" $(( t + 2 )) 1
	windows "$T/w" $(( t + 10 )) $(( t + 29 )) 100
	windows "$T/w" $(( t + 60 )) $(( t + 62 )) 1
	for i in 0 1 2; do cat "$T/w/$(( t + i ))" >&5; done
	wait_for 10 stat_at_least "$T/stats" windows 3
	# full, but for 160 KiB that come back later
	dd if=/dev/zero of="$MNT/later" bs=4k count=40 2>/dev/null
	dd if=/dev/zero of="$MNT/fill" bs=4k 2>/dev/null || true
	# 20 windows of 20 KB of new names each, kept in a 16K backlog:
	# most are dropped, their names stay pending in the segment writer
	for i in $(seq 10 29); do cat "$T/w/$(( t + i ))" >&5; sleep 0.1; done
	wait_for 10 stat_at_least "$T/stats" write_errors 1
	wait_for 10 stat_at_least "$T/stats" dropped_samples 1000
	rm "$MNT/later"
	local before
	before=$(stat_of "$T/stats" windows)
	for i in 60 61 62; do cat "$T/w/$(( t + i ))" >&5; sleep 0.2; done
	wait_for 20 stat_at_least "$T/stats" windows $(( before + 3 ))
	exec 5>&-
	wait "$PIPE_PIDS"
	PIPE_PIDS=""
	grep -q 'writing resumed after [0-9]* failed attempts' "$T/store.err"
	cpa-query --dir "$MNT/store" --from @$(( t + 60 )) >"$T/after.folded"
	[ "$(total "$T/after.folded")" -eq 3 ]
}
