#!/usr/bin/env bats
# cpa-serve's jobs, end to end: real BPF capture as root, driven over
# HTTP with curl, against workloads with known call chains. The jobs run
# side by side (each on its own target), started in setup_file, so the
# suite waits for one capture's length, not five.
load helper
load serve_helper

F=$BATS_FILE_TMPDIR

# bg NAME CMD...: a workload in the background, its pid in $F/NAME.pid
# once it printed "ready PID".
bg() {
	local name=$1; shift
	"$@" >"$F/$name.out" 2>&1 3>&- &
	echo $! >>"$F/bg.pids"
	wait_for 10 grep -q '^ready ' "$F/$name.out"
	awk '/^ready /{print $2; exit}' "$F/$name.out" >"$F/$name.pid"
}

post() {	# post NAME JSON: a job, its id in $F/NAME.id, its answer in $F/NAME.new
	BATS_TEST_TMPDIR=$F new_job "$2" >"$F/$1.id"
	cp "$F/new" "$F/$1.new"
}

setup_file() {
	part_built libmicrohttpd || return 0
	require_bpf
	require_serve_tools
	serve_start "$F/serve" --max-jobs 8 --max-jobs-per-target 2
	: >"$F/bg.pids"
	# two spinners only: more would starve curl and the server on two
	# CPUs. chain_fp runs outside the container, chain_nofp inside.
	bg pid "$WL/chain_fp" --seconds 40
	bg sleeper "$WL/sleeper" --sleep 20 --count 200
	post off "{\"type\":\"cpu\",\"mode\":\"offcpu\",\"scope\":\"pid\",\"pid\":$(cat "$F/sleeper.pid"),\"duration_seconds\":3}"
	# the sleeper starts sleeping once its capture is attached
	wait_for 30 job_attached "$(cat "$F/off.id")"
	kill -USR1 "$(cat "$F/sleeper.pid")"
	post host '{"type":"cpu","mode":"oncpu","scope":"host","duration_seconds":3,"freq":99}'
	post mem '{"type":"memory","mode":"virt","scope":"host","duration_seconds":2}'
	post long "{\"type\":\"cpu\",\"mode\":\"oncpu\",\"scope\":\"pid\",\"pid\":$(cat "$F/pid.pid"),\"duration_seconds\":600}"
	post bad '{"type":"cpu","mode":"oncpu","scope":"pid","pid":4194304,"duration_seconds":2}'
	local root cid
	root=$(findmnt -t cgroup2 -n -o TARGET | sed -n 1p)
	cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	echo "$cid" >"$F/cid"
	if [ -n "$root" ]; then
		mkdir "$root/docker-$cid.scope"
		echo "$root/docker-$cid.scope" >"$F/cg"
		sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --seconds 30' sh \
			"$(cat "$F/cg")" "$WL/chain_nofp" >"$F/cont.out" 2>&1 3>&- &
		echo $! >>"$F/bg.pids"
		wait_for 10 grep -q '^ready ' "$F/cont.out"
		post cont "{\"type\":\"cpu\",\"mode\":\"oncpu\",\"scope\":\"container\",\"container_id\":\"${cid:0:16}\",\"duration_seconds\":3}"
	fi
}

teardown_file() {
	serve_stop
	kill_pids_in "$F/bg.pids"
	if [ -s "$F/cg" ]; then
		wait_for 10 cgroup_empty "$(cat "$F/cg")" || true
		rmdir "$(cat "$F/cg")" 2>/dev/null || true
	fi
}

cgroup_empty() { [ -z "$(cat "$1/cgroup.procs")" ]; }

setup() {
	serve_setup
}

@test "serve: a host CPU job completes; raw, flame graph and pprof hold the workload's chain" {
	id=$(cat "$F/host.id")
	[ "$(jq -r .status "$F/host.new")" = running ]
	[ "$(jq -r .freq "$F/host.new")" = 99 ]
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .has_result)" = true ]
	[ "$(jqb -r .ended_at)" != null ]

	# raw: every folded line, then the same lines a page at a time
	[ "$(api GET "/v1/profiling/$id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/all.folded"
	total=$(jqb -r .total)
	[ "$total" -eq "$(wc -l <"$T/all.folded")" ]
	[ "$total" -ge 2 ]
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/all.folded"
	[ "$(api GET "/v1/profiling/$id/raw?limit=1&offset=1")" = 200 ]
	v=$(jqb -r '.lines | length')
	[ "$v" = 1 ]
	[ "$(jqb -r '.lines[0]')" = "$(sed -n 2p "$T/all.folded")" ]
	[ "$(api GET "/v1/profiling/$id/raw?offset=$total")" = 200 ]
	v=$(jqb -r '.lines | length')
	[ "$v" = 0 ]
	[ "$(api GET "/v1/profiling/$id/raw?limit=0")" = 400 ]
	[ "$(jqb -r .field)" = limit ]
	[ "$(api GET "/v1/profiling/$id/raw?page=2")" = 400 ]
	[ "$(jqb -r .field)" = page ]

	# flame graph: well-formed SVG naming the chain's frames
	[ "$(BODY_FILE=$T/fg.svg api GET "/v1/profiling/$id/flamegraph")" = 200 ]
	xmllint --noout "$T/fg.svg"
	for f in main run level_a level_b hot_leaf; do
		grep -q "<title>$f (" "$T/fg.svg"
	done

	# speedscope: JSON naming the chain's frames
	[ "$(BODY_FILE=$T/s.json api GET "/v1/profiling/$id/speedscope")" = 200 ]
	jq -e '."$schema" | test("speedscope")' "$T/s.json"
	jq -e '[.shared.frames[].name] | index("hot_leaf")' "$T/s.json"

	# pprof: go tool pprof reads it, and finds the chain
	command -v go >/dev/null || skip_missing "no go"
	[ "$(BODY_FILE=$T/p.pb.gz api GET "/v1/profiling/$id/pprof")" = 200 ]
	HOME=$T go tool pprof -traces "$T/p.pb.gz" >"$T/traces" 2>&1
	grep -A4 -m1 ' hot_leaf$' "$T/traces" >"$T/trace"
	grep -q ' level_b$' "$T/trace"
	grep -q ' level_a$' "$T/trace"
}

@test "serve: a pid-scoped off-CPU job holds only that process's off-CPU time under its chain" {
	id=$(cat "$F/off.id")
	[ "$(jq -r .pid "$F/off.new")" = "$(cat "$F/sleeper.pid")" ]
	[ "$(jq -r .freq "$F/off.new")" = null ]
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/off.folded"
	grep -qE '^off-CPU blocked;sleeper;(.*;)?main;run_sleeps;sleep_once;' "$T/off.folded"
	# nothing but the sleeper's off-CPU intervals: no on-CPU sample, no
	# other process
	run ! grep -vE '^(off-CPU blocked|scheduling delay[^;]*);sleeper;' "$T/off.folded"
}

@test "serve: a container-scoped job holds only the samples of the container's cgroup" {
	[ -s "$F/cg" ] || skip "no cgroup2 hierarchy mounted"
	id=$(cat "$F/cont.id")
	cid=$(cat "$F/cid")
	[ "$(jq -r .container_id "$F/cont.new")" = "${cid:0:16}" ]
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/c.folded"
	grep -qE '^chain_nofp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/c.folded"
	# chain_fp spins outside the container all the while
	run ! grep -v '^chain_nofp;' "$T/c.folded"
}

@test "serve: a stopped job ends as stopped with its partial result; stop is idempotent" {
	id=$(cat "$F/long.id")
	wait_for 20 job_attached "$id"
	# no result while it runs
	[ "$(api GET "/v1/profiling/$id/flamegraph")" = 409 ]
	t0=$(date +%s)
	[ "$(api POST "/v1/profiling/$id/stop")" = 202 ]
	[ "$(jqb -r .status)" = stopping ]
	# asked again: the same job, stopping or already stopped
	code=$(api POST "/v1/profiling/$id/stop")
	[[ "$code" =~ ^20[02]$ ]]
	[[ "$(jqb -r .status)" =~ ^(stopping|stopped)$ ]]
	wait_job "$id" stopped 30
	[ $(( $(date +%s) - t0 )) -lt 30 ]
	[ "$(api POST "/v1/profiling/$id/stop")" = 200 ]
	[ "$(jqb -r .status)" = stopped ]
	[ "$(api GET "/v1/profiling/$id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/p.folded"
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/p.folded"
	[ "$(api GET "/v1/profiling?status=stopped")" = 200 ]
	v=$(jqb -r --arg id "$id" '[.jobs[] | select(.id == $id)] | length')
	[ "$v" = 1 ]
	[ "$(api GET "/v1/profiling?status=running")" = 200 ]
	v=$(jqb -r --arg id "$id" '[.jobs[] | select(.id == $id)] | length')
	[ "$v" = 0 ]
}

@test "serve: a memory job records address space growth by allocating stack, in bytes" {
	id=$(cat "$F/mem.id")
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/mem.folded"
	# the processes that mapped memory meanwhile (the job's own
	# cpa-unwind does), under the memory kind's root frame
	grep -qE '^memory virtual;[^;]+;.* [0-9]+$' "$T/mem.folded"
	run ! grep -v '^memory virtual;' "$T/mem.folded"
}

@test "serve: a job whose capture fails is failed with its reason and the capture's words" {
	id=$(cat "$F/bad.id")
	wait_job "$id" failed
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .reason)" = capture_failed ]
	[ "$(jqb -r .message)" = "cpa-capture: --pid 4194304: no such process" ]
	[ "$(api GET "/v1/profiling/$id/raw")" = 404 ]
}

@test "serve: the server holds no capability; capabilities come from cpa-capture --features" {
	grep -qx 'CapEff:	0000000000000000' "/proc/$SERVE_PID/status"
	grep -qx 'CapPrm:	0000000000000000' "/proc/$SERVE_PID/status"
	grep -qx 'CapBnd:	0000000000000000' "/proc/$SERVE_PID/status"
	grep -qx 'NoNewPrivs:	1' "/proc/$SERVE_PID/status"
	[ "$(api GET /v1/profiling/capabilities)" = 200 ]
	cpa-capture --features >"$T/features"
	[ "$(jqb -r .kernel)" = "$(sed -n 's/^kernel=//p' "$T/features")" ]
	[ "$(jqb -r .features.bpf)" = true ]
	[ "$(jqb -r .features.pmu)" = "$(sed -n 's/^pmu=yes/true/p; s/^pmu=no/false/p' "$T/features")" ]
	v=$(jqb -r '.types.cpu | join(",")')
	[ "$v" = oncpu,offcpu ]
	v=$(jqb -r '.types.memory | join(",")')
	[ "$v" = virt,phys,usage,malloc ]
	v=$(jqb -r '.scopes | join(",")')
	[ "$v" = host,pid,container ]
}
