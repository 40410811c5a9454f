#!/usr/bin/env bats
# GET /v1/history answers from cpa monitor's store what cpa-query (and
# cpa-render) answer on the command line, byte for byte.
load helper
load serve_helper

F=$BATS_FILE_TMPDIR

setup_file() {
	part_built libmicrohttpd || return 0
	require_bpf
	require_serve_tools
	start_workload "$F/wl.out" "$WL/chain_fp" --seconds 12
	echo "$WL_BG_PIDS" >"$F/bg.pids"
	date +%s >"$F/t0"
	CPA_RUN_DIR=$F/run cpa monitor --dir "$F/store" --duration 4 --stats-interval 1s \
		>"$F/monitor.out" 2>&1
	echo $(( $(date +%s) + 1 )) >"$F/t1"
	serve_start "$F/serve" --dir "$F/store"
}

teardown_file() {
	serve_stop
	kill_pids_in "$F/bg.pids"
}

setup() {
	serve_setup
	FROM=$(cat "$F/t0") TO=$(cat "$F/t1")
}

@test "serve history: folded and pprof over HTTP are cpa-query's own answer" {
	[ "$(BODY_FILE=$T/h.folded api GET "/v1/history?from=@$FROM&to=@$TO&format=folded")" = 200 ]
	cpa-query --dir "$F/store" --from "@$FROM" --to "@$TO" --format folded >"$T/q.folded"
	grep -qE '^chain_fp;(.*;)?main;run;level_a;level_b;hot_leaf [0-9]+$' "$T/q.folded"
	cmp "$T/q.folded" "$T/h.folded"
	# folded is the default, and filters pass through
	[ "$(BODY_FILE=$T/c.folded api GET "/v1/history?from=@$FROM&to=@$TO&comm=chain_fp")" = 200 ]
	cpa-query --dir "$F/store" --from "@$FROM" --to "@$TO" --comm chain_fp >"$T/qc.folded"
	cmp "$T/qc.folded" "$T/c.folded"
	run ! grep -v '^chain_fp;' "$T/c.folded"
	[ "$(BODY_FILE=$T/h.pb.gz api GET "/v1/history?from=@$FROM&to=@$TO&format=pprof")" = 200 ]
	cpa-query --dir "$F/store" --from "@$FROM" --to "@$TO" --format pprof -o "$T/q.pb.gz"
	cmp "$T/q.pb.gz" "$T/h.pb.gz"
}

@test "serve history: SVG and HTML over HTTP are cpa show's" {
	[ "$(BODY_FILE=$T/h.svg api GET "/v1/history?from=@$FROM&to=@$TO&format=svg")" = 200 ]
	cpa-query --dir "$F/store" --from "@$FROM" --to "@$TO" --format stream | cpa-render --format svg >"$T/q.svg"
	cmp "$T/q.svg" "$T/h.svg"
	xmllint --noout "$T/h.svg"
	grep -q '<title>hot_leaf (' "$T/h.svg"
	[ "$(BODY_FILE=$T/h.html api GET "/v1/history?from=@$FROM&to=@$TO&format=html")" = 200 ]
	cpa-query --dir "$F/store" --from "@$FROM" --to "@$TO" --format stream | cpa-render --format html >"$T/q.html"
	cmp "$T/q.html" "$T/h.html"
}

@test "serve history: a bad time, format or parameter is 400 invalid_request with the reason" {
	[ "$(api GET "/v1/history?from=yesterday-ish")" = 400 ]
	[ "$(jqb -r .error.code)" = invalid_request ]
	[[ "$(jqb -r .error.message)" =~ ^cpa-query:.*yesterday-ish ]]
	[ "$(api GET "/v1/history?format=png")" = 400 ]
	[[ "$(jqb -r .error.message)" =~ ^format: ]]
	[ "$(api GET "/v1/history?dir=/etc")" = 400 ]
	[ "$(jqb -r .error.message)" = "unknown parameter 'dir'" ]
	[ "$(api GET "/v1/history?comm=")" = 400 ]
	[ "$(api GET "/v1/history?from=--list")" = 400 ]
}
