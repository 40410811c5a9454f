#!/usr/bin/env bats
# HUATUO's own document (the Continuous Profiling page, shared seed 001):
# every request of its Quick Start and Profiling API sections, as it
# writes them, against a real cpa-serve running real captures, with
# API_BASE and API_TOKEN set to this server's (the document sets them to
# its own); a client written from the document alone, run unchanged;
# and the README's `cpa serve` tour.
load helper
load serve_helper

F=$BATS_FILE_TMPDIR

setup_file() {
	part_built libmicrohttpd || return 0
	require_bpf
	require_serve_tools
	start_workload "$F/wl.out" "$WL/chain_fp" --seconds 120
	echo "$WL_BG_PIDS" >"$F/bg.pids"
	serve_start "$F/serve" --max-jobs 8 --max-jobs-per-target 3
}

teardown_file() {
	serve_stop
	kill_pids_in "$F/bg.pids"
}

setup() {
	serve_setup
	API_BASE=$SERVE_URL
	API_TOKEN=$TOKEN
	cd "$T"
}

teardown() {
	serve_back
}

@test "seed: 2. Verify Services: /version's .data.name" {
	run -0 bash -c "set -o pipefail; curl -s $API_BASE/version | jq .data.name"
	[ "$output" = '"cpa-serve"' ]
}

@test "seed: 3. the quickstart job, then every Profiling API request in the document's order" {
	# Quick Start, 3. Create a Host CPU Profiling Job (verbatim)
	# Use the actual hostname of the node
	HOSTNAME=$(hostname)

	JOB_ID=$(curl -s -X POST \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  -H "Content-Type: application/json" \
	  -d "{
	    \"type\": \"cpu\",
	    \"language\": \"c\",
	    \"mode\": \"oncpu\",
	    \"scope\": \"host\",
	    \"duration_seconds\": 30,
	    \"hostname\": \"${HOSTNAME}\"
	  }" \
	  "${API_BASE}/v1/profiling" | jq -r .data.request_id)

	echo "Job ID: $JOB_ID"
	[[ "$JOB_ID" =~ ^id-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]]

	# 2. Query Profiling Capabilities
	curl -sS \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  "${API_BASE}/v1/profiling/capabilities" >"$T/caps"
	v=$(jq '.data.items | length' "$T/caps")
	[ "$v" = 9 ]
	jq -e '.data.items[] | select(.type == "cpu" and .language == "java") | .modes == ["oncpu"]' "$T/caps"

	# 3. Create a Profiling Job: the document's two, as written. They
	# name node-01, which is not this host: 400, and a Job for node-01
	# is the fleet apiserver's
	curl -sS -i \
	  -X POST \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  -H "Content-Type: application/json" \
	  -d '{
	    "type": "cpu",
	    "language": "go",
	    "mode": "oncpu",
	    "scope": "host",
	    "duration_seconds": 60,
	    "hostname": "node-01"
	  }' \
	  "${API_BASE}/v1/profiling" >"$T/go.http"
	sed -n 1p "$T/go.http" | grep ' 400 ' >/dev/null
	v=$(tail -n 1 "$T/go.http" | jq -r .error.code)
	[ "$v" = invalid_request ]
	curl -sS -i \
	  -X POST \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  -H "Content-Type: application/json" \
	  -d '{
	    "type": "memory",
	    "language": "java",
	    "mode": "object_usage",
	    "scope": "container",
	    "duration_seconds": 60,
	    "container_id": "9f4c2f1a8b7d",
	    "hostname": "node-01"
	  }' \
	  "${API_BASE}/v1/profiling" >"$T/java.http"
	sed -n 1p "$T/java.http" | grep ' 400 ' >/dev/null
	# ... and with this host's name: 201, Location, the documented body
	sed "s/\"hostname\": \"node-01\"/\"hostname\": \"$HOSTNAME\"/" >"$T/go.json" <<'JSON'
{
    "type": "cpu",
    "language": "go",
    "mode": "oncpu",
    "scope": "host",
    "duration_seconds": 60,
    "hostname": "node-01"
}
JSON
	curl -sS -i \
	  -X POST \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  -H "Content-Type: application/json" \
	  -d @"$T/go.json" \
	  "${API_BASE}/v1/profiling" >"$T/go.http"
	sed -n 1p "$T/go.http" | grep '^HTTP/1.1 201 Created' >/dev/null
	tail -n 1 "$T/go.http" >"$T/go.body"
	GO_ID=$(jq -r .data.request_id "$T/go.body")
	grep -qi "^Location: /v1/profiling/$GO_ID"$'\r'"\?$" "$T/go.http"
	v=$(jq -r '.data | keys_unsorted | join(",")' "$T/go.body")
	[ "$v" = request_id,hostname,duration_seconds,scope,type,language,mode,status,created_at,updated_at ]
	v=$(jq -c '.data | [.duration_seconds, .scope, .type, .language, .mode, .status]' "$T/go.body")
	[ "$v" = '[60,"host","cpu","go","oncpu","pending"]' ]
	[ "$(jq -r '.data.created_at == .data.updated_at' "$T/go.body")" = true ]
	[ "$(jq -r .data.hostname "$T/go.body")" = "$HOSTNAME" ]
	# (stopped now: its 60 s would outlast the test on a slow host)
	api POST "/v1/profiling/$GO_ID/stop" >/dev/null
	sed "s/\"hostname\": \"node-01\"/\"hostname\": \"$HOSTNAME\"/" >"$T/java.json" <<'JSON'
{
    "type": "memory",
    "language": "java",
    "mode": "object_usage",
    "scope": "container",
    "duration_seconds": 60,
    "container_id": "9f4c2f1a8b7d",
    "hostname": "node-01"
}
JSON
	curl -sS -i -X POST -H "Authorization: Bearer ${API_TOKEN}" \
	  -H "Content-Type: application/json" -d @"$T/java.json" \
	  "${API_BASE}/v1/profiling" >"$T/java.http"
	sed -n 1p "$T/java.http" | grep ' 201 ' >/dev/null
	JAVA_ID=$(tail -n 1 "$T/java.http" | jq -r .data.request_id)
	v=$(tail -n 1 "$T/java.http" | jq -r .data.container_id)
	[ "$v" = 9f4c2f1a8b7d ]

	# 4. List Profiling Jobs
	curl -sS -G \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  --data-urlencode "limit=20" \
	  --data-urlencode "offset=0" \
	  "${API_BASE}/v1/profiling" >"$T/list"
	v=$(jq -c '.data | [.limit, .offset, .has_more]' "$T/list")
	[ "$v" = '[20,0,false]' ]
	# created_at descending: the Java job, the Go job, the quickstart
	v=$(jq -r '[.data.items[].request_id] | join(" ")' "$T/list")
	[ "$v" = "$JAVA_ID $GO_ID $JOB_ID" ]
	v=$(jq -r '[.data.items[] | has("result_url")] | any' "$T/list")
	[ "$v" = false ]

	# 5. Get a Profiling Job
	curl -sS \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  "${API_BASE}/v1/profiling/${JOB_ID}" >"$T/get"
	[ "$(jq -r .data.request_id "$T/get")" = "$JOB_ID" ]
	[[ "$(jq -r .data.status "$T/get")" =~ ^(pending|running)$ ]]
	v=$(jq -r '.data | has("agent_task_id") or has("tracer_args") or has("id") or has("failure")' "$T/get")
	[ "$v" = false ]
	# the Java job: no such container here, so it fails to start
	wait_for 30 job_ended "$JAVA_ID"
	v=$(job_record "$JAVA_ID" | jq -r .data.terminal.reason)
	[ "$v" = execution_start_failed ]

	# 6. Get Raw Profiling Data, while it runs: not ready
	curl -sS \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  -o profile-raw.json \
	  "${API_BASE}/v1/profiling/${JOB_ID}/raw?limit=100&offset=0"
	[ "$(jq -r .error.code profile-raw.json)" = result_not_ready ]

	# 7. Stop a Profiling Job: 200, the snapshot
	curl -sS \
	  -X POST \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  "${API_BASE}/v1/profiling/${JOB_ID}/stop" >"$T/stop"
	[ "$(jq -r .data.status "$T/stop")" = stopping ]
	wait_job "$JOB_ID" stopped
	curl -sS \
	  -X POST \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  "${API_BASE}/v1/profiling/${JOB_ID}/stop" >"$T/stop"
	[ "$(jq -c .error "$T/stop")" = '{"code":"job_conflict","message":"Job is already terminal"}' ]
	curl -sS \
	  -H "Authorization: Bearer ${API_TOKEN}" \
	  -o profile-raw.json \
	  "${API_BASE}/v1/profiling/${JOB_ID}/raw?limit=100&offset=0"
	[ "$(jq -c .error profile-raw.json)" = '{"code":"result_unavailable","message":"Job state does not provide a complete Profiling result"}' ]
	wait_job "$GO_ID" stopped
}

@test "seed: a client written from the document alone passes unchanged" {
	API_BASE=$API_BASE API_TOKEN=$API_TOKEN run -0 "$CPA_SRCDIR/tests/data/huatuo-client.sh"
	echo "$output"
	[[ "$output" =~ "Job ID: id-" ]]
	[[ "$output" =~ "outcome: completed" ]]
	[[ "$output" =~ "windows: "[1-9] ]]
	[[ "$output" =~ "stop: stopping" ]]
	[[ "$output" =~ "stopped outcome: stopped" ]]
	[[ "$output" =~ "stop again: job_conflict" ]]
	[[ "$output" =~ "raw of stopped: result_unavailable" ]]
	jq -e '.data.items[0].profile.sample | length > 0' profile-raw.json
}

@test "seed: the README's cpa serve tour: HUATUO's quickstart request works" {
	awk '/^    sudo cpa serve/ { on = 1 } on && /^    / { print substr($0, 5) } on && /^$/ && n++ > 0 { exit }' \
		"$CPA_SRCDIR/README.md" >"$T/tour.sh"
	grep -q 'jq -r .data.request_id' "$T/tour.sh"
	grep -qF '\"duration_seconds\": 30' "$T/tour.sh"
	serve_aside
	mkdir -p "$T/cpa"
	(umask 077; head -c 24 /dev/urandom | base64 >"$T/cpa/token")
	# the tour's server as cpa serve starts it, on a free port; the
	# tour's requests as written, to that server
	cpa serve --listen 127.0.0.1:0 --token-file "$T/cpa/token" \
		--state-dir "$T/cpa/state" 2>"$T/cpa/log" 3>&- &
	SERVE_PID=$!
	wait_for 20 grep -q 'serving on' "$T/cpa/log"
	port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$T/cpa/log")
	sed -e '/^sudo cpa serve/d' \
	    -e "s|^API_BASE=.*|API_BASE=http://127.0.0.1:$port|" \
	    -e "s|^API_TOKEN=.*|API_TOKEN=\$(cat $T/cpa/token)|" "$T/tour.sh" >"$T/tour.run"
	cat "$T/tour.run"
	run bash -euo pipefail "$T/tour.run"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ "Job ID: id-" ]]
	TOKEN=$(cat "$T/cpa/token") SERVE_URL=http://127.0.0.1:$port
	id=${output##*Job ID: }
	[ "$(api GET "/v1/profiling/$id")" = 200 ]
	[ "$(jqb -r .data.duration_seconds)" = 30 ]
	[ "$(api POST "/v1/profiling/$id/stop")" = 200 ]
}
