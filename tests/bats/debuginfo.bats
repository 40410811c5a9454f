#!/usr/bin/env bats
# Names for stripped binaries and anonymous code. A copy of chain_nofp is
# stripped and its debug file kept apart: served by a real debuginfod on
# loopback (names appear once fetched; with the server down samples flow
# unnamed until it is back; a recording waits for the fetch;
# --no-debuginfod fetches nothing), or laid out as /usr/lib/debug's
# .build-id tree under a root the test names with --debug-dir.
# Anonymous executable memory reads [anon:NAME] or [anon].
load helper

CHAIN='main;run;level_a;level_b;hot_leaf'

setup_file() {
	B=$BATS_FILE_TMPDIR
	mkdir -p "$B/srv"
	cp "$WL/chain_nofp" "$B/dbg_chain"
	objcopy --only-keep-debug "$B/dbg_chain" "$B/srv/dbg_chain.debug"
	strip --strip-all "$B/dbg_chain"
	readelf -n "$B/dbg_chain" | awk '/Build ID:/ { print $3 }' >"$B/build-id"
}

setup() {
	T=$BATS_TEST_TMPDIR
	B=$BATS_FILE_TMPDIR
	ID=$(cat "$B/build-id")
	[ "${#ID}" -eq 40 ]
	SERVER_PID=""
}

teardown() {
	kill_workloads
	if [ -n "$SERVER_PID" ]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
}

need_debuginfod() {
	require_part debuginfod
	command -v debuginfod >/dev/null || skip_missing "debuginfod (the server) not installed"
	command -v debuginfod-find >/dev/null || skip_missing "debuginfod-find not installed"
}

# free_port: a TCP port nothing listens on (state 0A in /proc/net/tcp*).
free_port() {
	local p i
	for i in $(seq 1 50); do
		p=$(( 20000 + RANDOM % 30000 ))
		if ! awk -v p=":$(printf '%04X' "$p")" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
			/proc/net/tcp /proc/net/tcp6; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# serving URL: the debug file is served (asked with a cache of its own,
# emptied each time: libdebuginfod remembers a "not found").
serving() {
	rm -rf "$T/probe-cache"
	DEBUGINFOD_CACHE_PATH="$T/probe-cache" DEBUGINFOD_URLS="$1" \
		debuginfod-find debuginfo "$ID" >/dev/null 2>&1
}

# start_server PORT: debuginfod serving $B/srv on loopback, polled until
# it serves the debug file; sets SERVER_PID and URL.
start_server() {
	URL="http://127.0.0.1:$1"
	# DEBUGINFOD_URLS unset (helper.bash): a server forwards the files it
	# lacks to the servers it names
	debuginfod -p "$1" -F "$B/srv" -d "$T/index.sqlite" >"$T/server.log" 2>&1 3>&- &
	SERVER_PID=$!
	wait_for 20 serving "$URL"
}

# named_then_unnamed FILE: dbg_chain's samples left unnamed after one
# was named.
named_then_unnamed() {
	awk -v chain=";$CHAIN" '/^dbg_chain;/ { if (index($0, chain)) named = 1; else if (named) n++ }
		END { print n + 0 }' "$1"
}

# weight PATTERN FILE: total weight of the folded lines matching PATTERN
weight() {
	awk -v pat="$1" '$0 ~ pat { n = split($0, f, " "); s += f[n] } END { print s + 0 }' "$2"
}

@test "debuginfod: a stripped binary's names fetched in the background; a recording waits for them; --no-debuginfod fetches nothing" {
	require_bpf
	need_debuginfod
	start_server "$(free_port)"
	start_workload "$T/wl.out" "$B/dbg_chain" --seconds 20
	cpa-capture --pid "$WL_PID" --duration 2 2>"$T/capture.err" | tee "$T/rec.cpa" |
		DEBUGINFOD_URLS="$URL" cpa-unwind --folded --stats --stats-file "$T/selfstats" \
			--debuginfod-cache "$T/cache" >"$T/live.folded" 2>"$T/live.stats"
	head -n 3 "$T/live.folded"
	tail -n 3 "$T/live.folded"
	cat "$T/live.stats"
	[ "$(weight '^dbg_chain;' "$T/live.folded")" -ge 10 ]
	# fetched on the loader's first ask: named from an early sample on,
	# and never unnamed again
	grep -q "^dbg_chain;.*;$CHAIN" <(tail -n 1 "$T/live.folded")
	[ "$(named_then_unnamed "$T/live.folded")" -eq 0 ]
	grep -q 'debuginfod .*wanted=1 fetched=1 attempts=1 failures=0 .*renamed=1' "$T/live.stats"
	grep -qx 'debuginfod_fetched=1' "$T/selfstats"
	grep -qx 'debuginfod_failures=0' "$T/selfstats"
	# kept in libdebuginfod's cache, in the directory given
	cmp "$T/cache/$ID/debuginfo" "$B/srv/dbg_chain.debug"
	# a recording is unwound as fully as it can be: it waits for the fetch
	DEBUGINFOD_URLS="$URL" cpa-unwind --folded --debuginfod-cache "$T/cache2" \
		"$T/rec.cpa" >"$T/rec.folded"
	share=$(share_with_chain "$T/rec.folded" '^dbg_chain;' "$CHAIN")
	echo "recording: $share% named"
	[ "$share" -eq 100 ]
	# --no-debuginfod: nothing asked, nothing cached, frames unnamed
	asked=$(grep -c "GET /buildid/$ID" "$T/server.log")
	DEBUGINFOD_URLS="$URL" cpa-unwind --folded --stats --no-debuginfod \
		--debuginfod-cache "$T/cache3" "$T/rec.cpa" >"$T/off.folded" 2>"$T/off.stats"
	[ "$(weight '^dbg_chain;.*dbg_chain[+]0x' "$T/off.folded")" -eq "$(weight '^dbg_chain;' "$T/off.folded")" ]
	must_fail grep -q 'level_b' "$T/off.folded"
	must_fail grep -q 'debuginfod' "$T/off.stats"
	[ ! -e "$T/cache3" ]
	[ "$(grep -c "GET /buildid/$ID" "$T/server.log")" -eq "$asked" ]
}

@test "debuginfod: with the server down samples flow unnamed; a later sample is named once it is back" {
	require_bpf
	need_debuginfod
	port=$(free_port)
	start_workload "$T/wl.out" "$B/dbg_chain" --seconds 40
	mkfifo "$T/pipe"
	DEBUGINFOD_URLS="http://127.0.0.1:$port" cpa-unwind --folded --stats --verbose \
		--debuginfod-cache "$T/cache" <"$T/pipe" >"$T/out.folded" 2>"$T/unwind.err" 3>&- &
	unwind_pid=$!
	cpa-capture --pid "$WL_PID" --duration 30 >"$T/pipe" 2>"$T/capture.err" 3>&- &
	capture_pid=$!
	# unnamed samples flow while the server is down, and the fetch failed
	wait_for 15 grep -q '^dbg_chain;.*dbg_chain+0x' "$T/out.folded"
	wait_for 15 grep -q "debuginfod: fetch 1 of $ID failed" "$T/unwind.err"
	start_server "$port"
	# tried again (after 1 s, 2 s, 4 s...), fetched, and named from then on
	wait_for 20 grep -q "^dbg_chain;.*;$CHAIN\( \|;\)" "$T/out.folded"
	kill -INT "$capture_pid"
	wait "$capture_pid"
	wait "$unwind_pid"
	cat "$T/unwind.err"
	grep -q 'dbg_chain+0x' <(head -n 1 "$T/out.folded")
	must_fail grep -q 'level_b' <(head -n 1 "$T/out.folded")
	grep -q "^dbg_chain;.*;$CHAIN" <(tail -n 1 "$T/out.folded")
	[ "$(named_then_unnamed "$T/out.folded")" -eq 0 ]
	grep -q 'debuginfod .*wanted=1 fetched=1 .*renamed=1' "$T/unwind.err"
	grep -q 'debuginfod .*failures=[1-9]' "$T/unwind.err"
}

@test "--debug-dir: a debug file under DIR/.build-id/xx/rest.debug names a stripped binary; another build's is refused" {
	cp "$WL/selfsnap" "$T/snap"
	objcopy --only-keep-debug "$T/snap" "$T/snap.debug"
	strip --strip-all "$T/snap"
	sid=$(readelf -n "$T/snap" | awk '/Build ID:/ { print $3 }')
	"$T/snap" >"$T/s.cpa"
	mkdir -p "$T/root/.build-id/${sid:0:2}"
	cp "$T/snap.debug" "$T/root/.build-id/${sid:0:2}/${sid:2}.debug"
	run cpa-unwind --folded --no-debuginfod --debug-dir "$T/root" "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == "selfsnap;_start;"*";main;run;level_a;level_b;snap_leaf;grab_registers_[i] 1" ]]
	# without it the host's /usr/lib/debug has none: unnamed
	run cpa-unwind --folded --no-debuginfod "$T/s.cpa"
	echo "$output"
	must_fail grep -q 'level_b' <<<"$output"
	grep -q 'snap+0x' <<<"$output"
	# the debug file of another build at that path is not used
	cp "$B/srv/dbg_chain.debug" "$T/root/.build-id/${sid:0:2}/${sid:2}.debug"
	run cpa-unwind --folded --no-debuginfod --debug-dir "$T/root" "$T/s.cpa"
	echo "$output"
	must_fail grep -q 'level_b' <<<"$output"
	must_fail grep -q 'hot_leaf' <<<"$output"
}

@test "an unusable --debuginfod-cache: one warning naming it, and unwinding goes on without fetching" {
	"$WL/selfsnap" --samples 2 >"$T/s.cpa"
	touch "$T/file"
	run --separate-stderr env DEBUGINFOD_URLS=http://127.0.0.1:9 \
		cpa-unwind --folded --debuginfod-cache "$T/file/cache" "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$stderr"
	[ "$stderr" = "cpa-unwind: warning: debuginfod cache $T/file/cache: Not a directory; fetching nothing" ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[0]}" == "selfsnap;"*";main;run;level_a;level_b;snap_leaf;grab_registers_[i] 1" ]]
}

@test "anonymous code: [anon:NAME] where the kernel names the mapping, [anon] otherwise" {
	# the mapping records cpa-capture's /proc scan writes, on any kernel;
	# the sample is its leaf alone, a chain cut short, so it is rooted
	# at [truncated]
	"$WL/anon_exec" --stream --name cpa-test-code >"$T/named.cpa"
	run cpa-unwind --folded "$T/named.cpa"
	[ "$status" -eq 0 ]
	[ "$output" = "anon_exec;[truncated];[anon:cpa-test-code] 1" ]
	"$WL/anon_exec" --stream >"$T/unnamed.cpa"
	run cpa-unwind --folded "$T/unnamed.cpa"
	[ "$status" -eq 0 ]
	[ "$output" = "anon_exec;[truncated];[anon] 1" ]
}

# anon_leaf LEAF ARGS...: anon_exec ARGS, captured for a second; the
# user leaf of each of its samples must match LEAF (kernel frames may
# follow it).
anon_leaf() {
	local leaf=$1 total
	shift
	start_workload "$T/wl.out" "$WL/anon_exec" "$@"
	cpa-capture --pid "$WL_PID" --duration 1 >"$T/a.cpa" 2>"$T/capture.err"
	cpa-unwind --folded "$T/a.cpa" >"$T/a.folded"
	head -n 3 "$T/a.folded"
	total=$(weight '^anon_exec;' "$T/a.folded")
	[ "$total" -ge 5 ]
	[ "$(weight "^anon_exec;(.*;)?$leaf[ ;]" "$T/a.folded")" -eq "$total" ]
}

@test "anonymous code, real capture: unnamed memory reads [anon]" {
	require_bpf
	anon_leaf '[[]anon[]]'
}

@test "anonymous code, real capture: memory named by prctl reads [anon:NAME]" {
	require_bpf
	run "$WL/anon_exec" --probe
	if [ "$status" -eq 3 ]; then
		skip "kernel built without CONFIG_ANON_VMA_NAME: anonymous memory has no names"
	fi
	[ "$status" -eq 0 ]
	anon_leaf '[[]anon:cpa-test-code[]]' --name cpa-test-code
}
