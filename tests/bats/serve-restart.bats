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

@test "serve restart: the finished job keeps its published windows, the running one fails as operation_lost with its samples kept" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 40
	serve_start "$T/serve"
	done_id=$(new_job "$(job_body cpu c oncpu pid 2 ",\"pid\":$WL_PID")")
	wait_job "$done_id" completed
	raw_folded "$done_id" | sort >"$T/before.folded"
	grep -qE '^(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/before.folded"

	lost_id=$(new_job "$(job_body cpu c oncpu pid 600 ",\"pid\":$WL_PID")")
	wait_for 60 job_attached "$lost_id"
	capture_of "$WL_PID"
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=""
	# the launcher follows its server, and stops the capture it ran
	wait_for 15 no_capture_of "$WL_PID"

	serve_start "$T/serve"
	[ "$(api GET /v1/profiling)" = 200 ]
	v=$(jqb '.data.items | length')
	[ "$v" = 2 ]
	[ "$(api GET "/v1/profiling/$done_id")" = 200 ]
	[ "$(jqb -r .data.terminal.outcome)" = completed ]
	raw_folded "$done_id" | sort >"$T/after.folded"
	cmp "$T/before.folded" "$T/after.folded"
	[ "$(BODY_FILE=$T/fg.svg api GET "/v1/profiling/$done_id/flamegraph")" = 200 ]
	xmllint --noout "$T/fg.svg"
	[ "$(api GET "/v1/profiling/$lost_id")" = 200 ]
	[ "$(jqb -r .data.status)" = terminal ]
	[ "$(jqb -r .data.terminal.reason)" = operation_lost ]
	[ "$(jqb -r .data.terminal.message)" = "cpa-serve restarted while the job was running; the windows captured until then are kept" ]
	[ "$(api GET "/v1/profiling/$lost_id/raw")" = 409 ]
	[ "$(BODY_FILE=$T/lost.folded api GET "/v1/profiling/$lost_id/folded")" = 200 ]
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/lost.folded"
	# the lost job no longer counts against the quota
	again=$(new_job "$(job_body cpu c oncpu pid 1 ",\"pid\":$WL_PID")")
	wait_job "$again" completed
}

@test "serve restart: a record that does not read back is skipped with a warning, the others load" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 20
	serve_start "$T/serve"
	id=$(new_job "$(job_body cpu c oncpu pid 1 ",\"pid\":$WL_PID")")
	wait_job "$id" completed
	serve_stop
	mkdir "$T/serve/state/jobs/id-broken"
	echo '{"request_id":"id-broken","type":"cpu"' >"$T/serve/state/jobs/id-broken/job.json"
	serve_start "$T/serve"
	grep -q "id-broken/job.json: not a job record; job id-broken skipped" "$T/serve/serve.log"
	[ "$(api GET /v1/profiling)" = 200 ]
	v=$(jqb -r '[.data.items[].request_id] | join(",")')
	[ "$v" = "$id" ]
}
