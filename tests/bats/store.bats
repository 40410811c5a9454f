#!/usr/bin/env bats
# cpa-store and cpa-query on generated streams with known samples: what
# goes in comes back exactly, for any range, window size, label set and
# filter. The expected output is computed from gen-stream's truth file by
# tests/bats/store_helper.bash, not by cpa-query.
load helper
load store_helper

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "store: the whole stream comes back exactly, for every label set" {
	store_from_gen "$T/s" "$T/truth" -- --duration 90 --rate 150 --stacks 300
	for labels in comm none comm,pid,tid pid,thread,container,env,cpu \
	    env,cpu,comm; do
		cpa-query --dir "$T/s" --labels "$labels" >"$T/got"
		expect "$T/truth" 0 9999999999 1 "$labels" >"$T/want"
		[ -s "$T/want" ]
		same_lines "$T/got" "$T/want"
	done
	# no sample lost or doubled: the totals agree too
	[ "$(total "$T/got")" = "$(awk -F'\t' '{s+=$13} END {printf "%d\n", s}' "$T/truth")" ]
	# the segment says what it holds: format, host, kernel, units and
	# the capture's own meta
	meta=$(ls -d "$T"/s/*Z)/meta
	grep -qx 'format=1.3' "$meta"
	grep -qx "host=$(uname -n)" "$meta"
	grep -qx "kernel=$(uname -r)" "$meta"
	grep -q '^units=oncpu:samples,offcpu-blocked:ns,' "$meta"
	grep -qx 'stream.frequency=100' "$meta"
	grep -q '^writer=cpa-store ' "$meta"
}

@test "store: ranges select exactly the windows they overlap, at and between boundaries" {
	store_from_gen "$T/s" "$T/truth" -- --duration 120 --rate 100
	# [from, to) in seconds after T0, with fractions inside windows
	for r in "0 1" "0 60" "17 18" "59 61" "30.5 31.25" "119 120" "45 200" \
	    "10.999 11.001"; do
		set -- $r
		local from to
		from=$(awk -v a="$T0" -v b="$1" 'BEGIN { printf "%.3f", a + b }')
		to=$(awk -v a="$T0" -v b="$2" 'BEGIN { printf "%.3f", a + b }')
		cpa-query --dir "$T/s" --from "@$from" --to "@$to" >"$T/got"
		# a window [ws, ws+1) overlaps [from, to) when ws < to and
		# ws + 1 > from; in whole seconds: ws < ceil(to), ws > from - 1
		local f2 t2
		f2=$(awk -v x="$from" 'BEGIN { printf "%d", (x == int(x)) ? x : int(x) }')
		t2=$(awk -v x="$to" 'BEGIN { printf "%d", (x == int(x)) ? x : int(x) + 1 }')
		expect "$T/truth" "$f2" "$t2" 1 comm >"$T/want"
		[ -s "$T/want" ]
		same_lines "$T/got" "$T/want"
	done
}

@test "store: 2 s windows aggregate and select by their own boundaries" {
	store_from_gen "$T/s" "$T/truth" --interval 2s -- --duration 60 --rate 80
	cpa-query --dir "$T/s" --from "@$((T0 + 3))" --to "@$((T0 + 9))" --labels pid >"$T/got"
	# windows [2,4) [4,6) [6,8) [8,10) overlap [3, 9)
	expect "$T/truth" $((T0 + 3)) $((T0 + 9)) 2 pid >"$T/want"
	same_lines "$T/got" "$T/want"
	# samples at 9.x are in window [8,10), so they are in; 10.x is not
	grep -q . "$T/got"
	got=$(cpa-query --dir "$T/s" --list | awk 'NR == 2 {print $(NF-2)}')
	[ "$got" = 30 ]
}

@test "store: label and frame filters select exactly the matching samples" {
	store_from_gen "$T/s" "$T/truth" -- --duration 40 --rate 100 --procs 6
	check() {	# check AWK-CONDITION cpa-query-filter-options...
		local cond=$1; shift
		cpa-query --dir "$T/s" --labels comm,pid,cpu "$@" >"$T/got"
		awk -F'\t' "$cond" "$T/truth" >"$T/ftruth"
		expect "$T/ftruth" 0 9999999999 1 comm,pid,cpu >"$T/want"
		[ -s "$T/want" ] || { echo "filter $* selects nothing" >&2; return 1; }
		same_lines "$T/got" "$T/want"
	}
	check '$4 == 1002' --pid 1002
	check '$4 == 1001 || $4 == 1004' --pid 1001,1004
	check '$5 == 1003' --tid 1003
	check '$8 == "proc3"' --comm proc3
	check '$8 ~ /^proc[0-2]$/' --comm 'proc[0-2]'
	check '$8 == "proc1" || $8 == "proc5"' --comm proc1 --comm proc5
	check '$6 == 0 || $6 == 2 || $6 == 3' --cpu 0,2-3
	check '$11 == "env1"' --env env1
	check '$3 == 1' --kind offcpu-blocked
	check '$3 == 0' --kind oncpu
	check '$10 == "ctr3"' --container ctr3
	check '$7 == 105' --cgroup 105
	check '$12 ~ /(^|;)fn_4[0-9](;|$)/' --grep '^fn_4[0-9]$'
	check '$12 !~ /_\[k\]/' --exclude '_\[k\]$'
	check '$4 == 1002 && $3 == 0 && $12 ~ /fn_1/' --pid 1002 --kind oncpu --grep fn_1
}

@test "store: folded text is imported and comes back line for line" {
	"$GEN" --folded --duration 20 --rate 50 >"$T/in.folded"
	cpa-store --dir "$T/s" --time "@$T0" <"$T/in.folded"
	# lines repeat in the input; the store sums them
	awk '{ c = $NF; $NF = ""; sub(/ $/, ""); s[$0] += c } END { for (l in s) print l, s[l] }' \
		"$T/in.folded" >"$T/want"
	cpa-query --dir "$T/s" >"$T/got"
	same_lines "$T/got" "$T/want"
	# all of it sits in the window of --time
	cpa-query --dir "$T/s" --from "@$T0" --to "@$((T0 + 1))" >"$T/got1"
	same_lines "$T/got1" "$T/want"
}

@test "store: segments rotate on period boundaries and queries read across them" {
	# 5.5 minutes from 10:00:00 with 1-minute segments: 6 segments
	store_from_gen "$T/s" "$T/truth" --segment 1m -- --duration 330 --rate 20
	run ls "$T/s"
	[ "${#lines[@]}" -eq 7 ]	# 6 segments and the lock
	[[ "$output" == *20251130T100000Z* && "$output" == *20251130T100500Z* ]]
	cpa-query --dir "$T/s" --from "@$((T0 + 50))" --to "@$((T0 + 190))" --labels comm,tid >"$T/got"
	expect "$T/truth" $((T0 + 50)) $((T0 + 190)) 1 comm,tid >"$T/want"
	same_lines "$T/got" "$T/want"
	# a range inside one segment reads that segment only, and of it
	# only the blocks (5 windows each) that hold the 5 windows asked for
	run cpa-query --verbose --dir "$T/s" --from "@$((T0 + 125))" --to "@$((T0 + 130))"
	[[ "$output" == *"range: 1 segments, "[12]" blocks, 5 windows"* ]]
}

@test "store: --retain deletes segments whose data is older, oldest first" {
	# 3 days of sparse samples in 1 h segments, with the clock pinned at
	# day 2, 12:00: what ended a day before that goes
	CPA_STORE_NOW="@$((T0 + 2 * 86400 + 43200))" store_from_gen "$T/s" "$T/truth" \
		--segment 1h --retain 1d -- --start $T0 --duration $((3 * 86400)) --rate 1 --stacks 20
	got=$(ls "$T/s" | grep -v lock | sed -n 1p)
	[ "$got" = 20251201T220000Z ]
	got=$(ls "$T/s" | grep -v lock | tail -1)
	[ "$got" = 20251203T090000Z ]
	cpa-query --dir "$T/s" >"$T/got"
	expect "$T/truth" $((T0 + 86400 + 43200)) 99999999999 1 comm >"$T/want"
	same_lines "$T/got" "$T/want"
	# With the real clock (later than all data), age counts back from the
	# newest window, so old imports are not wiped: a day before day 3.
	cpa-store --dir "$T/s" --retain 1d </dev/null
	got=$(ls "$T/s" | grep -v lock | sed -n 1p)
	[ "$got" = 20251202T100000Z ]
	got=$(ls "$T/s" | grep -v lock | tail -1)
	[ "$got" = 20251203T090000Z ]
}

@test "store: --max-size keeps the store under the cap by deleting the oldest segments" {
	store_from_gen "$T/s" "$T/truth" --segment 1m --max-size 300K -- \
		--duration 900 --rate 200 --stacks 2000
	size=$(du -b --apparent-size -s "$T/s" | cut -f1)
	segs=$(ls "$T/s" | grep -c Z)
	# directories count in du; the files must fit in 300K
	files=$(find "$T/s" -type f -name '[mdi]*' -printf '%s\n' | awk '{s+=$1} END {print s}')
	echo "store $size bytes, files $files, $segs segments" >&2
	[ "$files" -le $((300 * 1024)) ]
	[ "$segs" -ge 2 ]
	[ "$segs" -lt 15 ]
	# the newest minute is kept whole
	[ -d "$T/s/20251130T101400Z" ]
	cpa-query --dir "$T/s" --from "@$((T0 + 840))" >"$T/got"
	expect "$T/truth" $((T0 + 840)) 99999999999 1 comm >"$T/want"
	same_lines "$T/got" "$T/want"
}

@test "store: directories are 0750 and files 0640, even under a permissive umask" {
	(umask 000; store_from_gen "$T/s" "$T/truth" -- --duration 3)
	[ "$(stat -c %a "$T/s")" = 750 ]
	for d in "$T"/s/*Z; do
		[ "$(stat -c %a "$d")" = 750 ]
		for f in "$d"/*; do [ "$(stat -c %a "$f")" = 640 ]; done
	done
	[ "$(stat -c %a "$T/s/lock")" = 640 ]
}

@test "store: a second cpa-store on the same directory is refused" {
	mkfifo "$T/fifo"
	cpa-store --dir "$T/s" <"$T/fifo" 2>"$T/first.err" &
	local pid=$!
	exec 7>"$T/fifo"
	"$GEN" --duration 2 --no-end >&7
	wait_for 10 test -s "$T/s/lock"
	run cpa-store --dir "$T/s" </dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/s is in use by another cpa-store (pid $pid"* ]]
	exec 7>&-
	wait "$pid"
	# once the first is gone, the directory can be written again
	"$GEN" --start $((T0 + 10)) --duration 2 | cpa-store --dir "$T/s"
}

@test "store: a stream without its end record is stored, and the warning names the byte offset" {
	"$GEN" --duration 3 --no-end >"$T/in"
	run cpa-store --dir "$T/s" <"$T/in"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "cpa-store: warning: <stdin>: byte $(stat -c %s "$T/in"): stream ended without an end record (upstream stopped early; what came is stored)" ]
	got=$(cpa-query --dir "$T/s" | awk '{s += $NF} END {print (s > 0)}')
	[ "$got" = 1 ]
}

@test "store: bad input is reported with its offset after what came before is stored" {
	"$GEN" --duration 5 --no-end >"$T/good"
	cp "$T/good" "$T/bad"
	# a record header claiming 4 GiB
	printf '\007\000\000\000\377\377\377\377' >>"$T/bad"
	run cpa-store --dir "$T/s" <"$T/bad"
	[ "$status" -eq 1 ]
	[[ "$output" == *"<stdin>: byte $(stat -c %s "$T/good")"* ]]
	got=$(cpa-query --dir "$T/s" | awk '{s+=$NF} END {print (s > 0)}')
	[ "$got" = 1 ]
	run cpa-store --dir "$T/s2" <<<"app;main;leaf notanumber"
	[ "$status" -eq 1 ]
	[[ "$output" == *"<stdin>: line 1: "* ]]
	run cpa-store --dir "$T/s2" --interval 0
	[ "$status" -eq 2 ]
}
