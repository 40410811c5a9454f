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
# Under ASan (scripts/check --sanitize) freed memory waits in a
# quarantine of 256 MB by default, which these tests, freeing as they go,
# would measure instead of cpa-unwind: a small one (ignored without ASan).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"

GOOD_CHAIN='main;run;level_a;level_b;hot_leaf'

setup() {
	command -v setpriv >/dev/null || skip_missing "setpriv (util-linux) not installed"
	[ -x /usr/bin/time ] || skip_missing "GNU time (/usr/bin/time) not installed"
	T=$BATS_TEST_TMPDIR
	BG_PIDS=""
	MAPS=""
}

teardown() {
	local p
	for p in $BG_PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	for p in $BG_PIDS; do wait "$p" 2>/dev/null || true; done
	kill_workloads
	for p in $MAPS; do rm -f "$p"; done
}

# hostile NAME ARGS...: perfmap_flood as nobody, its pid in $NAME_PID
hostile() {
	local name=$1; shift
	start_workload "$T/$name.wl" "${AS_NOBODY[@]}" "$HOSTILE/perfmap_flood" "$@"
	eval "${name}_PID=$WL_PID"
	MAPS="$MAPS /tmp/perf-$WL_PID.map"
}

# pipeline PIDS SECONDS: cpa-capture | cpa-unwind, live, to the end; the
# folded profile in out.folded, cpa-unwind's --stats and warnings in
# unwind.err, its peak RSS (kB) in rss, each stage's last self-statistics
# in STAGE.statsfile
pipeline() {
	cpa-capture --pid "$1" --duration "$2" --freq 199 --stats \
		--stats-file "$T/capture.statsfile" 2>"$T/capture.err" |
		/usr/bin/time -f %M -o "$T/rss" cpa-unwind --folded --stats \
			--stats-file "$T/unwind.statsfile" \
			>"$T/out.folded" 2>"$T/unwind.err"
	sort "$T/out.folded" | sed -n 1,12p
	sed -n '/perf maps\|process caches\|records\|files refused\|v8 /p' "$T/unwind.err"
	sed -n '/samples\|lost/p' "$T/capture.err"
}

# stat FILE KEY: a counter of a --stats-file
stat() {
	sed -n "s/^$2=//p" "$1"
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

@test "a perf map of 2M lines, a line more each second: read within its share of --max-cache, off the sample path" {
	hostile flood --flood 2000000 --grow-ms 1000 --seconds 40
	start_workload "$T/good.wl" "$WL/chain_nofp" --seconds 40
	pipeline "$flood_PID,$WL_PID" 8
	echo "cpa-unwind peak RSS: $(cat "$T/rss") kB (bound $RSS_MAX_KB kB)"
	[ "$(cat "$T/rss")" -lt "$RSS_MAX_KB" ]
	# cut at its share, and not read again for the lines added since
	grep -Eq 'perf maps .* cut=1 ' "$T/unwind.err"
	grep -Eq 'process caches .*perfmap-full=1 ' "$T/unwind.err"
	# no sample lost: cpa-unwind kept up with the capture
	grep -q 'lost: 0' "$T/capture.err"
	grep -Eq 'records .* lost=0 ' "$T/unwind.err"
	# and the statistics say so: every sample the capture wrote moved
	# through cpa-unwind (what the watchdog reads)
	local out
	out=$(stat "$T/capture.statsfile" samples_out)
	echo "samples: capture out $out, unwind in $(stat "$T/unwind.statsfile" samples_in), out $(stat "$T/unwind.statsfile" samples_out)"
	[ "$out" -ge 20 ]
	[ "$(stat "$T/unwind.statsfile" samples_in)" -eq "$out" ]
	[ "$(stat "$T/unwind.statsfile" samples_out)" -eq "$out" ]
	# the other workload named all along (what it got of a busy host)
	[ "$(weight_of 'chain_nofp;' "$T/out.folded")" -ge 20 ]
	[ "$(share_with_chain "$T/out.folded" '^chain_nofp;' "$GOOD_CHAIN")" -ge 90 ]
}

@test "JIT code run right after its map line is written: named, the map read again from where it ended" {
	# a new function every 300 ms, its line flushed before it runs
	hostile jit --jit-every 300 --seconds 30
	pipeline "$jit_PID" 6
	local named anon
	named=$(weight_of 'perfmap_flood;' <(grep -E ';jit_(fn_[0-9]+|spin)_\[j\] ' "$T/out.folded"))
	anon=$(weight_of 'perfmap_flood;' <(grep -E ';\[anon\] ' "$T/out.folded"))
	echo "JIT samples named: $named, [anon]: $anon"
	[ "$named" -ge 100 ]
	# before, the map was read at most once a second: most were [anon]
	[ "$((anon * 100))" -le "$((named + anon))" ]
	grep -Eq 'perf maps .* incremental=[1-9]' "$T/unwind.err"
	grep -Eq 'perf maps .* found-late=[1-9]' "$T/unwind.err"
}

@test "a perf map that is a symlink to a root-only file: refused, as its process could not read it" {
	local shared
	shared=$(mktemp /tmp/cpa-perfmap.XXXXXX)
	MAPS="$MAPS $shared"
	chmod 644 "$shared"
	: >"$T/secret"
	chmod 600 "$T/secret"
	hostile secret --link "$T/secret" --seconds 30
	# the same trick on a file its user may read: read, so the rule is
	# the process's access, not the symlink
	hostile readable --link "$shared" --seconds 30
	# lines naming the code each runs (written after the processes
	# started: an older map is an earlier process's)
	echo "$(awk '/^code /{print $2}' "$T/secret.wl") 100 ROOT_ONLY_SECRET" >"$T/secret"
	echo "$(awk '/^code /{print $2}' "$T/readable.wl") 100 readable_by_all" >"$shared"
	pipeline "$secret_PID,$readable_PID" 4
	run ! grep -q ROOT_ONLY_SECRET "$T/out.folded"
	grep -q "^perfmap_flood;.*;\[anon\] " "$T/out.folded"
	grep -q ';readable_by_all_\[j\] ' "$T/out.folded"
	grep -Eq 'files refused .*not-readable-by-process=[1-9]' "$T/unwind.err"
}
