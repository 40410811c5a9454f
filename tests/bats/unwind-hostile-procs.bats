#!/usr/bin/env bats
# cpa-unwind against what an unprivileged process puts in its own memory
# and files for cpa-unwind to read (docs/security.md, "Hostile
# processes"): each hostile process runs as nobody; cpa-unwind, as root,
# must stay within its bounds and keep naming the others.
bats_require_minimum_version 1.5.0
load helper

HOSTILE=$CPA_BUILDDIR/tests/hostile
AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
RSS_MAX_KB=65536	# as unwind-hostile-objects.bats: well under MemoryMax

setup() {
	command -v setpriv >/dev/null || skip_missing "setpriv (util-linux) not installed"
	[ -x /usr/bin/time ] || skip_missing "GNU time (/usr/bin/time) not installed"
	T=$BATS_TEST_TMPDIR
	BG_PIDS=""
}

teardown() {
	local p
	for p in $BG_PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	for p in $BG_PIDS; do wait "$p" 2>/dev/null || true; done
}

# weight_of PREFIX FILE: total weight of the folded lines starting PREFIX
weight_of() {
	awk -v pre="$1" 'index($0, pre) == 1 { n = split($0, f, " "); s += f[n] } END { print s + 0 }' "$2"
}

@test "forged Python code objects, never reused, 60 KB line tables: the code cache keeps to its share of --max-cache" {
	# 65536 code objects at once, 64 to a sample: before the budget,
	# cpa-unwind kept every one (3.9 GB)
	mkfifo "$T/stream"
	"${AS_NOBODY[@]}" "$HOSTILE/forged_pycode" --codes 65536 --seconds 120 >"$T/stream" &
	BG_PIDS="$!"
	/usr/bin/time -f %M -o "$T/rss" cpa-unwind --folded --stats <"$T/stream" \
		>"$T/out.folded" 2>"$T/unwind.err"
	grep 'process caches' "$T/unwind.err"
	echo "cpa-unwind peak RSS: $(cat "$T/rss") kB (bound $RSS_MAX_KB kB)"
	[ "$(cat "$T/rss")" -lt "$RSS_MAX_KB" ]
	# the cache started over when full, and held no more than its share
	grep -Eq 'process caches .* pycode-full=[1-9]' "$T/unwind.err"
	# every frame of every sample still named from the process's memory
	[ "$(weight_of 'forged_pycode;forged (forged.py:1)_[py];' "$T/out.folded")" -eq 1024 ]
	run ! grep -F 'unknown' "$T/out.folded"
}
