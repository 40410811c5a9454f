#!/usr/bin/env bats
# Replays every fuzz corpus through its target, so inputs that once crashed
# a parser stay fixed (under ASan+UBSan in the sanitized CI run). Needs
# neither root nor BPF: `make distcheck-unit` runs it from the tarball.
load helper

# replays NAME: tests/fuzz/NAME_replay runs its whole corpus without a crash
replays() {
	run "$CPA_BUILDDIR/tests/fuzz/$1_replay" "$CPA_SRCDIR/tests/fuzz/corpus/$1"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
}

@test "stream corpus replays without a crash" {
	replays stream
}

@test "text corpus replays without a crash" {
	replays text
}

@test "every corpus has a replay target, and replays without a crash" {
	local n=0 c left_out=0
	for c in "$CPA_SRCDIR"/tests/fuzz/corpus/*/; do
		c=${c%/}; c=${c##*/}
		# cpa-serve's, where configure --without-libmicrohttpd left it out
		if [ "$c" = serve_spec ] && ! part_built libmicrohttpd; then
			left_out=$(( left_out + 1 ))
			continue
		fi
		[ -x "$CPA_BUILDDIR/tests/fuzz/${c}_replay" ] || {
			echo "corpus $c has no tests/fuzz/${c}_replay" >&2
			false
		}
		replays "$c"
		n=$(( n + 1 ))
	done
	[ "$n" -ge $(( 12 - left_out )) ]
}
