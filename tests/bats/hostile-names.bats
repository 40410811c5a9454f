#!/usr/bin/env bats
# Names a process chooses, built to forge folded lines and terminal
# escapes: its comm ("A 999999999999\n", a line with a count of 10^12),
# thread names, Python qualnames and file names, an env value, its cgroup,
# the symbol of an object it maps and the name its perf map gives JIT code. Three
# such processes run as nobody under one live capture; every output
# (cpa-unwind --folded, the store through cpa-query's folded, stream and
# pprof, every cpa-render format, cpa-serve's history and job results)
# must show each name cleaned (lib/base/name.h) and no line of its own.
# Forged dictionaries and folded files, as an older cpa-unwind or anyone
# could write them, go through every decoder and come out clean too.
bats_require_minimum_version 1.5.0
load helper
load serve_helper

F=$BATS_FILE_TMPDIR
AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups --)
# Debian's interpreter: one that nobody may run
PY=/usr/bin/python3
UNWIND_CAPS=(setpriv --bounding-set=-all,+sys_ptrace,+dac_read_search,+syslog --)
CHECK=(python3 "$CPA_SRCDIR/tests/hostile/names_clean.py")
ESC=$'\x1b'
SYM=$'sym\x1b[5m;blink 123456789'
JIT=$'jit\x1b]8;;x\x07link 42'
TENANT=$'t\x1b[2J;x 99'

# bg NAME CMD...: CMD as nobody in the background, waited for "ready PID"
bg() {
	local name=$1; shift
	"${AS_NOBODY[@]}" "$@" >"$F/$name.out" 2>&1 3>&- &
	echo $! >>"$F/bg.pids"
	wait_for 20 grep -q '^ready ' "$F/$name.out"
	awk '/^ready /{print $2; exit}' "$F/$name.out" >"$F/$name.pid"
}

# anon_code PID: start and length of PID's anonymous executable mapping
anon_code() {
	awk '$2 ~ /^r.x/ && (NF == 5 || $6 ~ /^\[anon/) {
		split($1, a, "-"); printf "%s %x\n", a[1], strtonum("0x" a[2]) - strtonum("0x" a[1]); exit }' \
		"/proc/$1/maps"
}

# sampled_each N PID...: the capture so far holds N samples of each PID
sampled_each() {
	local n=$1; shift
	{ "$CPA_BUILDDIR/tests/tools/cpa-dump" <"$F/raw.cpa" 2>/dev/null || true; } |
		awk -v n="$n" -v want="$*" '
			$1 == "raw" { for (i = 2; i <= NF; i++) if ($i ~ /^pid=/) c[substr($i, 5)]++ }
			END { k = split(want, p, " "); for (i = 1; i <= k; i++) if (c[p[i]] < n) exit 1 }'
}

setup_file() {
	require_bpf
	command -v setpriv >/dev/null || skip_missing "setpriv (util-linux) not installed"
	: >"$F/bg.pids"
	# where nobody can read the object it maps
	local nb
	nb=$(mktemp -d /tmp/cpa-names.XXXXXX)
	echo "$nb" >"$F/nobody.dir"
	chmod 755 "$nb"
	"$CPA_BUILDDIR/tests/hostile/hostile-elf" --name "$SYM" "$nb/names.so"
	chmod 644 "$nb/names.so"
	bg py env CPA_TENANT="$TENANT" "$PY" "$CPA_SRCDIR/tests/hostile/hostile_names.py" 300
	bg elf env CPA_TENANT="$TENANT" "$CPA_BUILDDIR/tests/hostile/hostile-spin" "$nb/names.so"
	# a cgroup named to forge: anyone with a delegated subtree (a
	# user's systemd manager gives one) may name theirs so
	local cgroot
	cgroot=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ -n "$cgroot" ]; then
		local cg="cpa-names-$$-"$'\x1b]0;x\x07;evil 12'
		mkdir "$cgroot/$cg"
		printf '%s\n' "$cgroot/$cg" >"$F/cgroup.dir"
		cat "$F/elf.pid" >"$cgroot/$cg/cgroup.procs"
		echo "[cgroup /cpa-names-$$-_]0_x__evil_12]" >"$F/cgroup.label"
	fi
	bg jit "$WL/anon_exec"
	local jit_pid code
	jit_pid=$(cat "$F/jit.pid")
	code=$(anon_code "$jit_pid")
	[ -n "$code" ]
	# the map is the process's own: written as its user (one another
	# process of this pid left, pids having wrapped, is removed first)
	rm -f "/tmp/perf-$jit_pid.map"
	printf '%s %s\n' "$code" "$JIT" | "${AS_NOBODY[@]}" tee "/tmp/perf-$jit_pid.map" >/dev/null
	echo "/tmp/perf-$jit_pid.map" >"$F/perfmap"
	local pids
	pids=$(cat "$F/py.pid"),$(cat "$F/elf.pid"),$jit_pid
	# until each process has samples enough, however loaded the host is
	cpa-capture --pid "$pids" --duration 40 --freq 99 >"$F/raw.cpa" 2>"$F/capture.err" &
	local cap=$!
	wait_for 45 sampled_each 30 "$(cat "$F/py.pid")" "$(cat "$F/elf.pid")" "$jit_pid"
	kill -INT "$cap"
	wait "$cap"
	"${UNWIND_CAPS[@]}" cpa-unwind --env CPA_TENANT --stats-file "$F/unwind.stats" \
		<"$F/raw.cpa" >"$F/live.cpa" 2>"$F/unwind.err"
	cpa-store --dir "$F/store" <"$F/live.cpa"
	# what the stream holds, counted by the stream's own records
	"$CPA_BUILDDIR/tests/tools/cpa-dump" <"$F/live.cpa" |
		awk '$1 == "sample" { for (i = 2; i <= NF; i++) if ($i ~ /^weight=/) { sub("weight=", "", $i); s += $i } }
		     END { print s + 0 }' >"$F/total"
}

teardown_file() {
	local p
	for p in $(cat "$F/bg.pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
	rm -f "$(cat "$F/perfmap" 2>/dev/null)"
	[ ! -s "$F/nobody.dir" ] || rm -rf "$(cat "$F/nobody.dir")"
	if [ -s "$F/cgroup.dir" ]; then
		local cg
		cg=$(cat "$F/cgroup.dir")
		wait_for 10 rmdir "$cg" 2>/dev/null || true
	fi
}

# the server a test starts is stopped in that test's process
teardown() {
	serve_stop
}

setup() {
	T=$BATS_TEST_TMPDIR
	TOTAL=$(cat "$F/total")
}

# frames FILE: the distinct frames of a folded file, one a line
frames() { tr ';' '\n' <"$1" | sed 's/ [0-9]*$//' | sort -u; }

@test "hostile names: the live stream held samples of all three processes" {
	[ "$TOTAL" -gt 50 ]
	cpa-query --dir "$F/store" --labels pid >"$T/pids.folded"
	run grep -c "^\[pid $(cat "$F/py.pid")\];" "$T/pids.folded"
	[ "$output" -gt 0 ]
	run grep -c "^\[pid $(cat "$F/elf.pid")\];" "$T/pids.folded"
	[ "$output" -gt 0 ]
	run grep -c "^\[pid $(cat "$F/jit.pid")\];" "$T/pids.folded"
	[ "$output" -gt 0 ]
}

@test "hostile names: cpa-query folded makes no line of its own nor a 10^12 count" {
	cpa-query --dir "$F/store" --labels comm,thread,env >"$T/q.folded"
	"${CHECK[@]}" folded "$T/q.folded" "$TOTAL"
	run grep -c '^A 999999999999_;' "$T/q.folded"
	[ "$output" -gt 0 ]
	run ! grep -q '^A 999999999999$' "$T/q.folded"
}

@test "hostile names: each name comes out cleaned, in every label and frame" {
	cpa-query --dir "$F/store" --labels comm,thread,env >"$T/q.folded"
	frames "$T/q.folded" >"$T/frames"
	grep -qxF '[thread _]0_pwn__x]' "$T/frames"
	grep -qxF '[thread B_[31mred__]' "$T/frames"
	grep -qxF '[env t_[2J_x_99]' "$T/frames"
	grep -qE '^evil_frame_\]0_title_ 999 \(/tmp/a_b 12_c_\[2J\.py:[0-9]+\)_\[py\]$' "$T/frames"
	grep -qE '^rev___esrever___line___ \(/tmp/_del\.py:[0-9]+\)_\[py\]$' "$T/frames"
	grep -qxF 'sym_[5m_blink_123456789' "$T/frames"
	grep -qxF 'jit_]8__x_link 42_[j]' "$T/frames"
	if [ -s "$F/cgroup.label" ]; then
		cpa-query --dir "$F/store" --labels cgroup --pid "$(cat "$F/elf.pid")" >"$T/cg.folded"
		grep -qF "$(cat "$F/cgroup.label");" "$T/cg.folded"
	fi
	run ! grep -q "$ESC" "$T/q.folded"
	# cpa-unwind counted what it cleaned
	run awk -F= '$1 == "names_cleaned" { print $2 }' "$F/unwind.stats"
	[ "$output" -gt 0 ]
}

@test "hostile names: cpa-unwind --folded is as clean as the store's answer" {
	cpa-render --format folded "$F/live.cpa" >"$T/r.folded"
	"${CHECK[@]}" folded "$T/r.folded" "$TOTAL"
}

@test "hostile names: every cpa-render format, from the live stream" {
	local fmt each=()
	for fmt in text svg html speedscope pprof; do
		cpa-render --format "$fmt" -o "$T/out.$fmt" "$F/live.cpa"
		each+=("$fmt=$T/out.$fmt")
		# not a byte of an escape in any text output
		if [ "$fmt" != pprof ]; then
			run ! grep -q "$ESC" "$T/out.$fmt"
		fi
	done
	"${CHECK[@]}" --each "${each[@]}"
	xmllint --noout "$T/out.svg"
	run grep -c 'A 999999999999_' "$T/out.text"
	[ "$output" -gt 0 ]
}

@test "hostile names: cpa-query stream and pprof, and the tree of --top" {
	cpa-query --dir "$F/store" --format stream | cpa-render --format text >"$T/s.text"
	cpa-query --dir "$F/store" --format pprof -o "$T/q.pprof"
	cpa-query --dir "$F/store" --top 50 >"$T/top.txt"
	"${CHECK[@]}" --each "text=$T/s.text" "pprof=$T/q.pprof" "text=$T/top.txt"
}

@test "hostile names: cpa-serve's history, a job's folded lines and raw windows" {
	require_serve_tools
	serve_start "$F/serve" --dir "$F/store"
	[ "$(BODY_FILE=$T/h.folded api GET "/v1/history?format=folded")" = 200 ]
	"${CHECK[@]}" folded "$T/h.folded" "$TOTAL"
	local id
	id=$(new_job "$(job_body cpu python oncpu pid 2 ",\"pid\":$(cat "$F/py.pid")")")
	wait_job "$id" completed
	# the job's folded lines, comm first
	[ "$(BODY_FILE=$T/job.folded api GET "/v1/profiling/$id/folded")" = 200 ]
	"${CHECK[@]}" folded "$T/job.folded"
	run grep -c '^A 999999999999_;' "$T/job.folded"
	[ "$output" -gt 0 ]
	# its raw windows' pprof JSON, its frames joined as folded lines
	raw_folded "$id" >"$T/raw.folded"
	[ -s "$T/raw.folded" ]
	"${CHECK[@]}" folded "$T/raw.folded"
}

# A stream with the names of an older cpa-unwind, or forged
forged_stream() {
	printf '%s\n' escapes \
		'env t\x1b[2J\x3bx\x2099' \
		'container /kubepods/pod\x0a1\x3b2' \
		'1700000000000000000 oncpu 7 7 0 A\x20999999999999\x0a th\x1b]0\x3bx\x07 5 main;evil\x3bsplit\x1b[31m;bidi\xe2\x80\xae;leaf\x20123' \
		'1700000000000000000 oncpu 8 8 0 \x9b2J\xff\xfe\x23c B 7 main;\xc2\x9bcsi' |
		"$CPA_BUILDDIR/tests/tools/mkstream"
}

@test "hostile names: a forged dictionary comes out clean from every decoder" {
	forged_stream >"$T/forged.cpa"
	local fmt
	cpa-render --format folded "$T/forged.cpa" >"$T/f.folded"
	"${CHECK[@]}" folded "$T/f.folded" 12
	grep -qF 'A 999999999999_;main;evil_split_[31m;bidi___;leaf_123 5' "$T/f.folded"
	local each=()
	for fmt in text svg html speedscope pprof; do
		cpa-render --format "$fmt" -o "$T/f.$fmt" "$T/forged.cpa"
		each+=("$fmt=$T/f.$fmt")
	done
	"${CHECK[@]}" --each "${each[@]}"
	# through the store, every label; it counts what it cleaned
	cpa-store --dir "$T/store" --stats-file "$T/store.stats" <"$T/forged.cpa"
	# (env, container, 2 comms, thread, 4 frames)
	run awk -F= '$1 == "names_cleaned" { print $2 }' "$T/store.stats"
	[ "$output" -eq 9 ]
	cpa-query --dir "$T/store" --labels comm,thread,container,env >"$T/q.folded"
	"${CHECK[@]}" folded "$T/q.folded" 12
	grep -qF 'A 999999999999_;[thread th_]0_x_];' "$T/q.folded"
	grep -qF '_2J__#c;[thread B];' "$T/q.folded"
	cpa-query --dir "$T/store" --format pprof -o "$T/q.pprof"
	"${CHECK[@]}" pprof "$T/q.pprof"
}

@test "hostile names: folded text with escapes is drawn and stored clean" {
	printf 'app;\x1b]0;x\x07;esc\x1b[2J 3\nb\xc2\x9b;\xe2\x80\xaeleaf 4\n' >"$T/esc.folded"
	cpa-render --format text "$T/esc.folded" >"$T/esc.text"
	"${CHECK[@]}" text "$T/esc.text"
	run ! grep -q "$ESC" "$T/esc.text"
	cpa-render --format folded "$T/esc.folded" >"$T/esc.out"
	"${CHECK[@]}" folded "$T/esc.out" 7
	cpa-store --dir "$T/store" --time @1700000000 <"$T/esc.folded"
	cpa-query --dir "$T/store" >"$T/stored.folded"
	"${CHECK[@]}" folded "$T/stored.folded" 7
}
