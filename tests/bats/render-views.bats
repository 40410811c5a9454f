#!/usr/bin/env bats
# The time view that fits stored data, in headless Chromium: an hour of
# stored history through `cpa show --format html`, one heatmap cell per
# second (tests/browser/hour.test.js).
#
# Like render-browser.bats it needs Debian's chromium and playwright-core
# (`cd tests/browser && npm install`); without them it skips, except under
# CI (CI=true) or with CPA_REQUIRE_BROWSER=1, where it fails.
# CPA_DOC_IMAGES=DIR also saves the picture docs/render.md shows there.

load browser_helper

setup() {
	T=$BATS_TEST_TMPDIR
	MKSTREAM="$CPA_BUILDDIR/tests/tools/mkstream"
	: >"$T/cpa.conf"
	export CPA_CONFIG=$T/cpa.conf
	# 2023-11-14 22:13:00 UTC, on a minute
	T0=1699999980
}

# An hour of history, every second stored: web all along, its load a
# wave; batch in minutes 20 to 34; cron's 3-second burst every ten
# minutes from second 300. Writes the samples' description to $T/hour.desc
# and the weights hour.test.js expects to $T/expect.
hour_history() {
	awk -v t0=$T0 -v out="$T/expect" 'BEGIN {
		for (s = 0; s < 3600; s++) {
			t = (t0 + s) "000000000"
			w = 5 + int(4 * sin(2 * 3.14159265 * s / 900))
			printf "%s oncpu 100 100 0 web web %d main;serve;handle\n", t, w
			all += w; if (s >= 1500 && s < 1560) m25 += w
			if (s == 600) c600 = w
			if (s >= 300 && s < 303) c300 += w
			if (s >= 1200 && s < 2100) {
				printf "%s oncpu 200 200 1 batch batch 8 main;compress;deflate\n", t
				all += 8; if (s >= 1500 && s < 1560) m25 += 8
			}
			if (s % 600 >= 300 && s % 600 < 303) {
				printf "%s oncpu 300 300 0 cron cron 20 main;rotate;gzip\n", t
				all += 20; if (s >= 1500 && s < 1560) m25 += 20
				if (s >= 300 && s < 303) c300 += 20
			}
		}
		printf "all %d\nminute25 %d\ncell600 %d\ncron300 %d\n",
			all, m25, c600, c300 > out
	}' >"$T/hour.desc"
}

@test "html: an hour of stored history fills the heatmap, a cell per second; a selection draws its seconds" {
	need_browser
	hour_history
	"$MKSTREAM" <"$T/hour.desc" | cpa-store --dir "$T/store"
	cd "$T"
	run cpa show --dir "$T/store" --from @$T0 --to @$((T0 + 3600)) \
		--format html -o hour.html
	[ "$status" -eq 0 ]
	[[ "$output" == *"wrote hour.html"* ]]
	# the page carries the windows' times: the grid they make
	grep -q "^start_ms: ${T0}000, cell_ms: 1000, col_ms: 60000, cols: 60, rows: 60,$" hour.html
	run node "$BROWSER_DIR/hour.test.js" hour.html expect hour.png
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s hour.png ]
	if [ -n "${CPA_DOC_IMAGES:-}" ]; then
		cp hour.png "$CPA_DOC_IMAGES/render-html-hour.png"
	fi
}

@test "html: a live stream keeps FlameScope's grid, a second a column of 20 ms cells" {
	printf '%s\n' "${T0}000000000 oncpu 1 1 0 app app 1 main;a" \
		"$((T0 + 61))500000000 oncpu 1 1 0 app app 1 main;b" |
		"$MKSTREAM" >"$T/s.cpa"
	cpa-render --format html "$T/s.cpa" >"$T/s.html"
	grep -q "^start_ms: ${T0}000, cell_ms: 20, col_ms: 1000, cols: 62, rows: 50,$" "$T/s.html"
	# b: column 61, row 25
	grep -q '^3075,1,[0-9]*,1\]$' "$T/s.html"
	# stored 100 ms windows: a second a column of ten cells
	"$MKSTREAM" <<<"${T0}250000000 oncpu 1 1 0 app app 3 main;c" |
		cpa-store --dir "$T/fine" --interval 100ms
	cpa-query --dir "$T/fine" --from @$T0 --to @$((T0 + 1)) --format stream |
		cpa-render --format html >"$T/f.html"
	grep -q "^start_ms: ${T0}000, cell_ms: 100, col_ms: 1000, cols: 1, rows: 10,$" "$T/f.html"
	grep -q '^cells: \[2,1,[0-9]*,3\]$' "$T/f.html"
}
