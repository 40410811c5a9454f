#!/usr/bin/env bats
# Soak test, not part of `make check` (about a minute): a day of
# whole-host history replayed through cpa-store with short segments,
# retention and a size cap. Memory stays flat, the caps hold, and the last
# hour reads back exactly.
#   CPA_BUILDDIR=build bats tests/bats/store-soak.bats
load helper
load store_helper

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "soak: a day through cpa-store keeps memory, size and retention bounded" {
	"$GEN" --duration 86400 --rate 98 --stacks 20000 --procs 40 \
		--truth "$T/last" --truth-from $((T0 + 82800)) |
		CPA_STORE_NOW="@$((T0 + 86400))" /usr/bin/time -f %M -o "$T/rss" \
		cpa-store --dir "$T/s" --segment 10m --retain 6h --max-size 8M --stats 2>"$T/err"
	rss=$(cat "$T/rss")
	files=$(find "$T/s" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	oldest=$(ls "$T/s" | grep Z | sed -n 1p)
	echo "peak RSS $rss KiB, store $files bytes, oldest segment $oldest" >&2
	[ "$rss" -lt 32768 ]
	[ "$files" -le $((8 * 1048576)) ]
	# nothing older than 6 h before the newest window survives
	[[ "$oldest" > 20251201T035000Z ]]
	cpa-query --dir "$T/s" --from "@$((T0 + 82800))" --labels comm,pid >"$T/got"
	expect "$T/last" 0 99999999999 1 comm,pid >"$T/want"
	same_lines "$T/got" "$T/want"
}
