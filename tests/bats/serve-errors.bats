#!/usr/bin/env bats
# Every error code of the contract, each from a request that earns it,
# with HUATUO's status and envelope; users and permissions from a users
# file; the node Operation API's codes and transitions; and bad input of
# every kind answered with its code, never a crash or a hang. One server
# for the file (--max-jobs 3, one job per target), plus a finished job.
load helper
load serve_helper

F=$BATS_FILE_TMPDIR

setup_file() {
	part_built libmicrohttpd || return 0
	require_bpf
	require_serve_tools
	(umask 077; cat >"$F/users.toml" <<'TOML'
# as HUATUO's apiserver configures them
[HTTPServer.Auth]
    BearerToken = "node-token-0123456789abcdef"

[Auth]
    [[Auth.Users]]
        ID = "alice"
        BearerToken = "alice-token-0123456789"
        Permissions = ["/v1/profiling", "GET /v1/profiling/**"]
    [[Auth.Users]]
        ID = "bob"
        BearerToken = "bob-token-0123456789ab"
TOML
	)
	start_workload "$F/wl.out" "$WL/sleeper" --sleep 20 --count 1000
	echo "$WL_BG_PIDS" >"$F/bg.pids"
	echo "$WL_PID" >"$F/wl.pid"
	serve_start "$F/serve" --max-jobs 3 --max-jobs-per-target 1 \
		--users "$F/users.toml" --max-raw-page 100
	BATS_TEST_TMPDIR=$F new_job "$(job_body cpu c oncpu host 1)" >"$F/done.id"
}

teardown_file() {
	serve_stop
	kill_pids_in "$F/bg.pids"
}

setup() {
	serve_setup
	WL_PID=$(cat "$F/wl.pid")
	DONE=$(cat "$F/done.id")
}

teardown() {
	serve_back
	kill_workloads
}

# as USER TOKEN METHOD PATH [CURL ARGS]: api with another user's token
as() {
	local tok=$1; shift
	TOKEN=$tok api "$@"
}

# code_is STATUS CODE: the last answer's status (as given) and its
# envelope: exactly {"error":{"code","message"}}, the code as given, the
# message not empty (in $MESSAGE for the caller)
code_is() {
	local out shape code
	out=$(jqb -r '[.error.code, (keys == ["error"] and (.error | keys == ["code","message"]) and (.error.message | length > 0)), .error.message] | @tsv')
	IFS=$'\t' read -r code shape MESSAGE <<<"$out"
	echo "$1 $(<"${BODY_FILE:-$BATS_TEST_TMPDIR/body}")"
	[ "$STATUS" = "$1" ]
	[ "$code" = "$2" ]
	[ "$shape" = true ]
}

@test "errors: unauthenticated: no token, a wrong one, another scheme; 401 before anything else; public paths need none" {
	STATUS=$(curl -sS -o "$T/body" -w '%{http_code}' "$SERVE_URL/v1/profiling")
	code_is 401 unauthenticated
	[ "$(jqb -r .error.message)" = "missing bearer token" ]
	STATUS=$(curl -sS -o "$T/body" -w '%{http_code}' -H "Authorization: Bearer ${TOKEN}x" "$SERVE_URL/v1/profiling")
	code_is 401 unauthenticated
	[ "$(jqb -r .error.message)" = "invalid bearer token" ]
	STATUS=$(curl -sS -o "$T/body" -w '%{http_code}' -u "user:$TOKEN" "$SERVE_URL/v1/profiling")
	code_is 401 unauthenticated
	# the scheme in any case, spaces around the token trimmed
	[ "$(curl -sS -o /dev/null -w '%{http_code}' -H "authorization: bearer   $TOKEN  " "$SERVE_URL/v1/profiling")" = 200 ]
	# a bad body, a bad route, a bad method: 401 first
	STATUS=$(curl -sS -o "$T/body" -w '%{http_code}' -d '{' "$SERVE_URL/v1/profiling")
	code_is 401 unauthenticated
	STATUS=$(curl -sS -o "$T/body" -w '%{http_code}' "$SERVE_URL/v2/nothing")
	code_is 401 unauthenticated
	curl -sS -D "$T/h" -o /dev/null "$SERVE_URL/v1/history"
	grep -qi '^WWW-Authenticate: Bearer' "$T/h"
	grep -qi '^Connection: close' "$T/h"
	# the node's token is the node API's, not the profiling API's
	STATUS=$(as node-token-0123456789abcdef GET /v1/profiling)
	code_is 401 unauthenticated
	STATUS=$(as alice-token-0123456789 GET /v1/operations/x)
	code_is 401 unauthenticated
	for p in /healthz /readyz; do
		[ "$(curl -sS -o /dev/null -w '%{http_code}' "$SERVE_URL$p")" = 204 ]
	done
	[ "$(curl -sS -o "$T/v" -w '%{http_code}' "$SERVE_URL/version")" = 200 ]
	[ "$(jq -r .data.name "$T/v")" = cpa-serve ]
	[ "$(curl -sS -o "$T/m" -w '%{http_code}' "$SERVE_URL/metrics")" = 200 ]
	grep -q '^cpa_serve_jobs_active [0-9]' "$T/m"
	command -v promtool >/dev/null || skip_missing "no promtool"
	promtool check metrics <"$T/m"
	[ "$(curl -sS -o "$T/o" -w '%{http_code}' "$SERVE_URL/openapi.json")" = 200 ]
	jq -e '.paths["/v1/profiling/{request_id}/raw"].get' "$T/o"
}

@test "errors: permission_denied: a user without the permission, another user's job, an admin-only path" {
	STATUS=$(as bob-token-0123456789ab GET /v1/profiling)
	code_is 403 permission_denied
	[[ "$(jqb -r .error.message)" =~ 'user "bob" does not have permission to access GET /v1/profiling' ]]
	# alice: /v1/profiling (any method) and GET below it
	STATUS=$(as alice-token-0123456789 GET /v1/profiling)
	[ "$STATUS" = 200 ]
	v=$(jqb -r --arg id "$DONE" '[.data.items[] | select(.request_id == $id)] | length')
	[ "$v" = 0 ]	# only her own
	STATUS=$(as alice-token-0123456789 GET /v1/profiling/capabilities)
	[ "$STATUS" = 200 ]
	STATUS=$(as alice-token-0123456789 GET "/v1/profiling/$DONE")
	code_is 403 permission_denied
	[ "$(jqb -r .error.message)" = "Job access is forbidden" ]
	STATUS=$(as alice-token-0123456789 GET "/v1/profiling/$DONE/raw")
	code_is 403 permission_denied
	# GET /v1/profiling/** does not give POST .../stop
	STATUS=$(as alice-token-0123456789 POST "/v1/profiling/$DONE/stop")
	code_is 403 permission_denied
	STATUS=$(as alice-token-0123456789 POST /v1/profiling/flamegraph/querier.v1.QuerierService/LabelNames -H 'Content-Type: application/proto' -d x)
	code_is 403 permission_denied
	[ "$(jqb -r .error.message)" = "administrator permission required" ]
	# her own job she sees; the admin sees it too
	STATUS=$(as alice-token-0123456789 POST /v1/profiling -H 'Content-Type: application/json' \
		-d "$(job_body cpu c oncpu pid 1 ',"pid":1')")
	[ "$STATUS" = 201 ]
	mine=$(jqb -r .data.request_id)
	STATUS=$(as alice-token-0123456789 GET "/v1/profiling/$mine")
	[ "$STATUS" = 200 ]
	[ "$(api GET /v1/profiling)" = 200 ]
	jqb -e --arg id "$mine" '[.data.items[] | select(.request_id == $id)] | length == 1'
	wait_for 30 job_ended "$mine"
}

@test "errors: invalid_request for each kind of bad body, in HUATUO's order" {
	bad() {	# bad BODY MESSAGE-PATTERN
		STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json' -d "$1")
		code_is 400 invalid_request
		[[ "$MESSAGE" =~ $2 ]]
	}
	[ "$(api GET '/v1/profiling?limit=1000')" = 200 ]
	before=$(jqb '.data.items | length')
	h=$(hostname)
	ok="\"type\":\"cpu\",\"language\":\"c\",\"mode\":\"oncpu\",\"duration_seconds\":5,\"hostname\":\"$h\""
	bad '' '^byte 0: the JSON body ends early'
	bad '{"type":"cpu",' 'ends early'
	bad "{$ok,\"scope\":\"host\"} x" 'data after the JSON object|bad JSON: unexpected character'
	bad "{'type':'cpu'}" '^byte [0-9]+: bad JSON'
	bad '{"type":"cpu",}' 'bad JSON'
	bad '[1]' 'expected a JSON object'
	bad '{"a":{"b":{"c":{"d":{"e":1}}}}}' 'bad JSON'
	bad "{$ok,\"scope\":\"host\",\"colour\":\"red\"}" "unknown field 'colour'"
	bad "{\"language\":\"c\",\"mode\":\"oncpu\",\"scope\":\"host\",\"duration_seconds\":5,\"hostname\":\"$h\"}" '^type: missing'
	bad "{\"type\":\"cpu\",\"language\":\"c\",\"mode\":\"oncpu\",\"scope\":\"host\",\"duration_seconds\":5}" '^hostname: missing'
	bad "{\"type\":\"cpu\",\"language\":\"c\",\"mode\":\"oncpu\",\"scope\":\"host\",\"hostname\":\"$h\"}" '^duration_seconds: missing'
	bad "{\"type\":\"gpu\",\"language\":\"c\",\"mode\":\"oncpu\",\"scope\":\"host\",\"duration_seconds\":5,\"hostname\":\"$h\"}" '^type: "gpu" is not one of the allowed values'
	bad "{$ok,\"scope\":\"rack\"}" '^scope: "rack" is not one of'
	bad "{$ok,\"scope\":\"host\",\"type\":7}" '^type: expected a string'
	bad "{$ok,\"scope\":\"host\",\"duration_seconds\":\"5\"}" '^duration_seconds: expected an integer'
	bad "{$ok,\"scope\":\"host\",\"duration_seconds\":1.5}" '^duration_seconds: expected an integer'
	bad "{$ok,\"scope\":\"host\",\"duration_seconds\":0}" '^duration_seconds: must be at least 1'
	bad "{$ok,\"scope\":\"host\",\"duration_seconds\":99999999999999999999}" 'outside the supported range'
	bad "{$ok,\"scope\":\"host\",\"duration_seconds\":9223372036}" '^duration_seconds is outside the supported range'
	bad "{$ok,\"scope\":\"host\",\"hostname\":\"\"}" '^hostname: must not be empty'
	bad "{$ok,\"scope\":\"host\",\"hostname\":\" $h\"}" '^hostname must be a non-empty trimmed value'
	bad "{$ok,\"scope\":\"host\",\"hostname\":\"node-01\"}" '^hostname "node-01" is not this host'
	bad "{$ok,\"scope\":\"host\",\"container_id\":\"abc\"}" '^container id must be empty for host scope'
	bad "{$ok,\"scope\":\"container\"}" '^container id is required for container scope'
	bad "{$ok,\"scope\":\"container\",\"container_id\":\"../etc\"}" 'hex digits'
	bad "{\"type\":\"memory\",\"language\":\"python\",\"mode\":\"oncpu\",\"scope\":\"host\",\"duration_seconds\":5,\"hostname\":\"$h\"}" '^profiling type "memory" is not supported for language "python"'
	bad "{\"type\":\"cpu\",\"language\":\"java\",\"mode\":\"offcpu\",\"scope\":\"host\",\"duration_seconds\":5,\"hostname\":\"$h\"}" '^profiling mode "offcpu" is not supported for type "cpu" and language "java"'
	bad "{$ok,\"scope\":\"host\",\"binary_match_path\":\"/bin/x\"}" '^binary match path is not supported for type "cpu" and language "c"'
	bad "{$ok,\"scope\":\"host\",\"mode\":\"heap\"}" '^mode: "heap" is not one of'
	bad "{$ok,\"scope\":\"host\",\"freq\":0}" '^freq: must be at least 1'
	bad "{$ok,\"scope\":\"host\",\"pid\":1}" '^pid must be empty for host scope'
	printf '{"type":"cpu\0"}' >"$T/nul"
	STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json' --data-binary @"$T/nul")
	code_is 400 invalid_request
	[[ "$(jqb -r .error.message)" =~ 'NUL in the body' ]]
	# page parameters: explicit bad values are refused, not clamped
	for q in limit=0 limit=1001 limit=abc limit=-1 offset=-1 offset=x 'limit=%2B5'; do
		STATUS=$(api GET "/v1/profiling?$q")
		code_is 400 invalid_request
		STATUS=$(api GET "/v1/profiling/$DONE/raw?$q")
		code_is 400 invalid_request
	done
	for q in limit=101; do
		STATUS=$(api GET "/v1/profiling/$DONE/raw?$q")
		code_is 400 invalid_request
	done
	# unknown parameters are ignored
	[ "$(api GET '/v1/profiling?colour=red&limit=2')" = 200 ]
	[ "$(jqb .data.limit)" = 2 ]
	# a body where none is taken
	STATUS=$(api GET /v1/profiling -d 'x')
	code_is 400 invalid_request
	[ "$(jqb -r .error.message)" = "request body is not allowed" ]
	STATUS=$(api POST "/v1/profiling/$DONE/stop" -H 'Transfer-Encoding: chunked' -d 'x')
	code_is 400 invalid_request
	# a NUL or a control character in the path or a parameter
	for p in "/v1/profiling/ab%00cd" "/v1/profiling/ab%0acd/raw" "/v1/profiling?limit=1%00" "/v1/history?comm=a%00b"; do
		STATUS=$(api GET "$p")
		code_is 400 invalid_request
	done
	# nothing was created by any of them
	[ "$(api GET '/v1/profiling?limit=1000')" = 200 ]
	v=$(jqb '.data.items | length')
	[ "$v" = "$before" ]
}

@test "errors: route_not_found, method_not_allowed, unsupported_media_type, request_too_large" {
	for p in /v1/profiling/../../etc/passwd /etc/passwd /v2/profiling / /v1 \
		/v1/profiling/x/raw/y /v1/profiling/x/nothing; do
		STATUS=$(api GET "$p" --path-as-is)
		code_is 404 route_not_found
	done
	STATUS=$(api DELETE /v1/profiling -D "$T/h")
	code_is 405 method_not_allowed
	grep -qi '^Allow: GET, POST' "$T/h"
	STATUS=$(api POST /v1/profiling/capabilities)
	code_is 405 method_not_allowed
	STATUS=$(api GET "/v1/profiling/$DONE/stop")
	code_is 405 method_not_allowed
	STATUS=$(api PATCH "/v1/profiling/$DONE")
	code_is 405 method_not_allowed
	# create wants application/json
	STATUS=$(api POST /v1/profiling -d '{}' -H 'Content-Type:')
	code_is 415 unsupported_media_type
	STATUS=$(api POST /v1/profiling -H 'Content-Type: text/plain' -d '{}')
	code_is 415 unsupported_media_type
	STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json; charset=utf-8' -d '{}')
	code_is 400 invalid_request
	# bodies over --max-body: declared, sent without waiting, chunked,
	# and one that does not end
	head -c 1048576 /dev/zero | tr '\0' ' ' >"$T/big"
	STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json' --data-binary @"$T/big")
	code_is 413 request_too_large
	STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json' -H 'Expect:' --data-binary @"$T/big")
	code_is 413 request_too_large
	STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @"$T/big")
	code_is 413 request_too_large
	# the server answers 413 at 16 MiB and closes; curl, still sending,
	# may see the close before the answer
	STATUS=$(head -c 100000000 /dev/zero | api POST /v1/profiling -H 'Content-Type: application/json' \
		-H 'Transfer-Encoding: chunked' -H 'Expect:' -T - --max-time 20 2>"$T/curl.err" || true)
	echo "endless: $STATUS $(cat "$T/curl.err")"
	[[ "$STATUS" =~ ^(413|000)$ ]]
	kill -0 "$SERVE_PID"
	[ "$(api GET /v1/profiling)" = 200 ]
}

@test "errors: job_not_found, result_not_ready, result_unavailable, result_not_found, result_too_large, job_conflict" {
	for p in /v1/profiling/id-00000000-0000-4000-8000-000000000000 /v1/profiling/nope/raw; do
		STATUS=$(api GET "$p")
		code_is 404 job_not_found
		[ "$(jqb -r .error.message)" = "Job not found" ]
	done
	STATUS=$(api POST /v1/profiling/nope/stop)
	code_is 404 job_not_found
	wait_job "$DONE" completed
	STATUS=$(api POST "/v1/profiling/$DONE/stop")
	code_is 409 job_conflict
	# a page of profiles over --max-raw-page (100 bytes here)
	STATUS=$(api GET "/v1/profiling/$DONE/raw")
	code_is 413 result_too_large
	[ "$(jqb -r .error.message)" = "Profiling result response is too large; reduce limit" ]
	# a job that runs: not ready; stopped: unavailable
	id=$(new_job "$(job_body cpu c oncpu pid 600 ",\"pid\":$WL_PID")")
	STATUS=$(api GET "/v1/profiling/$id/raw")
	code_is 409 result_not_ready
	[ "$(jqb -r .error.message)" = "Profiling result is not ready" ]
	[ "$(api POST "/v1/profiling/$id/stop")" = 200 ]
	wait_job "$id" stopped
	STATUS=$(api GET "/v1/profiling/$id/raw")
	code_is 409 result_unavailable
	# completed, but its publication marker is gone: result_not_found
	mv "$SERVE_DIR/state/jobs/$DONE/published" "$T/published"
	STATUS=$(api GET "/v1/profiling/$DONE/raw")
	code_is 404 result_not_found
	mv "$T/published" "$SERVE_DIR/state/jobs/$DONE/published"
	# a published result without samples (the sleeper sleeps): 200, no
	# items; cpa's formats have nothing to draw
	quiet=$(new_job "$(job_body cpu c oncpu pid 1 ",\"pid\":$WL_PID")")
	wait_job "$quiet" completed
	[ "$(api GET "/v1/profiling/$quiet/raw")" = 200 ]
	[ "$(jqb -c .data)" = '{"items":[],"limit":20,"offset":0,"has_more":false}' ]
	STATUS=$(api GET "/v1/profiling/$quiet/flamegraph")
	code_is 404 result_not_found
	STATUS=$(api GET "/v1/profiling/$DONE/raw?limit=1&offset=1000")
	[ "$STATUS" = 200 ]
	[ "$(jqb -c .data)" = '{"items":[],"limit":1,"offset":1000,"has_more":false}' ]
}

@test "errors: quota_exceeded past the per-target quota and the host's, service_unavailable without a query service" {
	start_workload "$T/a.out" "$WL/sleeper" --sleep 20 --count 1000
	a=$WL_PID
	start_workload "$T/b.out" "$WL/sleeper" --sleep 20 --count 1000
	b=$WL_PID
	start_workload "$T/c.out" "$WL/sleeper" --sleep 20 --count 1000
	c=$WL_PID
	start_workload "$T/d.out" "$WL/sleeper" --sleep 20 --count 1000
	d=$WL_PID
	job() { job_body cpu c oncpu pid 600 ",\"pid\":$1"; }
	id1=$(new_job "$(job "$a")")
	STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json' -d "$(job "$a")")
	code_is 429 quota_exceeded
	[[ "$(jqb -r .error.message)" =~ ^"Job quota exceeded".*"on target pid:$a, at most 1" ]]
	id2=$(new_job "$(job "$b")")
	id3=$(new_job "$(job "$c")")
	STATUS=$(api POST /v1/profiling -H 'Content-Type: application/json' -d "$(job "$d")")
	code_is 429 quota_exceeded
	[[ "$(jqb -r .error.message)" =~ "active jobs on this host, at most 3" ]]
	# the node API counts the same capacity
	STATUS=$(as node-token-0123456789abcdef POST /v1/operations -H 'Content-Type: application/json' \
		-d "{\"request_id\":\"op-full\",\"duration_seconds\":5,\"scope\":\"pid\",\"pid\":$d,\"kind\":\"profiling\",\"spec\":{\"type\":\"cpu\",\"language\":\"c\",\"mode\":\"oncpu\"}}")
	code_is 429 operation_limit_exceeded
	for id in "$id1" "$id2" "$id3"; do api POST "/v1/profiling/$id/stop" >/dev/null; done
	for id in "$id1" "$id2" "$id3"; do wait_job "$id" stopped; done
	STATUS=$(api POST /v1/profiling/flamegraph/querier.v1.QuerierService/SelectMergeStacktraces -H 'Content-Type: application/proto' -d x)
	code_is 503 service_unavailable
	STATUS=$(api POST /v1/profiling/flamegraph/querier.v1.QuerierService/ProfileTypes -H 'Content-Type: application/json' -d x)
	code_is 415 unsupported_media_type
}

@test "errors: the node Operation API: 202 then 200, transitions, stop, its codes" {
	op() { TOKEN=node-token-0123456789abcdef api "$@"; }
	start="{\"request_id\":\"id-op-$$\",\"duration_seconds\":600,\"scope\":\"pid\",\"pid\":$WL_PID,\"kind\":\"profiling\",\"spec\":{\"type\":\"cpu\",\"language\":\"go\",\"mode\":\"oncpu\"}}"
	STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' -d "$start")
	[ "$STATUS" = 202 ]
	[ "$(jqb -r .data.request_id)" = "id-op-$$" ]
	[ "$(jqb -r .data.kind)" = profiling ]
	[ "$(jqb -r .data.status)" = pending ]
	v=$(jqb -r '.data | has("terminal") or has("finished_at")')
	[ "$v" = false ]
	# the same request again: the same Operation, 200
	STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' -d "$start")
	[ "$STATUS" = 200 ]
	[ "$(jqb -r .data.request_id)" = "id-op-$$" ]
	op_running() { op GET "/v1/operations/id-op-$$" >/dev/null; [ "$(jqb -r .data.status)" = running ]; }
	wait_for 20 op_running
	jqb -e '.data.started_at'
	# a profiling Job's id is another kind's
	STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' \
		-d "{\"request_id\":\"$DONE\",\"duration_seconds\":5,\"scope\":\"host\",\"kind\":\"profiling\",\"spec\":{\"type\":\"cpu\",\"language\":\"c\",\"mode\":\"oncpu\"}}")
	code_is 409 request_id_conflict
	STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' \
		-d '{"request_id":"tr-1","duration_seconds":5,"scope":"host","kind":"tracing","spec":{"type":"runqlat"}}')
	code_is 501 service_not_implemented
	STATUS=$(op GET /v1/operations/tr-1)
	code_is 404 operation_not_found
	[ "$(jqb -r .error.message)" = "operation was not found" ]
	# a container that does not run here: the node's environment check
	STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' \
		-d '{"request_id":"c-1","duration_seconds":5,"scope":"container","container_id":"9f4c2f1a8b7d","kind":"profiling","spec":{"type":"cpu","language":"c","mode":"oncpu"}}')
	code_is 422 execution_environment_unsupported
	STATUS=$(op GET /v1/operations/c-1)
	code_is 404 operation_not_found
	# ... and one that does: a sleeper in a docker-ID.scope cgroup
	root=$(findmnt -t cgroup2 -n -o TARGET | sed -n 1p)
	if [ -n "$root" ]; then
		cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
		mkdir "$root/docker-$cid.scope"
		sh -c 'echo $$ >"$1/cgroup.procs" && exec sleep 60' sh "$root/docker-$cid.scope" 3>&- &
		sl=$!
		wait_for 10 grep -qx "$sl" "$root/docker-$cid.scope/cgroup.procs"
		STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' \
			-d "{\"request_id\":\"c-2\",\"duration_seconds\":1,\"scope\":\"container\",\"container_id\":\"${cid:0:12}\",\"kind\":\"profiling\",\"spec\":{\"type\":\"cpu\",\"language\":\"c\",\"mode\":\"oncpu\"}}")
		kill "$sl"
		wait "$sl" 2>/dev/null || true
		wait_for 10 test -z "$(cat "$root/docker-$cid.scope/cgroup.procs")"
		rmdir "$root/docker-$cid.scope"
		[ "$STATUS" = 202 ]
		kill -0 "$SERVE_PID"
	fi
	STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' -d '{"request_id":"../x","duration_seconds":5,"scope":"host","kind":"profiling","spec":{"type":"cpu","language":"c","mode":"oncpu"}}')
	code_is 400 invalid_request
	STATUS=$(op POST /v1/operations -H 'Content-Type: application/json' -d '{"request_id":"a","duration_seconds":5,"scope":"host","kind":"profiling","spec":{"type":"cpu","language":"c","mode":"oncpu","hostname":"x"}}')
	code_is 400 invalid_request
	[[ "$(jqb -r .error.message)" =~ "unknown field 'spec.hostname'" ]]
	# stop: 202 while it stops, 200 once stopping or terminal
	STATUS=$(op POST "/v1/operations/id-op-$$/stop")
	[ "$STATUS" = 202 ]
	[ "$(jqb -r .data.status)" = stopping ]
	STATUS=$(op POST "/v1/operations/id-op-$$/stop")
	[ "$STATUS" = 200 ]
	op_ended() { op GET "/v1/operations/id-op-$$" >/dev/null; [ "$(jqb -r .data.status)" = terminal ]; }
	wait_for 30 op_ended
	[ "$(jqb -c .data.terminal)" = '{"outcome":"stopped"}' ]
	jqb -e '.data.finished_at'
	STATUS=$(op POST "/v1/operations/id-op-$$/stop")
	[ "$STATUS" = 200 ]
	# Operations are not the profiling API's Jobs
	STATUS=$(api GET "/v1/profiling/id-op-$$")
	code_is 404 job_not_found
}
@test "errors: slow clients: a header past --header-timeout and a body past --read-timeout are cut, whatever their pace" {
	serve_aside
	serve_start "$T/slow" --header-timeout 2 --read-timeout 2
	port=${SERVE_URL##*:}
	# five headers, a byte every 0.3 s
	"$CPA_BUILDDIR/tests/tools/slowloris" 127.0.0.1 "$port" 5 4 300 >"$T/slow.out"
	read -r _ opened _ closed _ oldest _ longest < <(tail -1 "$T/slow.out")
	[ "$closed" -ge 5 ]
	[ "$longest" -le 3000 ]
	[ "$oldest" -le 3000 ]
	# a body of 1000 bytes declared, a byte every 0.2 s
	slow_body() {
		trap '' PIPE
		exec 5<>"/dev/tcp/127.0.0.1/$port"
		printf 'POST /v1/profiling HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n' "$TOKEN" >&5
		local t0 i
		t0=$(date +%s%N)
		for ((i = 0; i < 50; i++)); do
			printf x >&5 2>/dev/null || break
			sleep 0.2
		done
		echo "$i $(( ($(date +%s%N) - t0) / 1000000 ))"
	}
	read -r sent ms < <(slow_body)
	echo "slow body: $sent bytes in $ms ms"
	[ "$sent" -lt 50 ]
	[ "$ms" -le 5000 ]
	[ "$(api GET /v1/profiling)" = 200 ]
	kill -0 "$SERVE_PID"
}

@test "errors: a token file or users file others can read, a short token, a bad users file: refused at start" {
	mkdir -p "$T/s"
	head -c 24 /dev/urandom | base64 >"$T/s/token"
	chmod 640 "$T/s/token"
	run -1 cpa-serve --listen 127.0.0.1:0 --token-file "$T/s/token" --state-dir "$T/s/state"
	[[ "$output" =~ "mode 0640 lets others read or change the token; chmod 600 it" ]]
	echo short >"$T/s/token"
	chmod 600 "$T/s/token"
	run -1 cpa-serve --listen 127.0.0.1:0 --token-file "$T/s/token" --state-dir "$T/s/state"
	[[ "$output" =~ "token shorter than 16 bytes" ]]
	run -1 cpa-serve --listen 127.0.0.1:0 --token-file "$T/s/none" --state-dir "$T/s/state"
	[[ "$output" =~ "$T/s/none: No such file" ]]
	run -2 cpa-serve --listen 127.0.0.1:0 --tls-cert "$T/s/token"
	[[ "$output" =~ "--tls-cert and --tls-key go together" ]]
	users() {	# users TEXT: a users file of TEXT, and the server's refusal
		(umask 077; printf '%s\n' "$1" >"$T/s/users")
		run -1 cpa-serve --listen 127.0.0.1:0 --users "$T/s/users" --state-dir "$T/s/state"
	}
	users $'[[Auth.Users]]\nID = "a"\nBearerToken = "0123456789abcdef"\nPermisions = ["/v1/profiling"]'
	[[ "$output" =~ "$T/s/users:4: Permisions: not a key of [[Auth.Users]]" ]]
	users $'[[Auth.Users]]\nID = "a"\nBearerToken = "short"'
	[[ "$output" =~ "a: token shorter than 16 bytes" ]]
	users $'[[Auth.Users]]\nID = "a"\nBearerToken = "0123456789abcdef"\n[[Auth.Users]]\nID = "b"\nBearerToken = "0123456789abcdef"'
	[[ "$output" =~ "user b: the token of user a" ]]
	users $'[[Auth.Users]]\nID = "a"\nBearerToken = "0123456789abcdef"\nPermissions = ["v1/profiling"]'
	[[ "$output" =~ "permission 'v1/profiling': expected [METHOD ]/PATH" ]]
	users $'[Elasticsearch]\nAddress = "x"'
	[[ "$output" =~ "[Elasticsearch]: not a table cpa-serve reads" ]]
	chmod 644 "$T/s/users"
	run -1 cpa-serve --listen 127.0.0.1:0 --users "$T/s/users" --state-dir "$T/s/state"
	[[ "$output" =~ "mode 0644 lets others read or change its tokens" ]]
}

@test "errors: with --tls-cert and --tls-key it serves HTTPS only, and still wants the token" {
	command -v openssl >/dev/null || skip_missing "openssl not installed"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 \
		-keyout "$T/key.pem" -out "$T/cert.pem" 2>"$T/openssl.err"
	local plain_url=$SERVE_URL
	serve_aside
	serve_start "$T/tls" --tls-cert "$T/cert.pem" --tls-key "$T/key.pem" --header-timeout 2
	grep -q 'serving on .* with TLS' "$T/tls/serve.log"
	https=${SERVE_URL/http:/https:}
	code=$(curl -sS -o "$T/b" -w '%{http_code}' --cacert "$T/cert.pem" \
		-H "Authorization: Bearer $TOKEN" "$https/v1/profiling/capabilities")
	[ "$code" = 200 ]
	jq -e '.data.items | length == 9' "$T/b"
	code=$(curl -sS -o "$T/b" -w '%{http_code}' --cacert "$T/cert.pem" "$https/v1/profiling")
	[ "$code" = 401 ]
	# a header trickled inside TLS is cut at --header-timeout too
	port=${SERVE_URL##*:}
	t0=$(date +%s%N)
	{ printf 'GET /v1/profiling HTTP/1.1\r\nHost: x\r\n'
	  for ((i = 0; i < 40; i++)); do sleep 0.3; printf X; done; } |
		timeout 20 openssl s_client -quiet -connect "127.0.0.1:$port" \
			-CAfile "$T/cert.pem" >"$T/tls.out" 2>&1 || true
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	echo "TLS slow header cut after $ms ms"
	[ "$ms" -lt 6000 ]
	# public paths close the connection: no kept slot without a token
	curl -sS -D "$T/h" -o /dev/null --cacert "$T/cert.pem" "$https/healthz"
	grep -qi '^Connection: close' "$T/h"
	# plain HTTP gets no answer from it
	run curl -sS -o /dev/null -H "Authorization: Bearer $TOKEN" "$SERVE_URL/v1/profiling"
	[ "$status" -ne 0 ]
	serve_back
	[ "$SERVE_URL" = "$plain_url" ]
}
