#!/usr/bin/env bats
# tests/lint-bats rejects each shape of bats code that can never fail a
# test, naming the line, and accepts the forms that can. The examples are
# in tests/data/lint/, out of the suite's way (bats would run them).
load helper

LINT="$CPA_SRCDIR/tests/lint-bats"
EX="$CPA_SRCDIR/tests/data/lint"

# rejects FILE LINE RULE: the lint's output names FILE:LINE with RULE.
rejects() {
	grep -qx "$1:$2: $3: .*" <<<"$output" || {
		echo "expected $1:$2: $3 in:" >&2
		echo "$output" >&2
		return 1
	}
}

@test "a bare ! statement is rejected in a test, allowed last in a helper" {
	run "$LINT" "$EX/bang.bats"
	[ "$status" -eq 1 ]
	rejects "$EX/bang.bats" 4 bang
	rejects "$EX/bang.bats" 8 bang
	rejects "$EX/bang.bats" 9 bang
	rejects "$EX/bang.bats" 12 bang
	[ "${#lines[@]}" -eq 4 ]
}

@test "an && list ending in a test is rejected unless || follows" {
	run "$LINT" "$EX/and-list.bats"
	[ "$status" -eq 1 ]
	rejects "$EX/and-list.bats" 3 and-list
	rejects "$EX/and-list.bats" 4 and-list
	rejects "$EX/and-list.bats" 5 and-list
	rejects "$EX/and-list.bats" 6 and-list
	rejects "$EX/and-list.bats" 12 and-list
	[ "${#lines[@]}" -eq 5 ]
}

@test "a pipe whose status is dropped is rejected" {
	run "$LINT" "$EX/pipes.bats"
	[ "$status" -eq 1 ]
	rejects "$EX/pipes.bats" 3 subst
	rejects "$EX/pipes.bats" 7 subst
	rejects "$EX/pipes.bats" 11 sh-c
	rejects "$EX/pipes.bats" 13 sigpipe
	rejects "$EX/pipes.bats" 14 sigpipe
	[ "${#lines[@]}" -eq 5 ]
}

@test "a file that does not load helper.bash is rejected, and so is a helper without pipefail" {
	T=$BATS_TEST_TMPDIR
	printf '%s\n' '@test "t" {' '	dump | wc -l' '}' >"$T/x.bats"
	printf '%s\n' 'load helper' >"$T/y_helper.bash"
	printf '%s\n' 'load y_helper' '@test "t" {' '	true' '}' >"$T/y.bats"
	printf '%s\n' 'bats_require_minimum_version 1.5.0' >"$T/helper.bash"
	run "$LINT" "$T/x.bats" "$T/y.bats" "$T/y_helper.bash" "$T/helper.bash"
	[ "$status" -eq 1 ]
	rejects "$T/x.bats" 1 load
	rejects "$T/helper.bash" 1 load
	[ "${#lines[@]}" -eq 2 ]
}

@test "heredocs, quoted programs and comments are not read as statements" {
	run "$LINT" "$EX/quoted.bats"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "the suite itself passes the lint" {
	run "$LINT"
	echo "$output"
	[ "$status" -eq 0 ]
}
