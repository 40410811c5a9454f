#!/usr/bin/env bats
# cpa-render's SVG and HTML opened in headless Chromium: search, zoom,
# time-range selection, checked against what is drawn.
# tests/browser/render.test.js does the browsing (playwright-core, with
# Debian's chromium). Without them the test skips, except under CI
# (CI=true) or with CPA_REQUIRE_BROWSER=1, where it fails.

load browser_helper

setup() {
	need_browser
	MKSTREAM="$CPA_BUILDDIR/tests/tools/mkstream"
}

@test "svg, icicle and html work in headless chromium: search, zoom, time range" {
	printf '%s\n' 'main;run;level_a;hot 70' 'main;run;level_b 20' \
		'main;idle 10' > "$BATS_TEST_TMPDIR/p.folded"
	cpa-render "$BATS_TEST_TMPDIR/p.folded" > "$BATS_TEST_TMPDIR/p.svg"
	cpa-render --inverted "$BATS_TEST_TMPDIR/p.folded" > "$BATS_TEST_TMPDIR/i.svg"

	# 60 samples of app in second 0, 30 of db in second 1 (20 sort,
	# 10 scan), 10 of app idle in second 2; 10 ms apart
	awk 'BEGIN {
		t0 = 1700000000
		for (i = 0; i < 60; i++)
			printf "%d%09d oncpu 10 10 0 app app 1 main;work\n", t0, i * 10000000
		for (i = 0; i < 30; i++)
			printf "%d%09d oncpu 20 20 1 db db 1 main;query;%s\n", t0 + 1, i * 10000000, i < 20 ? "sort" : "scan"
		for (i = 0; i < 10; i++)
			printf "%d%09d oncpu 10 10 0 app app 1 main;idle\n", t0 + 2, i * 10000000
	}' | "$MKSTREAM" > "$BATS_TEST_TMPDIR/s.cpa"
	cpa-render --format html "$BATS_TEST_TMPDIR/s.cpa" > "$BATS_TEST_TMPDIR/s.html"

	run node "$BROWSER_DIR/render.test.js" "$BATS_TEST_TMPDIR/p.svg" \
		"$BATS_TEST_TMPDIR/s.html" "$BATS_TEST_TMPDIR/i.svg"
	echo "$output"
	[ "$status" -eq 0 ]
}
