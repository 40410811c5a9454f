#!/usr/bin/env bats
# cpa-serve --fleet, HUATUO's apiserver: jobs created on it run on the
# nodes they name (real cpa-serve nodes on loopback, each with a host
# name of its own, publishing their windows to a ClickHouse server of the
# suite's own), through each node's /v1/operations. Nodes that misbehave
# (tests/tools/fake-node: garbage, silence, a byte a second, forgotten
# or regressing Operations, refusals, wrong codes) get the contract's
# outcome each, in one log line, while the real nodes' jobs go on. The
# apiserver is restarted while jobs are active. Pyroscope's query API,
# as Grafana's data source calls it (tests/tools/pyroscope-query, the
# messages of tests/data/pyroscope.proto compiled by protoc), over three
# hosts' continuous history and the jobs' windows. One run serves every
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
	# three hosts' continuous history, pushed as cpa monitor --push does
	# (synthetic stores: gen-stream's whole hosts, on- and off-CPU)
	syn_hosts
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
	wait_for 120 job_has_status "$(cat "$F/job-stop")" running
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
	SERVE_URL=http://127.0.0.1:$(node_port api/serve)
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
	n=$(ls "$F/node-b/jobs/$id/windows/"*.json | wc -l)
	jqb -e --argjson n "$n" '.data.has_more == ($n > 1) and .data.limit == 1'
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
	local m id want rec n
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
	run jqb -r '[.data.items[].request_id] | join(" ")'
	[ "$output" = "$mine" ]
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

@test "Pyroscope: a merged flame graph of three hosts is the sum of their local queries, at both paths" {
	require_protobuf
	local t0 t1 i
	read -r t0 t1 <"$F/syn.range"
	pyq merge process_cpu:samples:count:cpu:nanoseconds '{hostname="syn-*"}' \
		"$((t0 * 1000))" "$((t1 * 1000))" >"$T/fleet"
	for i in 1 2 3; do
		cpa-query --dir "$F/syn-$i" --kind oncpu --from "@$t0" --to "@$t1" >"$T/l$i"
		[ -s "$T/l$i" ]
	done
	sum_folded "$T/l1" "$T/l2" "$T/l3" >"$T/local"
	grep -v '^# ' "$T/fleet" | LC_ALL=C sort >"$T/stacks"
	same_lines "$T/stacks" "$T/local"
	[ "$(sed -n 's/^# total //p' "$T/fleet")" = "$(awk '{ s += $NF } END { print s }' "$T/local")" ]
	# one host, off-CPU, at HUATUO's path
	QUERIER_PATH=/v1/profiling/flamegraph/querier.v1.QuerierService \
		pyq merge off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds '{hostname="syn-2"}' \
		"$((t0 * 1000))" "$((t1 * 1000))" | grep -v '^# ' | LC_ALL=C sort >"$T/off"
	cpa-query --dir "$F/syn-2" --kind offcpu-blocked,offcpu-preempted,offcpu-yielded,offcpu-delay \
		--from "@$t0" --to "@$t1" | LC_ALL=C sort >"$T/off.local"
	[ -s "$T/off.local" ]
	same_lines "$T/off" "$T/off.local"
}

@test "Pyroscope: a job's windows by id; its CPU nanoseconds are its samples times the period" {
	require_protobuf
	local id now
	id=$(cat "$F/job-b")
	wait_job "$id" completed 60
	now=$(date +%s)
	pyq merge process_cpu:samples:count:cpu:nanoseconds "{id=\"$id\"}" \
		"$(( (now - 1800) * 1000 ))" "$(( now * 1000 ))" | grep -v '^# ' | LC_ALL=C sort >"$T/fleet"
	raw_of "$id" | sed 's/^/chain_fp;/' | LC_ALL=C sort >"$T/raw"
	[ -s "$T/raw" ]
	same_lines "$T/fleet" "$T/raw"
	pyq merge process_cpu:cpu:nanoseconds:cpu:nanoseconds "{id=\"$id\"}" \
		"$(( (now - 1800) * 1000 ))" "$(( now * 1000 ))" | grep -v '^# ' | LC_ALL=C sort >"$T/ns"
	awk '{ n = $NF; $NF = n * 20408163; print }' "$T/raw" | LC_ALL=C sort >"$T/raw.ns"
	same_lines "$T/ns" "$T/raw.ns"
	# a host's continuous history holds none of it; without a job, no period
	run pyq merge process_cpu:cpu:nanoseconds:cpu:nanoseconds '{hostname="node-b"}' \
		"$(( (now - 1800) * 1000 ))" "$(( now * 1000 ))"
	[ "$status" -eq 1 ]
	[[ "$output" == "HTTP 400 "*"sampling frequency"* ]]
	run pyq merge process_cpu:samples:count:cpu:nanoseconds '{hostname="node-b"}' \
		"$(( (now - 1800) * 1000 ))" "$(( now * 1000 ))"
	[ "$output" = 'HTTP 404 {"error":{"code":"not_found","message":"profiles not found"}}' ]
}

@test "Pyroscope: ProfileTypes, LabelNames and LabelValues" {
	require_protobuf
	local t0 t1 now
	read -r t0 t1 <"$F/syn.range"
	now=$(date +%s)
	pyq types "$((t0 * 1000))" "$(( now * 1000 ))" >"$T/types"
	grep -qx 'process_cpu:samples:count:cpu:nanoseconds process_cpu samples count cpu nanoseconds' "$T/types"
	grep -qx 'off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds off_cpu off_cpu nanoseconds off_cpu nanoseconds' "$T/types"
	grep -qx 'process_cpu:cpu:nanoseconds:cpu:nanoseconds process_cpu cpu nanoseconds cpu nanoseconds' "$T/types"
	[ "$(wc -l <"$T/types")" = 3 ]
	# the synthetic hours alone: no job there
	pyq types "$((t0 * 1000))" "$((t1 * 1000))" >"$T/types2"
	[ "$(wc -l <"$T/types2")" = 2 ]
	run pyq names
	[ "$output" = "$(printf 'region\nhostname\ncontainer_id\ncontainer_hostname\ncontainer_host_namespace')" ]
	run pyq values hostname '{__profile_type__="process_cpu:samples:count:cpu:nanoseconds"}' \
		"$((t0 * 1000))" "$(( now * 1000 ))"
	[ "$output" = "$(printf 'node-a\nnode-b\nsyn-1\nsyn-2\nsyn-3')" ]
	run pyq values hostname '{hostname="syn-1"}' "$((t0 * 1000))" "$(( now * 1000 ))"
	[ "$status" -eq 1 ]
	[[ "$output" == "HTTP 400 "*"__profile_type__"* ]]
}

@test "Pyroscope: bad bodies and queries get the contract's codes, each in one log line" {
	require_protobuf
	local good
	good='pb.SelectMergeStacktracesRequest(profile_typeID="process_cpu:samples:count:cpu:nanoseconds", label_selector="{hostname=\"syn-1\"}", start=1, end=2).SerializeToString()'
	pb_body "$T/cut" "$good[:-3]"
	code=$(querier_post SelectMergeStacktraces "$T/cut")
	[ "$code" = 400 ]
	[ "$(jq -c . "$T/body")" = '{"error":{"code":"invalid_request","message":"invalid protobuf request"}}' ]
	# nested ten thousand deep: a GoPGO whose bool is a message, and so on
	pb_body "$T/deep" 'ld(7, __import__("functools").reduce(lambda b, _: ld(2, b), range(10000), b""))'
	code=$(querier_post SelectMergeStacktraces "$T/deep")
	[ "$code" = 400 ]
	[ "$(jq -r .error.message "$T/body")" = "invalid protobuf request" ]
	pb_body "$T/group" 'b"\x0b\x0c"'
	code=$(querier_post ProfileTypes "$T/group")
	[ "$code" = 400 ]
	[ "$(grep -c 'invalid protobuf request' "$F/api/serve.log")" = 3 ]
	# the query: five parts, = matchers of known labels, a host, a range
	for sel in '{hostname!="syn-1"}' '{hostname=~"syn.*"}' '{pod="x"}' '{region="r"}' '{hostname="a", hostname="b"}'; do
		pb_body "$T/q" "pb.SelectMergeStacktracesRequest(profile_typeID='process_cpu:samples:count:cpu:nanoseconds', label_selector='$sel', start=1, end=2).SerializeToString()"
		code=$(querier_post SelectMergeStacktraces "$T/q")
		[ "$code" = 400 ]
		[ "$(jq -r .error.code "$T/body")" = invalid_request ]
	done
	pb_body "$T/q" 'pb.SelectMergeStacktracesRequest(profile_typeID="process_cpu:samples:count:cpu", label_selector="{hostname=\"syn-1\"}", start=1, end=2).SerializeToString()'
	code=$(querier_post SelectMergeStacktraces "$T/q")
	[ "$code" = 400 ]
	pb_body "$T/q" 'pb.SelectMergeStacktracesRequest(profile_typeID="process_cpu:samples:count:cpu:nanoseconds", label_selector="{hostname=\"syn-1\"}", start=5, end=2).SerializeToString()'
	code=$(querier_post SelectMergeStacktraces "$T/q")
	[ "$code" = 400 ]
	pb_body "$T/q" 'pb.SelectMergeStacktracesRequest(profile_typeID="a:b:c:d:e", label_selector="{hostname=\"syn-1\"}", start=1, end=2).SerializeToString()'
	code=$(querier_post SelectMergeStacktraces "$T/q")
	[ "$code" = 400 ]
	pb_body "$T/q" 'pb.SelectMergeStacktracesRequest(profile_typeID="process_cpu:samples:count:cpu:nanoseconds", label_selector="{}", start=1, end=2).SerializeToString()'
	code=$(querier_post SelectMergeStacktraces "$T/q")
	[ "$code" = 400 ]
	# who may ask, and in what type
	code=$(querier_post LabelNames "$T/q" alice-token-0123456789)
	[ "$code" = 403 ]
	code=$(curl -sS -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN" \
		-H 'Content-Type: application/json' -d '{}' "$SERVE_URL/querier.v1.QuerierService/LabelNames")
	[ "$code" = 415 ]
	code=$(querier_post SelectSeries "$T/q")
	[ "$code" = 404 ]
}

@test "Pyroscope: past the window limit no flame graph; ClickHouse away is 503, never a partial answer" {
	require_protobuf
	local t0 t1
	read -r t0 t1 <"$F/syn.range"
	serve_stop
	api_start --users "$F/users" --max-query-windows 20
	run pyq merge process_cpu:samples:count:cpu:nanoseconds '{hostname="syn-1"}' \
		"$((t0 * 1000))" "$((t1 * 1000))"
	[ "$status" -eq 0 ]
	run pyq merge process_cpu:samples:count:cpu:nanoseconds '{hostname="syn-*"}' \
		"$((t0 * 1000))" "$((t1 * 1000))"
	[ "$output" = 'HTTP 400 {"error":{"code":"invalid_request","message":"matching profiles exceed 20 records; narrow the time range or filters"}}' ]
	ch_stop "$CH/s1"
	run pyq merge process_cpu:samples:count:cpu:nanoseconds '{hostname="syn-1"}' \
		"$((t0 * 1000))" "$((t1 * 1000))"
	[[ "$output" == 'HTTP 503 {"error":{"code":"service_unavailable",'* ]]
	run pyq types "$((t0 * 1000))" "$((t1 * 1000))"
	[[ "$output" == 'HTTP 503 '* ]]
	code=$(api GET "/v1/profiling/$(cat "$F/job-b")/raw")
	[ "$code" = 503 ]
}
