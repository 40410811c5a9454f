#!/usr/bin/env bats
# Hostile clients and full disks against cpa-serve (issue 24, items 1-3):
# slow connections cannot keep authorized requests out, a request's
# children are bounded, jobs expire and are capped, a record is never
# left running by a full disk, and a restart keeps a cut capture's
# windows. HTTP on loopback only; every loop bounded.
load helper
load serve_helper

F=$BATS_FILE_TMPDIR

setup_file() {
	part_built libmicrohttpd || return 0
	require_bpf
	require_serve_tools
	start_workload "$F/wl.out" "$WL/chain_fp" --seconds 120
	echo "$WL_BG_PIDS" >"$F/bg.pids"
	echo "$WL_PID" >"$F/wl.pid"
	# a store of 100k distinct stacks, for queries that cost memory
	awk 'BEGIN { for (i = 0; i < 100000; i++)
		printf "big;main;a_function_with_a_long_name_number_%d_and_padding 1\n", i }' |
		cpa-store --dir "$F/store" 2>"$F/store.err"
	serve_start "$F/serve" --header-timeout 3 --max-jobs 8 \
		--max-jobs-per-target 8 --dir "$F/store"
}

teardown_file() {
	serve_stop
	kill_pids_in "$F/bg.pids"
}

setup() {
	serve_setup
	WL_PID=$(cat "$F/wl.pid")
}

teardown() {
	serve_back
	if [ -n "${FULL:-}" ]; then
		umount "$FULL" 2>/dev/null || true
	fi
}

port() { echo "${SERVE_URL##*:}"; }

# timed METHOD PATH [CURL ARGS]: "CODE SECONDS", at most 5 s
timed() {
	local method=$1 path=$2; shift 2
	curl -sS -o "$T/body" -w '%{http_code} %{time_total}\n' --max-time 5 \
		-X "$method" -H "Authorization: Bearer $TOKEN" "$@" "$SERVE_URL$path"
}

stream_over() { [ "$(stat -c %s "$2" 2>/dev/null || echo 0)" -gt "$1" ]; }

# pid_job DURATION [FIELDS]: a CPU job on the workload
pid_job() {
	new_job "$(job_body cpu c oncpu pid "$1" ",\"pid\":$WL_PID${2:+,$2}")"
}

# capture_pid: the job's capture (not its --check run) in $cap
capture_pid() {
	local p
	local c
	for p in $(pgrep -f -- "cpa-capture.*--pid=$WL_PID" || true); do
		# a process gone since pgrep (the --check run) is none
		c=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") || continue
		[ -n "$c" ] || continue
		case $c in *--check*) continue ;; esac
		cap=$p
		return 0
	done
	return 1
}

under_1s() { awk -v t="$1" 'BEGIN { exit !(t < 1.0) }'; }

@test "serve hostile: 1100 slow connections from loopback; authorized create and get answer within 1 s" {
	"$CPA_BUILDDIR/tests/tools/slowloris" 127.0.0.1 "$(port)" 1100 6 500 \
		>"$T/slow.out" 2>&1 &
	slow=$!
	wait_for 10 grep -q '^ready' "$T/slow.out"
	for i in 1 2 3; do
		read -r code secs < <(timed POST /v1/profiling -H 'Content-Type: application/json' \
			-d "$(job_body cpu c oncpu pid 1 ",\"pid\":$WL_PID")")
		echo "create: $code in $secs s"
		[ "$code" = 201 ]
		under_1s "$secs"
		id=$(jq -r .data.request_id "$T/body")
		read -r code secs < <(timed GET "/v1/profiling/$id")
		echo "get: $code in $secs s"
		[ "$code" = 200 ]
		under_1s "$secs"
		sleep 1
	done
	wait "$slow"
	cat "$T/slow.out"
	read -r _ opened _ closed _ oldest _ longest < <(tail -1 "$T/slow.out")
	# a byte every 0.5 s did not keep any past the 3 s header deadline
	[ "$opened" -ge 1100 ]
	[ "$closed" -ge 1100 ]
	[ "$oldest" -le 4000 ]
	[ "$longest" -le 4000 ]
	kill -0 "$SERVE_PID"
}

@test "serve hostile: a pattern that would expand past the bound is 400 at once; the server answers on" {
	for p in grep exclude; do
		read -r code secs < <(timed GET "/v1/history?last=1h&$p=((a%7B1,200%7D)%7B1,200%7D)%7B1,200%7D")
		echo "$p: $code in $secs s: $(cat "$T/body")"
		[ "$code" = 400 ]
		[ "$(jq -r .error.code "$T/body")" = invalid_request ]
		[[ "$(jq -r .error.message "$T/body")" =~ "too complex: its repetitions expand past 20000 nodes" ]]
		under_1s "$secs"
	done
	read -r code secs < <(timed GET "/v1/history?last=1h&grep=(x)%5C1")
	[ "$code" = 400 ]
	[[ "$(jq -r .error.message "$T/body")" =~ "backreferences are not taken" ]]
	# a sound pattern still works
	read -r code secs < <(timed GET "/v1/history?last=1h&grep=number_4242_")
	[ "$code" = 200 ]
	[ "$(cat "$T/body")" = "big;main;a_function_with_a_long_name_number_4242_and_padding 1" ]
}

@test "serve hostile: a history query past its memory bound is 413, and no HTTP thread waits on it" {
	if ldd "$(command -v cpa-query)" | grep libasan >/dev/null; then
		skip "sanitized build: ASan reserves terabytes of address space, so no child gets a memory bound (lib/base/child.c)"
	fi
	serve_aside
	serve_start "$T/small" --dir "$F/store" --child-memory 16M --threads 1
	# the history queries run on workers: with one HTTP thread, the
	# capabilities answer while they run
	local q=()
	for i in 1 2; do
		curl -sS -o "$T/q$i" -w '%{http_code}\n' -H "Authorization: Bearer $TOKEN" \
			"$SERVE_URL/v1/history?last=1h" >"$T/q$i.code" &
		q+=($!)
	done
	read -r code secs < <(timed GET /v1/profiling/capabilities)
	[ "$code" = 200 ]
	under_1s "$secs"
	wait "${q[@]}"
	for i in 1 2; do
		[ "$(cat "$T/q$i.code")" = 413 ]
		[ "$(jq -r .error.code "$T/q$i")" = result_too_large ]
		[[ "$(jq -r .error.message "$T/q$i")" =~ "past its memory limit".*"out of memory" ]]
	done
	serve_back
}

@test "serve hostile: a full disk never leaves a job running, nor an empty job directory (internal_error)" {
	FULL=$T/full
	mkdir -p "$FULL"
	mount -t tmpfs -o size=4m tmpfs "$FULL"
	serve_aside
	serve_start "$FULL/s"
	id=$(pid_job 3 '"freq":999')
	wait_for 60 job_attached "$id"
	# fill the disk while it captures: its stream, results and last
	# save all meet ENOSPC
	run dd if=/dev/zero of="$FULL/filler" bs=64k
	[[ "$output" =~ "No space left on device" ]]
	wait_for 40 job_ended "$id"
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .data.terminal.outcome)" = failed ]
	[ "$(jqb -r .data.terminal.reason)" = execution_failed ]
	# the record on disk says so too
	[ "$(jq -r .outcome "$FULL/s/state/jobs/$id/job.json")" = failed ]
	ls "$FULL/s/state/jobs" >"$T/before"
	[ "$(api POST /v1/profiling -H 'Content-Type: application/json' \
		-d "$(job_body cpu c oncpu pid 1 ",\"pid\":$WL_PID")")" = 500 ]
	[ "$(jqb -c .error)" = '{"code":"internal_error","message":"internal error"}' ]
	ls "$FULL/s/state/jobs" >"$T/after"
	cmp "$T/before" "$T/after"
	# a restart finds it failed, not lost
	serve_stop
	rm -f "$FULL/filler"
	serve_start "$FULL/s"
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .data.terminal.outcome)" = failed ]
	[ "$(jqb -r .data.terminal.reason)" = execution_failed ]
	serve_back
	umount "$FULL"
	FULL=
}

@test "serve hostile: a job's stream past --max-job-size fails the job with the reason" {
	serve_aside
	serve_start "$T/cap" --max-job-size 64K
	id=$(new_job "$(job_body cpu c oncpu host 20 ',"freq":999')")
	wait_job "$id" failed 40
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .data.terminal.reason)" = execution_failed ]
	[ "$(jqb -r .data.terminal.message)" = "cpa-unwind: the job's stream reached --max-job-size (65536 bytes)" ]
	size=$(stat -c %s "$T/cap/state/jobs/$id/profile.cpa")
	[ "$size" -le 65536 ]
	serve_back
}

@test "serve hostile: ended jobs expire after --retain; past --max-state-size the oldest go first" {
	serve_aside
	serve_start "$T/ret"
	old=$(pid_job 1)
	wait_job "$old" completed
	a=$(pid_job 1)
	wait_job "$a" completed
	serve_stop
	# the first ended 31 days ago: at the next start it is gone
	rec=$T/ret/state/jobs/$old/job.json
	sed -i "s/\"ended_ns\": *[0-9]*/\"ended_ns\": $(( ($(date +%s) - 31 * 86400) * 1000000000 ))/" "$rec"
	grep -q '"ended_ns": [0-9]\{19\}' "$rec"
	# the files' blocks, as the server counts them
	one=$(find "$T/ret/state/jobs/$a" -type f -printf '%b\n' | awk '{ n += $1 * 512 } END { print n }')
	serve_start "$T/ret" --max-state-size $((one * 3 / 2))
	[ "$(api GET "/v1/profiling/$old")" = 404 ]
	[ "$(jqb -r .error.code)" = job_not_found ]
	[ ! -e "$T/ret/state/jobs/$old" ]
	[ "$(api GET "/v1/profiling/$a")" = 200 ]
	# its published windows survived the restart
	[ "$(api GET "/v1/profiling/$a/raw")" = 200 ]
	jqb -e '.data.items | length >= 1' 
	# one more job's end passes the cap: the oldest ended goes
	b=$(pid_job 1)
	wait_job "$b" completed
	wait_for 10 test ! -e "$T/ret/state/jobs/$a"
	[ "$(api GET "/v1/profiling/$a")" = 404 ]
	[ "$(api GET "/v1/profiling/$b")" = 200 ]
	[ "$(api GET "/v1/profiling/$b/raw")" = 200 ]
	serve_back
}

@test "serve hostile: a job still running past its duration and --completion-grace fails as execution_timed_out" {
	serve_aside
	serve_start "$T/late" --completion-grace 1
	id=$(pid_job 2)
	# its capture frozen as soon as it runs: it cannot end by itself
	wait_for 60 capture_pid
	kill -STOP "$cap"
	wait_job "$id" failed 60
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .data.terminal.reason)" = execution_timed_out ]
	[ "$(jqb -r .data.terminal.message)" = "ran 1 s past its duration, and was stopped" ]
	jqb -e '.data.started_at' 
	kill -CONT "$cap" 2>/dev/null || true
}

@test "serve hostile: a capture cut short by a restart keeps its windows" {
	serve_aside
	serve_start "$T/rs"
	id=$(pid_job 600 '"freq":99')
	wait_for 60 job_attached "$id"
	# cut once cpa-unwind has written some of the workload's windows
	wait_for 20 stream_over 4096 "$T/rs/state/jobs/$id/profile.cpa"
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null || true
	serve_start "$T/rs"
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .data.terminal.outcome)" = failed ]
	[ "$(jqb -r .data.terminal.reason)" = operation_lost ]
	[ "$(jqb -r .data.terminal.message)" = "cpa-serve restarted while the job was running; the windows captured until then are kept" ]
	# failed: raw is unavailable by the contract; cpa's formats keep them
	[ "$(api GET "/v1/profiling/$id/raw")" = 409 ]
	[ "$(BODY_FILE=$T/lost.folded api GET "/v1/profiling/$id/folded")" = 200 ]
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/lost.folded"
	serve_back
}
