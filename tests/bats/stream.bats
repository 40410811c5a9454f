#!/usr/bin/env bats
# Malformed and truncated streams given to the consuming tools: a one-line
# error naming the input and the byte offset, and a non-zero exit.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	C=$CPA_SRCDIR/tests/fuzz/corpus/stream
}

@test "cpa-unwind: a record longer than the maximum is rejected with its offset" {
	run cpa-unwind <"$C/badlen"
	[ "$status" -ne 0 ]
	[[ "$output" == *"byte 16: record length 4294967295 exceeds the maximum"* ]]
	got=$(echo "$output" | grep -c .)
	[ "$got" -le 2 ]
}

@test "cpa-unwind: a truncated record is reported with its offset" {
	run cpa-unwind <"$C/truncated"
	[ "$status" -ne 0 ]
	[[ "$output" == *"byte 16: truncated raw-sample record"* ]]
}

@test "cpa-unwind: text is not a stream" {
	run cpa-unwind <<<"app;main;leaf 1"
	[ "$status" -ne 0 ]
	[[ "$output" == *"byte 0: not a cpa stream"* ]]
}

@test "cpa-render: a malformed stream is rejected with its offset" {
	run cpa-render <"$C/badlen"
	[ "$status" -ne 0 ]
	[[ "$output" == *"byte 16"* ]]
	run cpa-render <"$C/truncated"
	[ "$status" -ne 0 ]
	[[ "$output" == *"byte 16"* ]]
}

@test "cpa-render: a stream cut before its end record is reported, not drawn silently" {
	run cpa-render <"$C/noend"
	[ "$status" -ne 0 ]
	[[ "$output" == *"byte 32"* ]]
}

@test "cpa-dump: prints every record of a valid stream and its totals" {
	run "$CPA_BUILDDIR/tests/tools/cpa-dump" "$C/raw"
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" == "raw time=1700000000000000000 pid=100 tid=101 cpu=1 kind=oncpu"* ]]
	[ "${lines[5]}" = "end samples=1 lost=17 records=5" ]
}
