#!/usr/bin/env bats
# cpa-serve --fleet, HUATUO's apiserver: jobs created on it run on the
# nodes they name (real cpa-serve nodes on loopback, each with a host
# name of its own, publishing their windows to a ClickHouse server of the
# suite's own), through each node's /v1/operations. Nodes that misbehave
# (tests/tools/fake-node: garbage, silence, a byte a second, forgotten
# or regressing Operations, refusals, wrong codes) get the contract's
# outcome each, in one log line, while the real nodes' jobs go on. The
# apiserver is restarted while every job is active. One run serves every
# test (setup_file).
load helper
load store_helper
load fleet_helper
load serve_helper
load apiserver_helper

setup_file() {
	require_bpf
	require_clickhouse
	part_built libmicrohttpd || return 0
	command -v jq >/dev/null || return 0
	local F=$BATS_FILE_TMPDIR m
	mkdir -p "$F/api"
	(umask 077; head -c 24 /dev/urandom | base64 >"$F/api/token")
	(umask 077; cat >"$F/users" <<EOF
[[Auth.Users]]
    ID = "alice"
    BearerToken = "alice-token-0123456789"
    Permissions = ["/v1/profiling", "/v1/profiling/**"]
[[Auth.Users]]
    ID = "bob"
    BearerToken = "bob-token-0123456789ab"
    Permissions = ["GET /v1/profiling"]
EOF
)
	api_fleet_clickhouse
	start_workload "$F/wl.out" "$WL/chain_fp" --seconds 120
	echo "$WL_PID" >"$F/wl.pid"
	export WLPID=$WL_PID
	node_start node-a
	node_start node-b
	fake_nodes
	nodes_file node-a node-b
	api_start --users "$F/users"
	# the jobs every test looks at, all at once
	fleet_job node-b cpu oncpu 60 >"$F/job-stop"
	fleet_job node-b cpu oncpu 3 >"$F/job-b"
	fleet_job node-a cpu oncpu 4 >"$F/job-a"
	for m in $FAKE_MODES; do
		new_job "$(printf '{"type":"cpu","language":"c","mode":"oncpu","scope":"host","duration_seconds":2,"hostname":"f-%s"}' "$m")" >"$F/job-f-$m"
	done
	# the apiserver goes away while jobs are active, and comes back
	wait_for 60 job_has_status "$(cat "$F/job-stop")" running
	api GET '/v1/profiling?limit=1000' >/dev/null
	jqb -r '.data.items[] | select(.status != "terminal") | .request_id' >"$F/active"
	serve_stop
	cp "$F/api/serve.log" "$F/api/serve.log.1"
	api_start --users "$F/users"
}

teardown_file() {
	api_fleet_teardown
}

setup() {
	F=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
	part_built libmicrohttpd || skip "built without libmicrohttpd"
	require_serve_tools
	export SERVE_URL TOKEN
	local port
	port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$F/api/serve.log" | tail -1)
	SERVE_URL=http://127.0.0.1:$port
	TOKEN=$(cat "$F/api/token")
}

@test "apiserver: a job on another host completes; its raw windows, from ClickHouse, are the node's own" {
	local id
	id=$(cat "$F/job-b")
	wait_job "$id" completed 60
	run jq -r '.data.hostname' <<<"$(job_record "$id")"
	[ "$output" = node-b ]
	# the node ran it as an Operation, and published it with its id
	[ -d "$F/node-b/jobs/$id/windows" ]
	[ "$(ch_sql "$CH/s1" "SELECT uniqExact(host) FROM cpa.samples WHERE job = '$id'")" = 1 ]
	[ "$(ch_sql "$CH/s1" "SELECT any(host) FROM cpa.samples WHERE job = '$id'")" = node-b ]
	[ "$(ch_sql "$CH/s1" "SELECT count() FROM cpa.publications WHERE request_id = '$id'")" = 1 ]
	raw_of "$id" >"$T/fleet"
	node_windows node-b "$id" >"$T/node"
	[ -s "$T/node" ]
	grep -q 'main;run;level_a;level_b;hot_leaf ' "$T/fleet"
	same_lines "$T/fleet" "$T/node"
	# the page's items: HUATUO's fields, newest first
	code=$(api GET "/v1/profiling/$id/raw?limit=1")
	[ "$code" = 200 ]
	[ "$(jqb -r '.data.items[0].hostname')" = node-b ]
	[ "$(jqb -r '.data.items[0].profile_type')" = "process_cpu:cpu:nanoseconds:cpu:nanoseconds" ]
	jqb -e '.data.items[0].uploaded_timestamp | test("^[0-9-]{10}T[0-9:]{8}\\.[0-9]{9}Z$")'
	jqb -e '.data.has_more == true and .data.limit == 1'
	# a continuous-history query does not count the job's windows
	[ -z "$(cpa-query --clickhouse "$CH_URL" --comm chain_fp)" ]
	[ -n "$(cpa-query --clickhouse "$CH_URL" --job "$id" --comm chain_fp)" ]
}

@test "apiserver: a job on a third host completes across the apiserver's restart" {
	local id
	id=$(cat "$F/job-a")
	wait_job "$id" completed 60
	grep -q 'serving on' "$F/api/serve.log.1"
	grep -q 'serving on' "$F/api/serve.log"
	jq -e '.remote.start_sent == true' "$F/api/state/jobs/$id/job.json"
	raw_of "$id" >"$T/fleet"
	node_windows node-a "$id" >"$T/node"
	[ -s "$T/node" ]
	same_lines "$T/fleet" "$T/node"
}

@test "apiserver: each misbehaving node gets its job the contract's outcome, in one log line" {
	local m id want rec
	declare -A want=([garbage]=protocol_error [silent]=node_unavailable
		[slow]=node_unavailable [pending]=start_timeout
		[lost]=operation_lost [regress]=protocol_error
		[capacity]=execution_capacity_exceeded
		[invalid]=invalid_node_request [badcode]=protocol_error
		[mismatch]=protocol_error [unauth]=protocol_error)
	for m in $FAKE_MODES; do
		id=$(cat "$F/job-f-$m")
		wait_for 30 job_ended "$id"
		rec=$(job_record "$id")
		if [ "$(jq -r .data.terminal.reason <<<"$rec")" != "${want[$m]}" ]; then
			echo "f-$m: $rec" >&2
			false
		fi
		jq -e '.data.terminal.outcome == "failed" and (.data.terminal.message | length > 0)' <<<"$rec"
		n=$(cat "$F/api/serve.log.1" "$F/api/serve.log" | grep -c "job $id on f-$m: failed: ${want[$m]}: ")
		[ "$n" = 1 ]
	done
	# the real nodes' jobs were not held by them
	wait_job "$(cat "$F/job-b")" completed 60
}

@test "apiserver: a job active at the restart is supervised again: its stop reaches the node" {
	local id
	id=$(cat "$F/job-stop")
	grep -qx "$id" "$F/active"
	job_has_status "$id" running
	code=$(api POST "/v1/profiling/$id/stop")
	[ "$code" = 200 ]
	jqb -e '.data.status == "stopping" or .data.status == "terminal"'
	wait_job "$id" stopped 30
	code=$(api POST "/v1/profiling/$id/stop")
	[ "$code" = 409 ]
	[ "$(jqb -r .error.code)" = job_conflict ]
	code=$(api GET "/v1/profiling/$id/raw")
	[ "$code" = 409 ]
	[ "$(jqb -r .error.code)" = result_unavailable ]
	# the node's own record of the Operation
	jq -e '.status == "terminal" and .outcome == "stopped"' "$F/node-b/jobs/$id/job.json"
}

@test "apiserver: a host name that is not a node is refused, in one log line" {
	code=$(api POST /v1/profiling -H 'Content-Type: application/json' \
		-d '{"type":"cpu","language":"c","mode":"oncpu","scope":"host","duration_seconds":2,"hostname":"nowhere-1"}')
	[ "$code" = 400 ]
	[ "$(jqb -r .error.code)" = invalid_request ]
	[ "$(grep -c 'hostname "nowhere-1" is not a node' "$F/api/serve.log")" = 1 ]
}

@test "apiserver: users, ownership, listing and the per-host quota across the fleet" {
	local mine theirs
	mine=$(TOKEN=alice-token-0123456789 new_job '{"type":"cpu","language":"c","mode":"oncpu","scope":"host","duration_seconds":30,"hostname":"f-silent"}')
	theirs=$(cat "$F/job-a")
	# alice sees her job only; the administrator sees every host's
	code=$(TOKEN=alice-token-0123456789 api GET /v1/profiling)
	[ "$code" = 200 ]
	ids=$(jqb -r '[.data.items[].request_id] | join(" ")')
	[ "$ids" = "$mine" ]
	code=$(api GET "/v1/profiling?limit=1000")
	[ "$code" = 200 ]
	jqb -e --arg a "$mine" --arg b "$theirs" '[.data.items[].request_id] | index($a) and index($b)'
	jqb -e '[.data.items[].hostname] | unique | length >= 3'
	code=$(TOKEN=alice-token-0123456789 api GET "/v1/profiling/$theirs")
	[ "$code" = 403 ]
	[ "$(jqb -r .error.message)" = "Job access is forbidden" ]
	code=$(TOKEN=bob-token-0123456789ab api POST /v1/profiling \
		-H 'Content-Type: application/json' -d '{}')
	[ "$code" = 403 ]
	# three active jobs on one host at most (--max-jobs-per-target 3)
	TOKEN=alice-token-0123456789 new_job '{"type":"cpu","language":"c","mode":"oncpu","scope":"host","duration_seconds":30,"hostname":"f-silent"}' >/dev/null
	TOKEN=alice-token-0123456789 new_job '{"type":"cpu","language":"c","mode":"oncpu","scope":"host","duration_seconds":30,"hostname":"f-silent"}' >/dev/null
	code=$(TOKEN=alice-token-0123456789 api POST /v1/profiling -H 'Content-Type: application/json' \
		-d '{"type":"cpu","language":"c","mode":"oncpu","scope":"host","duration_seconds":30,"hostname":"f-silent"}')
	[ "$code" = 429 ]
	[ "$(jqb -r .error.code)" = quota_exceeded ]
	code=$(TOKEN=alice-token-0123456789 api POST /v1/profiling -H 'Content-Type: application/json' \
		-d '{"type":"cpu","language":"c","mode":"oncpu","scope":"host","duration_seconds":30,"hostname":"f-slow"}')
	[ "$code" = 201 ]
}
