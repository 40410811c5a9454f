#!/usr/bin/env bats
# cpa-serve's fleet page, GET /ui, in headless Chromium
# (tests/browser/ui.test.js): two hosts captured for real (chain_fp on
# web-1, chain_nofp on web-2) and pushed into a ClickHouse of the suite's
# own, served by cpa-serve --clickhouse; then one host's store served by
# cpa-serve --dir. Skips without the browser tooling, except under CI.
load browser_helper
load serve_helper
load fleet_helper

F=$BATS_FILE_TMPDIR

setup_file() {
	need_browser
	require_bpf
	require_serve_tools
	require_clickhouse
	local w
	start_server "$F/ch"
	start_workload "$F/web-1.wl" "$WL/chain_fp" --seconds 30
	echo "$WL_PID" >"$F/web-1.wlpid"
	start_workload "$F/web-2.wl" "$WL/chain_nofp" --seconds 30
	echo "$WL_PID" >"$F/web-2.wlpid"
	for w in web-1 web-2; do host_capture "$w" "$(cat "$F/$w.wlpid")" 6; done
	for w in web-1 web-2; do wait "$(cat "$F/$w.pipe.pid")"; done
	for w in web-1 web-2; do
		cpa-push --clickhouse "$(cat "$F/ch/url")" --dir "$F/$w" \
			--host "$w" --once 2>>"$F/$w.push.err"
	done
	serve_start "$F/serve" --clickhouse "$(cat "$F/ch/url")"
}

teardown_file() {
	serve_stop
	fleet_teardown
	ch_stop "$F/ch"
}

@test "ui: the fleet page loads with the token, picks a range, filters a host, compares" {
	# the page is public and holds no data; the pictures need the token
	[ "$(curl -sS -o "$BATS_TEST_TMPDIR/ui.html" -w '%{http_code}' "$SERVE_URL/ui")" = 200 ]
	grep -q '<iframe id="view" title="profile" sandbox="allow-scripts">' "$BATS_TEST_TMPDIR/ui.html"
	[ "$(curl -sS -o /dev/null -w '%{http_code}' "$SERVE_URL/v1/history?format=html&last=1h")" = 401 ]
	run node "$BROWSER_DIR/ui.test.js" "$SERVE_URL" "$TOKEN" web-1 chain_fp \
		web-2 chain_nofp "$BATS_TEST_TMPDIR/ui.png"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$BATS_TEST_TMPDIR/ui.png" ]
	if [ -n "${CPA_DOC_IMAGES:-}" ]; then
		cp "$BATS_TEST_TMPDIR/ui.png" "$CPA_DOC_IMAGES/serve-ui.png"
	fi
}

@test "ui: over a host's own store (cpa-serve --dir)" {
	serve_aside
	serve_start "$F/serve-local" --dir "$F/web-1"
	run node "$BROWSER_DIR/ui.test.js" "$SERVE_URL" "$TOKEN" - chain_fp - chain_fp
	serve_back
	echo "$output"
	[ "$status" -eq 0 ]
}
