#!/usr/bin/env bats
# Replays every fuzz corpus through its target, so inputs that once crashed
# a parser stay fixed (under ASan+UBSan in the sanitized CI run).
load helper

@test "stream corpus replays without a crash" {
	run "$CPA_BUILDDIR/tests/fuzz/stream_replay" "$CPA_SRCDIR/tests/fuzz/corpus/stream"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
}

@test "text corpus replays without a crash" {
	run "$CPA_BUILDDIR/tests/fuzz/text_replay" "$CPA_SRCDIR/tests/fuzz/corpus/text"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
}
