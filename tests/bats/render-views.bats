#!/usr/bin/env bats
# Views that fit the data and the viewers people use: an hour of stored
# history through `cpa show --format html`, one heatmap cell per second
# (tests/browser/hour.test.js); --format speedscope, checked byte for byte
# and opened in speedscope itself (tests/browser/speedscope.test.js).
#
# Like render-browser.bats it needs Debian's chromium and playwright-core
# (`cd tests/browser && npm install`); without them it skips, except under
# CI (CI=true) or with CPA_REQUIRE_BROWSER=1, where it fails.
# CPA_DOC_IMAGES=DIR also saves the pictures docs/render.md shows there.

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

# speedscope_install: speedscope from npm into tests/speedscope (ignored
# by git), once for the plain and the sanitized build, or into the build
# tree where the source is read-only; sets SPEEDSCOPE to its page. A
# registry out of reach is a failure that says so, never a skip.
speedscope_install() {
	local dir="$CPA_SRCDIR/tests/speedscope" version=1.25.0
	[ -w "$CPA_SRCDIR/tests" ] || dir="$CPA_BUILDDIR/tests/speedscope"
	SPEEDSCOPE=$dir/node_modules/speedscope/dist/release/index.html
	if [ -f "$SPEEDSCOPE" ] &&
		grep -q "\"version\": \"$version\"" "$dir/node_modules/speedscope/package.json"; then
		return 0
	fi
	if ! command -v npm >/dev/null; then
		echo "speedscope test: no npm to install speedscope $version with (apt-get install npm)" >&2
		return 1
	fi
	mkdir -p "$dir"
	if ! npm install --prefix "$dir" --no-audit --no-fund --no-save \
		--loglevel=error "speedscope@$version" >"$T/npm.log" 2>&1; then
		echo "speedscope test: npm could not install speedscope $version from $(npm config get registry):" >&2
		grep -E '^npm (error|ERR!) (code|errno|network|request)' "$T/npm.log" >&2 ||
			tail -n 5 "$T/npm.log" >&2
		return 1
	fi
	[ -f "$SPEEDSCOPE" ]
}

@test "speedscope: a profile per thread, evented from a live stream's times; per process, sampled" {
	cat >"$T/t.desc" <<-EOF
	meta frequency 100
	${T0}010000000 oncpu 7 7 0 app app 1 main;run;hot
	${T0}020000000 oncpu 7 7 0 app app 1 main;run;hot
	${T0}030000000 oncpu 7 8 1 app worker 1 main;work
	${T0}040000000 oncpu 7 7 0 app app 1 main;run;cold
	${T0}050000000 offcpu-blocked 7 7 0 app app 5000000 main;wait
	EOF
	"$MKSTREAM" <"$T/t.desc" >"$T/t.cpa"
	# on CPU: a sample spans the 10 ms period before its time; hot's two
	# samples are one span; the threads are profiles of their own
	cpa-render --format speedscope --kind oncpu "$T/t.cpa" >"$T/t.json"
	cat >"$T/want" <<-'EOF'
	{"$schema":"https://www.speedscope.app/file-format-schema.json",
	"exporter":"cpa-render","name":"T.CPA","activeProfileIndex":0,
	"shared":{"frames":[{"name":"main"},{"name":"run"},{"name":"hot"},{"name":"work"},{"name":"cold"}]},
	"profiles":[
	{"type":"evented","name":"app (pid 7, tid 7)","unit":"nanoseconds","startValue":0,"events":[{"type":"O","frame":0,"at":0},{"type":"O","frame":1,"at":0},{"type":"O","frame":2,"at":0},{"type":"C","frame":2,"at":20000000},{"type":"C","frame":1,"at":20000000},{"type":"C","frame":0,"at":20000000},{"type":"O","frame":0,"at":30000000},{"type":"O","frame":1,"at":30000000},{"type":"O","frame":4,"at":30000000},{"type":"C","frame":4,"at":40000000},{"type":"C","frame":1,"at":40000000},{"type":"C","frame":0,"at":40000000}],"endValue":40000000},
	{"type":"evented","name":"app (pid 7) worker (tid 8)","unit":"nanoseconds","startValue":20000000,"events":[{"type":"O","frame":0,"at":20000000},{"type":"O","frame":3,"at":20000000},{"type":"C","frame":3,"at":30000000},{"type":"C","frame":0,"at":30000000}],"endValue":30000000}]}
	EOF
	sed -i "s|T.CPA|$T/t.cpa|" "$T/want"
	diff "$T/want" "$T/t.json"
	# a process's threads overlap in time: sampled, in time order
	cpa-render --format speedscope --kind oncpu --profile-by process \
		"$T/t.cpa" >"$T/p.json"
	grep -qx '{"type":"sampled","name":"app (pid 7)","unit":"nanoseconds","samples":\[\[0,1,2\],\[0,3\],\[0,1,4\]\],"weights":\[20000000,10000000,10000000\],"startValue":0,"endValue":40000000}\]}' "$T/p.json"
	# off CPU: the sample's time ends the interval its weight spans
	cpa-render --format speedscope --kind offcpu-blocked "$T/t.cpa" >"$T/o.json"
	grep -q '"frames":\[{"name":"off-CPU blocked"},{"name":"main"},{"name":"wait"}\]' "$T/o.json"
	grep -q '"startValue":0,"events":\[{"type":"O","frame":0,"at":0},.*{"type":"C","frame":0,"at":5000000}\],"endValue":5000000}' "$T/o.json"
	# stored windows sum a second: sampled, with root labels if asked
	cpa-store --dir "$T/store" <"$T/t.cpa"
	cpa-query --dir "$T/store" --from @$T0 --to @$((T0 + 1)) --kind oncpu \
		--format stream | cpa-render --format speedscope --labels comm >"$T/s.json"
	grep -q '{"type":"sampled","name":"app (pid 7, tid 7)","unit":"nanoseconds","samples":\[\[[0-9],[0-9],[0-9],[0-9]\],\[[0-9],[0-9],[0-9],[0-9]\]\],"weights":\[20000000,10000000\]' "$T/s.json"
	grep -q '{"name":"app"}' "$T/s.json"
	# folded text: one profile, in samples
	printf 'main;a 3\nmain;b 2\n' | cpa-render --format speedscope --title t >"$T/f.json"
	grep -qx '{"type":"sampled","name":"t","unit":"none","samples":\[\[0,1\],\[0,2\]\],"weights":\[3,2\],"startValue":0,"endValue":5}\]}' "$T/f.json"
	run cpa-render --format speedscope --profile-by cpu "$T/t.cpa"
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --profile-by 'cpu': expected thread or process"* ]]
}

@test "speedscope: a capture of a two-thread workload opens in speedscope, its frames drawn" {
	need_browser
	require_bpf
	speedscope_install
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30 --threads 1
	cpa-capture --pid "$WL_PID" --freq 199 --duration 2 2>"$T/cap.err" |
		cpa-unwind >"$T/c.cpa"
	cpa-render --format speedscope -o "$T/threads.json" "$T/c.cpa"
	cpa-render --format speedscope --profile-by process -o "$T/procs.json" "$T/c.cpa"
	run node "$BROWSER_DIR/speedscope.test.js" "$SPEEDSCOPE" \
		"$T/threads.json" "$T/procs.json" "$T/speedscope.png"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -s "$T/speedscope.png" ]
	if [ -n "${CPA_DOC_IMAGES:-}" ]; then
		cp "$T/speedscope.png" "$CPA_DOC_IMAGES/render-speedscope.png"
	fi
}
