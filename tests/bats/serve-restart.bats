#!/usr/bin/env bats
# Job records outlive cpa-serve: killed outright mid-job and started again
# on the same state directory, it still lists the finished job with its
# result, and marks the job it was running as lost, keeping the windows
# its capture wrote until then; the lost job's capture does not outlive
# the server either.
load helper
load serve_helper

setup() {
	serve_setup
}

teardown() {
	serve_stop
	kill_workloads
}

capture_of() {	# capture_of PID: a cpa-capture running with --pid=PID
	pgrep -f -- "cpa-capture .*--pid=$1\$" >/dev/null
}
no_capture_of() {	# no_capture_of PID: none runs any more
	if capture_of "$1"; then return 1; fi
}

@test "serve restart: the finished job keeps its result, the running one is marked operation_lost" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 40
	serve_start "$T/serve"
	done_id=$(new_job "{\"type\":\"cpu\",\"mode\":\"oncpu\",\"scope\":\"pid\",\"pid\":$WL_PID,\"duration_seconds\":2}")
	wait_job "$done_id" completed
	[ "$(api GET "/v1/profiling/$done_id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/before.folded"
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/before.folded"

	lost_id=$(new_job "{\"type\":\"cpu\",\"mode\":\"oncpu\",\"scope\":\"pid\",\"pid\":$WL_PID,\"duration_seconds\":600}")
	wait_for 20 job_attached "$lost_id"
	capture_of "$WL_PID"
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=""
	# the launcher follows its server, and stops the capture it ran
	wait_for 15 no_capture_of "$WL_PID"

	serve_start "$T/serve"
	[ "$(api GET /v1/profiling)" = 200 ]
	v=$(jqb '.jobs | length')
	[ "$v" = 2 ]
	[ "$(api GET "/v1/profiling/$done_id")" = 200 ]
	[ "$(jqb -r .status)" = completed ]
	[ "$(api GET "/v1/profiling/$done_id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/after.folded"
	cmp "$T/before.folded" "$T/after.folded"
	[ "$(BODY_FILE=$T/fg.svg api GET "/v1/profiling/$done_id/flamegraph")" = 200 ]
	xmllint --noout "$T/fg.svg"
	[ "$(api GET "/v1/profiling/$lost_id")" = 200 ]
	[ "$(jqb -r .status)" = failed ]
	[ "$(jqb -r .reason)" = operation_lost ]
	[ "$(jqb -r .message)" = "cpa-serve restarted while the job was running; the windows captured until then are kept" ]
	[ "$(api GET "/v1/profiling/$lost_id/raw?limit=100000")" = 200 ]
	body | jq -r '.lines[]' >"$T/lost.folded"
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/lost.folded"
	# the lost job no longer counts against the quota
	again=$(new_job "{\"type\":\"cpu\",\"mode\":\"oncpu\",\"scope\":\"pid\",\"pid\":$WL_PID,\"duration_seconds\":1}")
	wait_job "$again" completed
}

@test "serve restart: a record that does not read back is skipped with a warning, the others load" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 20
	serve_start "$T/serve"
	id=$(new_job "{\"type\":\"cpu\",\"mode\":\"oncpu\",\"scope\":\"pid\",\"pid\":$WL_PID,\"duration_seconds\":1}")
	wait_job "$id" completed
	serve_stop
	mkdir "$T/serve/state/jobs/00000000000000ff"
	echo '{"id":"00000000000000ff","type":"cpu"' >"$T/serve/state/jobs/00000000000000ff/job.json"
	serve_start "$T/serve"
	grep -q "00000000000000ff/job.json: not a job record; job 00000000000000ff skipped" "$T/serve/serve.log"
	[ "$(api GET /v1/profiling)" = 200 ]
	v=$(jqb -r '[.jobs[].id] | join(",")')
	[ "$v" = "$id" ]
}
