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
	serve_start "$F/serve" --max-jobs 8 --max-jobs-per-target 2 \
		--dashboard-url http://grafana.example:3000/d/
	: >"$F/bg.pids"
	# two spinners only: more would starve curl and the server on two
	# CPUs. chain_fp runs outside the container, chain_nofp inside.
	bg pid "$WL/chain_fp" --seconds 40
	bg sleeper "$WL/sleeper" --sleep 20 --count 200
	post off "$(job_body cpu c offcpu pid 6 ",\"pid\":$(cat "$F/sleeper.pid")")"
	# the sleeper starts sleeping once its capture is attached (its 6 s
	# count from the capture's start, which may take seconds to attach)
	wait_for 60 job_attached "$(cat "$F/off.id")"
	kill -USR1 "$(cat "$F/sleeper.pid")"
	post host "$(job_body cpu c oncpu host 5 ',"freq":99')"
	# a process that maps 8M once told to (start.h's handshake)
	bg memwl "$WL/memory" --virt 8M
	post mem "$(job_body memory c virtual_alloc pid 4 ",\"pid\":$(cat "$F/memwl.pid")")"
	wait_for 60 job_attached "$(cat "$F/mem.id")"
	kill -USR1 "$(cat "$F/memwl.pid")"
	post long "$(job_body cpu go oncpu pid 600 ",\"pid\":$(cat "$F/pid.pid")")"
	post bad "$(job_body cpu c oncpu pid 2 ',"pid":4194304')"
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
		post cont "$(job_body cpu c++ oncpu container 3 ",\"container_id\":\"${cid:0:16}\"")"
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

@test "serve: a host CPU job goes pending, running, terminal/completed; raw windows, flame graph and pprof hold the chain" {
	id=$(cat "$F/host.id")
	[[ "$id" =~ ^id-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]
	[ "$(jq -r .data.status "$F/host.new")" = pending ]
	[ "$(jq -r '.data.created_at == .data.updated_at' "$F/host.new")" = true ]
	v=$(jq -r '.data | has("started_at") or has("ended_at") or has("terminal")' "$F/host.new")
	[ "$v" = false ]
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	# it was running from started_at (the launcher's word) to ended_at
	jqb -e '.data.started_at | test("^[0-9-]+T[0-9:.]+Z$")'
	[ "$(jqb -r .data.status)" = terminal ]
	[ "$(jqb -c .data.terminal)" = '{"outcome":"completed"}' ]
	jqb -e '.data.ended_at'
	# HUATUO's Dashboard link: key-sorted query, times to the millisecond
	url=$(jqb -r .data.result_url)
	[[ "$url" =~ ^http://grafana\.example:3000/d/host-cpu-profiling/e5aebf-e4b8bb-e69cba-cpu-profiling\?from=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z\&orgId=1\&timezone=browser\&to=[0-9-]{10}T[0-9:]{8}\.[0-9]{3}Z\&var-hostname=$(hostname)\&var-tracer_id=$id$ ]]
	[ "$(api GET /v1/profiling)" = 200 ]
	jqb -e '[.data.items[] | has("result_url")] | any | not'
	[ "$(api GET "/v1/profiling/$id")" = 200 ]

	# raw: windows of pprof JSON, the chain in them, paged
	[ "$(api GET "/v1/profiling/$id/raw")" = 200 ]
	v=$(jqb -r '.data.limit, .data.offset' | tr '\n' ' ')
	[ "$v" = "20 0 " ]
	n=$(jqb '.data.items | length')
	[ "$n" -ge 1 ]
	jqb -e '.data.items[0] | (.uploaded_timestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{9}Z$")) and (.started_timestamp | test("\\.[0-9]{9}Z$"))'
	[ "$(jqb -r '.data.items[0].profile_type')" = process_cpu:cpu:nanoseconds:cpu:nanoseconds ]
	[ "$(jqb -r '.data.items[0].hostname')" = "$(hostname)" ]
	v=$(jqb -r '.data.items[0] | has("tracer_id") or has("profile_data") or has("container_id")')
	[ "$v" = false ]
	raw_folded "$id" >"$T/raw.folded"
	grep -qE '^(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/raw.folded"
	[ "$(api GET "/v1/profiling/$id/raw?limit=1&offset=0")" = 200 ]
	v=$(jqb '.data.items | length')
	[ "$v" = 1 ]
	[ "$(jqb -r .data.has_more)" = "$([ "$n" -gt 1 ] && echo true || echo false)" ]
	[ "$(api GET "/v1/profiling/$id/raw?offset=$n")" = 200 ]
	v=$(jqb '.data.items | length')
	[ "$v" = 0 ]
	[ "$(jqb -r .data.has_more)" = false ]

	# flame graph: well-formed SVG naming the chain's frames
	[ "$(BODY_FILE=$T/fg.svg api GET "/v1/profiling/$id/flamegraph")" = 200 ]
	xmllint --noout "$T/fg.svg"
	for f in main run level_a level_b hot_leaf; do
		grep -q "<title>$f (" "$T/fg.svg"
	done
	[ "$(BODY_FILE=$T/s.json api GET "/v1/profiling/$id/speedscope")" = 200 ]
	jq -e '[.shared.frames[].name] | index("hot_leaf")' "$T/s.json"

	# pprof: go tool pprof reads it, and every function's own samples
	# there are its own samples in the raw windows, summed
	command -v go >/dev/null || skip_missing "no go"
	[ "$(BODY_FILE=$T/p.pb.gz api GET "/v1/profiling/$id/pprof")" = 200 ]
	pprof_flat "$T/p.pb.gz" >"$T/pprof.flat"
	folded_flat "$T/raw.folded" >"$T/raw.flat"
	grep -q '^hot_leaf [0-9]' "$T/raw.flat"
	diff "$T/pprof.flat" "$T/raw.flat" >"$T/flat.diff" || sed -n 1,20p "$T/flat.diff"
	cmp "$T/pprof.flat" "$T/raw.flat"
}

@test "serve: a pid-scoped off-CPU job holds only that process's off-CPU time under its chain" {
	id=$(cat "$F/off.id")
	[ "$(jq -r .data.pid "$F/off.new")" = "$(cat "$F/sleeper.pid")" ]
	v=$(jq -r '.data | has("freq")' "$F/off.new")
	[ "$v" = false ]
	wait_job "$id" completed
	raw_folded "$id" >"$T/off.folded"
	[ "$(api GET "/v1/profiling/$id/raw")" = 200 ]
	[ "$(jqb -r '.data.items[0].profile_type')" = off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds ]
	grep -qE '^off-CPU blocked;(.*;)?main;run_sleeps;sleep_once;' "$T/off.folded"
	# nothing but off-CPU intervals: no on-CPU sample
	run ! grep -vE '^(off-CPU blocked|scheduling delay[^;]*);' "$T/off.folded"
	[ "$(BODY_FILE=$T/off.txt api GET "/v1/profiling/$id/folded")" = 200 ]
	run ! grep -vE '^(off-CPU blocked|scheduling delay[^;]*);sleeper;' "$T/off.txt"
}

@test "serve: a container-scoped job holds only the samples of the container's cgroup" {
	[ -s "$F/cg" ] || skip "no cgroup2 hierarchy mounted"
	id=$(cat "$F/cont.id")
	cid=$(cat "$F/cid")
	[ "$(jq -r .data.container_id "$F/cont.new")" = "${cid:0:16}" ]
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id/raw")" = 200 ]
	[ "$(jqb -r '.data.items[0].container_id')" = "${cid:0:16}" ]
	[ "$(BODY_FILE=$T/c.folded api GET "/v1/profiling/$id/folded")" = 200 ]
	grep -qE '^chain_nofp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/c.folded"
	# chain_fp spins outside the container all the while
	run ! grep -v '^chain_nofp;' "$T/c.folded"
}

@test "serve: stop moves running to stopping, then terminal/stopped; stopped is 409 on stop and raw, cpa's formats keep its samples" {
	id=$(cat "$F/long.id")
	wait_for 60 job_attached "$id"
	[ "$(job_status "$id")" = running ]
	# no result while it runs
	[ "$(api GET "/v1/profiling/$id/raw")" = 409 ]
	[ "$(jqb -r .error.code)" = result_not_ready ]
	[ "$(api GET "/v1/profiling/$id/flamegraph")" = 409 ]
	[ "$(jqb -r .error.code)" = result_not_ready ]
	t0=$(date +%s)
	[ "$(api POST "/v1/profiling/$id/stop")" = 200 ]
	[ "$(jqb -r .data.status)" = stopping ]
	v=$(jqb -r '.data | has("terminal")')
	[ "$v" = false ]
	# asked again while it stops: the same snapshot, or terminal already
	code=$(api POST "/v1/profiling/$id/stop")
	[[ "$code" =~ ^(200|409)$ ]]
	wait_job "$id" stopped 30
	[ $(( $(date +%s) - t0 )) -lt 30 ]
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -c .data.terminal)" = '{"outcome":"stopped"}' ]
	jqb -e '.data | has("result_url") | not'
	[ "$(api POST "/v1/profiling/$id/stop")" = 409 ]
	[ "$(jqb -c .error)" = '{"code":"job_conflict","message":"Job is already terminal"}' ]
	[ "$(api GET "/v1/profiling/$id/raw")" = 409 ]
	[ "$(jqb -r .error.code)" = result_unavailable ]
	[ "$(BODY_FILE=$T/p.folded api GET "/v1/profiling/$id/folded")" = 200 ]
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/p.folded"
	# the list: newest first
	[ "$(api GET /v1/profiling)" = 200 ]
	jqb -e '[.data.items[].created_at] | . == (sort | reverse)'
	jqb -e --arg id "$id" '[.data.items[] | select(.request_id == $id)] | length == 1'
}

@test "serve: a memory job records address space growth by allocating stack, in bytes" {
	id=$(cat "$F/mem.id")
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id/raw")" = 200 ]
	[ "$(jqb -r '.data.items[0].profile_type')" = memory:virtual_alloc:bytes:space:bytes ]
	jqb -e '.data.items[0].profile | .string_table[.sample_type[0].unit] == "bytes"'
	# the 8 MiB mapping, under the memory kind's root frame, by the
	# workload's stack (its frames named, or still module+offset when
	# its symbols were not loaded yet at its first sample)
	raw_folded "$id" >"$T/mem.raw"
	grep -E '^memory virtual;(.*;)?(map_region|memory\+0x[0-9a-f]+)(;.*)? [0-9]+$' "$T/mem.raw" >"$T/map"
	bytes=$(awk '{ s += $NF } END { print s + 0 }' "$T/map")
	[ "$bytes" -ge 8388608 ]
	[ "$(BODY_FILE=$T/mem.folded api GET "/v1/profiling/$id/folded")" = 200 ]
	run ! grep -v '^memory virtual;memory;' "$T/mem.folded"
}

@test "serve: a job whose capture cannot start goes terminal/failed with execution_start_failed and the capture's words" {
	id=$(cat "$F/bad.id")
	wait_job "$id" failed
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .data.terminal.reason)" = execution_start_failed ]
	[ "$(jqb -r .data.terminal.message)" = "cpa-capture: --pid 4194304: no such process" ]
	[ "$(api GET "/v1/profiling/$id/raw")" = 409 ]
	[ "$(jqb -r .error.code)" = result_unavailable ]
}

@test "serve: the server holds no capability; the nine capability rows are HUATUO's, kernel features in /version" {
	grep -qx 'CapEff:	0000000000000000' "/proc/$SERVE_PID/status"
	grep -qx 'CapPrm:	0000000000000000' "/proc/$SERVE_PID/status"
	grep -qx 'CapBnd:	0000000000000000' "/proc/$SERVE_PID/status"
	grep -qx 'NoNewPrivs:	1' "/proc/$SERVE_PID/status"
	[ "$(api GET /v1/profiling/capabilities)" = 200 ]
	v=$(jqb -r '.data | keys | join(",")')
	[ "$v" = items ]
	v=$(jqb -r '[.data.items[] | "\(.type)/\(.language)"] | join(",")')
	[ "$v" = cpu/c,cpu/c++,cpu/go,cpu/java,cpu/python,memory/c,memory/c++,memory/go,memory/java ]
	# HUATUO's modes, scopes and binary match in each row, cpa's a superset
	jqb -e '.data.items[0] | .modes == ["oncpu","offcpu"] and .supports_binary_match == false and (.supported_scopes | index("host") and index("container"))'
	jqb -e '.data.items[3] | .modes == ["oncpu"] and .supports_binary_match == true and (.supported_scopes | index("container"))'
	jqb -e '.data.items[5].modes[0:3] == ["virtual_alloc","physical_alloc","physical_usage"]'
	jqb -e '.data.items[8] | .modes == ["object_alloc","object_usage"]'
	jqb -e '[.data.items[] | keys == ["language","modes","supported_scopes","supports_binary_match","type"]] | all'
	curl -sS "$SERVE_URL/version" >"$T/version"
	[ "$(jq -r .data.name "$T/version")" = cpa-serve ]
	cpa-capture --features >"$T/features"
	[ "$(jq -r .data.kernel "$T/version")" = "$(sed -n 's/^kernel=//p' "$T/features")" ]
	[ "$(jq -r .data.features.bpf "$T/version")" = true ]
}
