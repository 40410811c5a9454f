#!/usr/bin/env bats
# What cpa-serve refuses, and how: 401 without the token, 429 past a
# quota, 400 naming the field for each kind of bad body, 413 for a body
# over the limit, 404 for paths outside the API, and a token file others
# could read refused at start.
load helper
load serve_helper

F=$BATS_FILE_TMPDIR

setup_file() {
	part_built libmicrohttpd || return 0
	require_bpf
	require_serve_tools
	serve_start "$F/serve" --max-jobs 2 --max-jobs-per-target 1
}

teardown_file() {
	serve_stop
}

teardown() {
	kill_workloads
}

setup() {
	serve_setup
}

@test "serve errors: no token, a wrong token, another scheme: 401 with a JSON error" {
	code=$(curl -sS -o "$T/b" -w '%{http_code}' "$SERVE_URL/v1/profiling")
	[ "$code" = 401 ]
	[ "$(jq -r .error "$T/b")" = "missing or wrong bearer token" ]
	code=$(curl -sS -o "$T/b" -w '%{http_code}' -H "Authorization: Bearer ${TOKEN}x" "$SERVE_URL/v1/profiling")
	[ "$code" = 401 ]
	code=$(curl -sS -o "$T/b" -w '%{http_code}' -H "Authorization: Bearer ${TOKEN:0:8}" "$SERVE_URL/v1/profiling")
	[ "$code" = 401 ]
	code=$(curl -sS -o "$T/b" -w '%{http_code}' -u "user:$TOKEN" "$SERVE_URL/v1/profiling")
	[ "$code" = 401 ]
	# before the body is looked at: a bad body without the token is 401
	code=$(curl -sS -o "$T/b" -w '%{http_code}' -d '{' "$SERVE_URL/v1/profiling")
	[ "$code" = 401 ]
	curl -sS -D "$T/h" -o /dev/null "$SERVE_URL/v1/history"
	grep -qi '^WWW-Authenticate: Bearer' "$T/h"
	[ "$(api GET /v1/profiling)" = 200 ]
}

@test "serve errors: 400 naming the field for each kind of bad body" {
	bad() {	# bad BODY FIELD MESSAGE-PATTERN
		code=$(api POST /v1/profiling -d "$1")
		echo "$1 -> $code $(body)"
		[ "$code" = 400 ]
		[ "$(jqb -r '.field // ""')" = "$2" ]
		[[ "$(jqb -r .error)" =~ $3 ]]
	}
	ok='"type":"cpu","mode":"oncpu","scope":"host"'
	bad '' '' '^byte 0: the JSON body ends early'
	bad '{"type":"cpu",' '' 'ends early'
	bad '{"type":"cpu"}x' '' '^byte 14: '
	bad "{'type':'cpu'}" '' '^byte [0-9]+: bad JSON'
	bad '{"type":"cpu",}' '' 'bad JSON'
	bad '[1]' '' 'expected a JSON object'
	bad "{$ok,\"colour\":\"red\"}" colour "unknown field 'colour'"
	bad '{"mode":"oncpu","scope":"host"}' type 'type: missing'
	bad '{"type":"gpu","mode":"oncpu","scope":"host"}' type "'gpu' is not a job type"
	bad '{"type":"cpu","mode":"heap","scope":"host"}' mode "'heap' is not a mode of type 'cpu'"
	bad '{"type":"cpu","mode":"oncpu","scope":"rack"}' scope "'rack' is not host, pid or container"
	bad "{$ok,\"language\":\"cobol\"}" language "'cobol' is not supported"
	bad "{$ok,\"duration_seconds\":0}" duration_seconds 'out of range 1..3600'
	bad "{$ok,\"duration_seconds\":3601}" duration_seconds 'out of range 1..3600'
	bad "{$ok,\"duration_seconds\":99999999999999999999}" duration_seconds ''
	bad "{$ok,\"duration_seconds\":1.5}" duration_seconds 'expected an integer'
	bad "{$ok,\"duration_seconds\":\"5\"}" duration_seconds 'expected an integer'
	bad "{$ok,\"freq\":0}" freq 'out of range 1..1000'
	bad "{$ok,\"freq\":1001}" freq 'out of range 1..1000'
	bad '{"type":"cpu","mode":"offcpu","scope":"host","freq":99}' freq 'does not sample at a frequency'
	bad '{"type":"cpu","mode":"oncpu","scope":"pid"}' pid 'missing for scope pid'
	bad "{$ok,\"pid\":1}" pid 'only with scope pid'
	bad '{"type":"cpu","mode":"oncpu","scope":"pid","pid":-1}' pid 'out of range'
	bad '{"type":"cpu","mode":"oncpu","scope":"container"}' container_id 'missing for scope container'
	bad '{"type":"cpu","mode":"oncpu","scope":"container","container_id":"../etc"}' container_id 'hex digits'
	bad "{$ok,\"type\":7}" type 'expected a string'
	# nothing was created by any of them
	[ "$(api GET /v1/profiling)" = 200 ]
	v=$(jqb '.jobs | length')
	[ "$v" = 0 ]
}

@test "serve errors: a 1 MB body is refused with 413, declared or chunked" {
	head -c 1048576 /dev/zero | tr '\0' ' ' >"$T/big"
	[ "$(api POST /v1/profiling --data-binary @"$T/big")" = 413 ]
	[ "$(jqb -r .error)" = "request body over 65536 bytes" ]
	# without waiting for 100 Continue: read to the end, then refused
	[ "$(api POST /v1/profiling -H 'Expect:' --data-binary @"$T/big")" = 413 ]
	[ "$(api POST /v1/profiling -H 'Transfer-Encoding: chunked' --data-binary @"$T/big")" = 413 ]
	[ "$(api GET /v1/profiling)" = 200 ]
}

@test "serve errors: paths outside the API are 404; unknown parameters 400; wrong methods 405" {
	for p in /v1/profiling/../../etc/passwd /etc/passwd /v1/profiling/0123456789abcdef \
		/v1/profiling/0123456789ABCDEF/raw /v1/profiling/..%2f..%2fetc%2fpasswd \
		/v1/profiling/0123456789abcdef/../../../etc/passwd /v2/profiling / /v1 \
		/v1/profiling/0123456789abcdef/raw/x; do
		code=$(api GET "$p" --path-as-is)
		echo "$p -> $code"
		[ "$code" = 404 ]
	done
	[ "$(api GET '/v1/profiling?state=running')" = 400 ]
	[ "$(jqb -r .field)" = state ]
	[ "$(api GET '/v1/profiling?status=sleeping')" = 400 ]
	[ "$(api DELETE /v1/profiling)" = 405 ]
	[ "$(api POST /v1/profiling/capabilities)" = 405 ]
	[ "$(api GET /v1/profiling/0123456789abcdef/stop)" = 405 ]
}

@test "serve errors: 429 past the per-target quota and past the host quota" {
	start_workload "$T/a.out" "$WL/sleeper" --sleep 20 --count 1000
	a=$WL_PID
	start_workload "$T/b.out" "$WL/sleeper" --sleep 20 --count 1000
	b=$WL_PID
	start_workload "$T/c.out" "$WL/sleeper" --sleep 20 --count 1000
	c=$WL_PID
	job() { echo "{\"type\":\"cpu\",\"mode\":\"oncpu\",\"scope\":\"pid\",\"pid\":$1,\"duration_seconds\":600}"; }
	id1=$(new_job "$(job "$a")")
	[ "$(api POST /v1/profiling -d "$(job "$a")")" = 429 ]
	[[ "$(jqb -r .error)" =~ "on target pid:$a, at most 1" ]]
	id2=$(new_job "$(job "$b")")
	[ "$(api POST /v1/profiling -d "$(job "$c")")" = 429 ]
	[[ "$(jqb -r .error)" =~ "active jobs on this host, at most 2" ]]
	[ "$(api POST "/v1/profiling/$id1/stop")" = 202 ]
	wait_job "$id1" stopped
	id3=$(new_job "$(job "$c")")
	for id in "$id2" "$id3"; do api POST "/v1/profiling/$id/stop" >/dev/null; done
	wait_job "$id2" stopped
	wait_job "$id3" stopped
}

@test "serve errors: a token file others can read, or a short token, is refused at start" {
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
}

@test "serve errors: with --tls-cert and --tls-key it serves HTTPS only, and still wants the token" {
	command -v openssl >/dev/null || skip_missing "openssl not installed"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 \
		-keyout "$T/key.pem" -out "$T/cert.pem" 2>"$T/openssl.err"
	local plain_url=$SERVE_URL plain_pid=$SERVE_PID plain_dir=$SERVE_DIR
	serve_start "$T/tls" --tls-cert "$T/cert.pem" --tls-key "$T/key.pem"
	grep -q 'serving on .* with TLS' "$T/tls/serve.log"
	https=${SERVE_URL/http:/https:}
	code=$(curl -sS -o "$T/b" -w '%{http_code}' --cacert "$T/cert.pem" \
		-H "Authorization: Bearer $TOKEN" "$https/v1/profiling/capabilities")
	[ "$code" = 200 ]
	jq -e .kernel "$T/b"
	code=$(curl -sS -o "$T/b" -w '%{http_code}' --cacert "$T/cert.pem" "$https/v1/profiling")
	[ "$code" = 401 ]
	# plain HTTP gets no answer from it
	run curl -sS -o /dev/null -H "Authorization: Bearer $TOKEN" "$SERVE_URL/v1/profiling"
	[ "$status" -ne 0 ]
	serve_stop
	SERVE_URL=$plain_url SERVE_PID=$plain_pid SERVE_DIR=$plain_dir
	TOKEN=$(cat "$SERVE_DIR/token")
}
