#!/usr/bin/env bats
# Crash safety of the store: kill -9, a full disk, a reader beside the
# writer, and damaged or foreign files. Waits poll the store itself.
load helper
load store_helper

setup() {
	T=$BATS_TEST_TMPDIR
}

teardown() {
	[ -n "${STORE_PID:-}" ] && kill -9 "$STORE_PID" 2>/dev/null || true
	exec 7>&- 2>/dev/null || true
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then umount "$MNT"; fi
}

# window_totals: "SEC TOTAL" per window of a --format stream on stdin
window_totals() {
	"$DUMP" | awk '/^sample/ {
		for (i = 2; i <= NF; i++) {
			split($i, kv, "=")
			if (kv[1] == "time") t = substr(kv[2], 1, length(kv[2]) - 9)
			if (kv[1] == "weight") w = kv[2]
		}
		s[t] += w
	} END { for (t in s) printf "%s %d\n", t, s[t] }' | sort
}

truth_totals() {
	awk -F'\t' '{ s[$1] += $13 } END { for (t in s) printf "%s %d\n", t, s[t] }' "$1" | sort
}

query_total_is() {	# query_total_is DIR N
	got=$(cpa-query --dir "$1" 2>/dev/null | awk '{s+=$NF} END {printf "%d\n", s}')
	[ "$got" = "$2" ]
}

@test "store: after kill -9 everything up to the last flush is there, intact" {
	mkfifo "$T/fifo"
	cpa-store --dir "$T/s" --flush 200ms --grace 100ms <"$T/fifo" &
	STORE_PID=$!
	exec 7>"$T/fifo"
	"$GEN" --duration 10 --rate 200 --no-end --truth "$T/truth" >&7
	want=$(awk -F'\t' '{s+=$13} END {printf "%d\n", s}' "$T/truth")
	# the input is idle now, so every window gets closed and flushed
	wait_for 10 query_total_is "$T/s" "$want"
	kill -9 "$STORE_PID"
	wait "$STORE_PID" || true
	STORE_PID=
	exec 7>&-
	run cpa-query --dir "$T/s"
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
	cpa-query --dir "$T/s" --labels comm,pid,cpu >"$T/got"
	expect "$T/truth" 0 99999999999 1 comm,pid,cpu >"$T/want"
	same_lines "$T/got" "$T/want"
}

@test "store: kill -9 mid-write leaves only whole windows, and the next writer recovers" {
	"$GEN" --duration 300 --rate 300 --stacks 3000 --pace 10 --no-end --truth "$T/truth" |
		cpa-store --dir "$T/s" --flush 100ms &
	STORE_PID=$!
	# kill it while it writes: once some blocks are committed
	wait_for 20 bash -c "set -o pipefail; cpa-query --dir '$T/s' --list 2>/dev/null | awk '\$1 ~ /^\// && \$(NF-1) >= 4 {ok=1} END {exit !ok}'"
	kill -9 "$STORE_PID"
	wait || true
	STORE_PID=
	cpa-query --dir "$T/s" --format stream >"$T/out"
	window_totals <"$T/out" >"$T/got"
	truth_totals "$T/truth" >"$T/all"
	# every stored window is complete, and they are the first ones
	n=$(wc -l <"$T/got")
	[ "$n" -ge 4 ]
	head -n "$n" "$T/all" >"$T/want"
	same_lines "$T/got" "$T/want"
	# a new writer cuts any torn tail (maybe with a warning) and appends
	"$GEN" --start $((T0 + 1000)) --duration 5 | cpa-store --dir "$T/s"
	run cpa-query --dir "$T/s" --from "@$((T0 + 1000))"
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
	[ -n "$output" ]
}

@test "store: a reader beside the writer sees only complete windows" {
	mkfifo "$T/fifo"
	cpa-store --dir "$T/s" --flush 100ms --grace 100ms <"$T/fifo" &
	STORE_PID=$!
	"$GEN" --duration 30 --rate 300 --pace 120 --truth "$T/truth" >"$T/fifo" &
	local gen=$!
	local partial=0 i=0
	while kill -0 "$STORE_PID" 2>/dev/null; do
		cpa-query --dir "$T/s" --format stream 2>/dev/null | window_totals >"$T/snap.$i" || true
		i=$((i + 1))
	done
	wait "$gen"
	wait "$STORE_PID"
	STORE_PID=
	truth_totals "$T/truth" >"$T/all"
	for f in "$T"/snap.*; do
		n=$(wc -l <"$f")
		if [ "$n" -gt 0 ] && [ "$n" -lt 30 ]; then partial=$((partial + 1)); fi
		# each window present has its full weight
		join "$f" "$T/all" | awk '$2 != $3 { print "window " $1 ": " $2 " of " $3; bad = 1 } END { exit bad }'
	done
	echo "$i snapshots, $partial while writing" >&2
	[ "$partial" -ge 3 ]
	cpa-query --dir "$T/s" --format stream | window_totals >"$T/final"
	same_lines "$T/final" "$T/all"
}

@test "store: a full disk is reported, old data stays intact, writing resumes when space returns" {
	[ "$(id -u)" -eq 0 ] || skip "needs root to mount a tmpfs"
	MNT=$T/mnt
	mkdir "$MNT"
	mount -t tmpfs -o size=2m tmpfs "$MNT" || skip "cannot mount tmpfs"
	store_from_gen "$MNT/s" "$T/truth1" -- --duration 30 --rate 100
	expect "$T/truth1" 0 99999999999 1 comm >"$T/want1"
	cpa-query --dir "$MNT/s" >"$T/got"
	same_lines "$T/got" "$T/want1"
	# fill the disk, to the last page
	dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null || true
	dd if=/dev/zero of="$MNT/filler2" bs=4k 2>/dev/null || true
	got=$(df --output=avail -B1 "$MNT" | tail -1)
	[ "$got" -lt 4096 ]
	mkfifo "$T/fifo"
	cpa-store --dir "$MNT/s" --flush 100ms --grace 50ms --stats <"$T/fifo" 2>"$T/err" &
	STORE_PID=$!
	exec 7>"$T/fifo"
	"$GEN" --start $((T0 + 3600)) --duration 20 --rate 100 --no-end --truth "$T/truth2" >&7
	wait_for 10 grep -q "No space left on device" "$T/err"
	# reported once, on one line naming the file
	[ "$(grep -c 'No space left' "$T/err")" -eq 1 ]
	grep -q "$MNT/s/" "$T/err"
	# what was stored before is untouched and still reads cleanly
	run cpa-query --dir "$MNT/s"
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
	cpa-query --dir "$MNT/s" >"$T/got"
	same_lines "$T/got" "$T/want1"
	# free the space: the backlog is written at the next tick
	rm "$MNT/filler" "$MNT/filler2"
	cat "$T/truth1" "$T/truth2" >"$T/truth"
	want=$(awk -F'\t' '{s+=$13} END {printf "%d\n", s}' "$T/truth")
	wait_for 10 query_total_is "$MNT/s" "$want"
	exec 7>&-
	wait "$STORE_PID"
	STORE_PID=
	grep -q "writing resumed" "$T/err"
	grep -q "write_errors [1-9]" "$T/err"
	cpa-query --dir "$MNT/s" --labels comm,tid >"$T/got"
	expect "$T/truth" 0 99999999999 1 comm,tid >"$T/want"
	same_lines "$T/got" "$T/want"
}

# A small store with three segments to damage.
make_store() {
	store_from_gen "$T/s" "$T/truth" --segment 1m --flush 10s -- --duration 180 --rate 50
	SEG=$T/s/20251130T100100Z
}

no_crash() {	# the last run did not crash: a clean status and no sanitizer
	[ "$status" -le 1 ]
	[[ "$output" != *Sanitizer* && "$output" != *"Segmentation"* ]]
}

@test "store: a torn index tail is skipped with a warning, and cut by the next writer" {
	make_store
	size=$(stat -c %s "$SEG/index")
	truncate -s $((size - 20)) "$SEG/index"
	run cpa-query --dir "$T/s"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == *"warning: $SEG: ignoring a torn tail of 44 bytes (index byte"* ]]
	# the other two segments are whole
	cpa-query --dir "$T/s" --from "@$((T0 + 120))" >"$T/got" 2>/dev/null
	expect "$T/truth" $((T0 + 120)) 99999999999 1 comm >"$T/want"
	same_lines "$T/got" "$T/want"
	# garbage after the last entry is a torn tail too
	head -c 100 /dev/urandom >>"$T/s/20251130T100200Z/index"
	run cpa-query --dir "$T/s" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"20251130T100200Z: ignoring a torn tail of 100 bytes"* ]]
	# a segment whose creation was cut short is invisible to readers
	mkdir "$T/s/.20251130T110000Z.tmp"
	head -c 64 "$SEG/index" >"$T/s/.20251130T110000Z.tmp/index"
	run cpa-query --dir "$T/s" --list
	[[ "$output" != *20251130T110000Z* ]]
	# the next writer cuts both tails and removes the unfinished
	# segment, after which reads are clean
	cpa-store --dir "$T/s" </dev/null 2>"$T/err"
	grep -q "cut a torn tail" "$T/err"
	[ ! -e "$T/s/.20251130T110000Z.tmp" ]
	run cpa-query --dir "$T/s"
	[ "$status" -eq 0 ]
	[[ "$output" != *warning* ]]
}

@test "store: damaged blocks are skipped with a warning naming file and offset" {
	make_store
	# flip bytes inside the second data block of the middle segment
	off=$(( $(stat -c %s "$SEG/data") / 2 ))
	printf '\377\377\377\377' | dd of="$SEG/data" bs=1 seek="$off" conv=notrunc 2>/dev/null
	run cpa-query --dir "$T/s"
	no_crash
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning: $SEG/data: byte "*": block checksum mismatch; skipping its windows"* ]]
	# the first and last segments are untouched
	run cpa-query --dir "$T/s" --from "@$((T0 + 120))"
	[[ "$output" != *warning* ]]
	# a damaged dictionary loses the rest of its segment, not the store
	printf '\377\377\377\377' | dd of="$T/s/20251130T100000Z/dict" bs=1 seek=100 conv=notrunc 2>/dev/null
	run cpa-query --dir "$T/s" --from "@$T0" --to "@$((T0 + 60))"
	no_crash
	[[ "$output" == *"20251130T100000Z/dict: byte 64: block checksum mismatch; skipping the rest of the segment"* ]]
	# a data file shorter than its index: the missing commits are a torn tail
	truncate -s 200 "$T/s/20251130T100200Z/data"
	run cpa-query --dir "$T/s" --list
	no_crash
	[[ "$output" == *"20251130T100200Z: ignoring a torn tail"*"is not in the data file"* ]]
}

@test "store: foreign, empty and newer files: skipped with a reason or refused clearly" {
	make_store
	echo "not a segment" >"$T/s/notes.txt"
	mkdir "$T/s/20250101T000000Z"
	echo junk >"$T/s/20250101T000000Z/meta"
	mkdir "$T/s/20250102T000000Z"
	: >"$T/s/20250102T000000Z/meta"
	run cpa-query --dir "$T/s"
	no_crash
	[ "$status" -eq 0 ]
	[[ "$output" == *"skipping $T/s/20250101T000000Z: $T/s/20250101T000000Z/meta: line 1: expected key=value"* ]]
	[[ "$output" == *"skipping $T/s/20250102T000000Z: "*"no valid format=MAJOR.MINOR line"* ]]
	[[ "$output" != *notes.txt* ]]
	# files of another kind where a segment file should be
	cp "$SEG/data" "$SEG/index"
	run cpa-query --dir "$T/s" --list
	no_crash
	[[ "$output" == *"skipping $SEG: $SEG/index: byte 0: not a cpa store index file (bad magic)"* ]]
	rm -r "$SEG"
	# a newer major version is refused, not misread
	sed -i 's/^format=1\.[0-9]*$/format=2.0/' "$T/s/20251130T100000Z/meta"
	run cpa-query --dir "$T/s"
	[ "$status" -eq 1 ]
	[[ "$output" == *"20251130T100000Z/meta: store format 2.0 is newer than this build reads (1.x)"* ]]
	run cpa-store --dir "$T/s" </dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"store format 2.0 is newer"*"refusing to write into this store"* ]]
	# a missing store is an error, not an empty result
	run cpa-query --dir "$T/nonexistent"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/nonexistent: No such file or directory"* ]]
}

@test "store: the store fuzz corpus replays without a crash" {
	run "$CPA_BUILDDIR/tests/fuzz/store_replay" "$CPA_SRCDIR/tests/fuzz/corpus/store"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
}

read_at_least() {	# read_at_least PID BYTES: the process has read that much
	[ "$(awk '/^rchar/ {print $2}' "/proc/$1/io" 2>/dev/null || echo 0)" -ge "$2" ]
}

@test "store: SIGTERM stores every window received, open ones included, and exits 0" {
	"$GEN" --duration 6 --rate 100 --no-end --truth "$T/truth" >"$T/in"
	mkfifo "$T/fifo"
	cpa-store --dir "$T/s" --flush 10s --grace 10s --stats-file "$T/stats" \
		<"$T/fifo" 2>"$T/err" &
	STORE_PID=$!
	exec 7>"$T/fifo"
	cat "$T/in" >&7
	# nothing is due yet (10 s flush and grace): stop it once it has read
	# the whole input
	wait_for 10 read_at_least "$STORE_PID" "$(stat -c %s "$T/in")"
	got=$(ls "$T/s")
	must_fail grep Z <<<"$got"
	kill -TERM "$STORE_PID"
	wait "$STORE_PID"
	STORE_PID=
	exec 7>&-
	cpa-query --dir "$T/s" --labels comm,pid >"$T/got"
	expect "$T/truth" 0 99999999999 1 comm,pid >"$T/want"
	same_lines "$T/got" "$T/want"
	# the last self statistics are left for post-mortems
	grep -qx "samples=600" "$T/stats"
	grep -qx "windows=6" "$T/stats"
	grep -qx "write_errors=0" "$T/stats"
}

@test "store: memory stays bounded by the segment, not the length of history" {
	# AddressSanitizer keeps freed memory in quarantine: RSS says nothing
	if ldd "$(command -v cpa-store)" | grep libasan >/dev/null; then
		skip "sanitized build"
	fi
	rss() {	# rss MINUTES: peak KiB of cpa-store for that much history
		"$GEN" --duration $(($1 * 60)) --rate 98 --stacks 20000 --procs 40 |
			/usr/bin/time -f %M cpa-store --dir "$T/s$1" --segment 5m 2>&1 >/dev/null | tail -1
	}
	short=$(rss 30)
	long=$(rss 120)
	echo "peak RSS: 30 min $short KiB, 2 h $long KiB" >&2
	[ "$long" -le $((short * 13 / 10)) ]
}

@test "store: --max-dict closes a segment early in its period: the same answer, less memory" {
	# 100k distinct stacks within one hour's segment
	"$GEN" --start "$T0" --duration 600 --rate 150 --stacks 100000 \
		--truth "$T/truth" >"$T/in.cpa"
	peak() {	# peak DIR MAX_DICT: peak KiB of cpa-store storing the stream
		/usr/bin/time -f %M cpa-store --dir "$1" --max-dict "$2" \
			<"$T/in.cpa" 2>&1 >/dev/null | tail -1
	}
	export CPA_STORE_NOW=@$((T0 + 3600))
	big=$(peak "$T/big" 1G)
	small=$(peak "$T/small" 1M)
	echo "peak RSS: --max-dict 1G $big KiB, 1M $small KiB" >&2
	# one segment unbounded; several in the same hour under 1M, each
	# with a dictionary file far smaller than the one
	n=$(find "$T/big" -mindepth 1 -maxdepth 1 -type d | wc -l)
	[ "$n" -eq 1 ]
	n=$(find "$T/small" -mindepth 1 -maxdepth 1 -type d -name '20251130T100000Z*' | wc -l)
	[ "$n" -ge 5 ]
	big_dict=$(stat -c %s "$T"/big/*/dict)
	for d in "$T"/small/*/dict; do
		[ "$(stat -c %s "$d")" -lt $((big_dict / 4)) ]
	done
	# every sample comes back, as from the single segment
	cpa-query --dir "$T/small" --from "@$T0" --to "@$((T0 + 3600))" >"$T/got"
	expect "$T/truth" 0 9999999999 1 comm >"$T/want"
	same_lines "$T/got" "$T/want"
	# AddressSanitizer keeps freed memory in quarantine: there RSS says
	# nothing about the bound
	if ! ldd "$(command -v cpa-store)" | grep libasan >/dev/null; then
		[ $((small * 10)) -lt $((big * 9)) ]
	fi
}
