#!/usr/bin/env bats
# The fleet's history in ClickHouse: two clickhouse-server shards of the
# suite's own behind Distributed tables, three hosts (real captures of
# known workloads, one in a container's cgroup) pushing through cpa-push,
# ClickHouse stopped mid-stream and every pusher killed with -9 twice.
# What ClickHouse holds is compared with its own SQL answers against the
# hosts' local queries. One run serves every test (setup_file); the
# 60-second outage is fleet-outage.bats (check-long, run by .ci/run).
load helper
load store_helper
load fleet_helper
load serve_helper

setup_file() {
	require_bpf
	require_clickhouse
	[ -n "$(cgroup2_root)" ] || skip "no cgroup2 hierarchy mounted"
	fleet_scenario 3 12
}

teardown_file() {
	fleet_teardown
}

setup() {
	F=$BATS_FILE_TMPDIR
	T=$BATS_TEST_TMPDIR
}

@test "fleet: each stack's total over both shards is the sum of the hosts' local queries" {
	check_fleet_totals
}

@test "fleet: no block is in ClickHouse twice after the outage and two kills -9" {
	check_no_duplicates
}

@test "fleet: a host's rows are its store's, on one shard; both shards hold hosts" {
	local h
	for h in web-1 web-2 db-1; do
		ch_folded "host = '$h'" >"$T/$h.fleet"
		cpa-query --dir "$F/$h" | LC_ALL=C sort >"$T/$h.local"
		same_lines "$T/$h.fleet" "$T/$h.local"
	done
	[ "$(ch_sql "$CH/s1" "SELECT groupUniqArray(host) FROM cpa.samples_local")" = "['web-1']" ]
	run ch_sql "$CH/s2" "SELECT arraySort(groupUniqArray(host)) FROM cpa.samples_local"
	[ "$output" = "['db-1','web-2']" ]
}

@test "fleet: a process's and a container's rows are exactly theirs" {
	local id
	id=$(cat "$F/container")
	ch_folded "comm = 'chain_fp'" >"$T/comm.fleet"
	cpa-query --dir "$F/web-1" --comm chain_fp >"$T/c1"
	cpa-query --dir "$F/db-1" --comm chain_fp >"$T/c2"
	sum_folded "$T/c1" "$T/c2" >"$T/comm.local"
	[ -s "$T/c1" ]
	[ -s "$T/c2" ]
	same_lines "$T/comm.fleet" "$T/comm.local"
	ch_folded "container = '$id'" >"$T/ct.fleet"
	cpa-query --dir "$F/db-1" --container "$id" | LC_ALL=C sort >"$T/ct.local"
	[ -s "$T/ct.local" ]
	same_lines "$T/ct.fleet" "$T/ct.local"
	# the container's rows name its cgroup; no other host has any
	[ "$(ch_sql "$CH/s1" "SELECT groupUniqArray(host) FROM cpa.samples WHERE container = '$id'")" = "['db-1']" ]
	[ "$(ch_sql "$CH/s1" "SELECT any(cgroup) FROM cpa.samples WHERE container = '$id'")" = "/system.slice/docker-$id.scope" ]
}

@test "fleet: an unreachable ClickHouse is one line per retry, naming server and statement" {
	local h url
	url=$(cat "$CH/s1/url")
	for h in web-1 web-2 db-1; do
		grep -q 'retrying in [0-9]*s$' "$F/$h.push.err"
		if grep -v "^cpa-push: $url: [A-Z][A-Z]* [^:]*: .*; retrying in [0-9]*s\$" "$F/$h.push.err" >&2; then
			echo "lines of $h's pusher above are not retry lines" >&2
			false
		fi
	done
}

@test "fleet: tables missing are created by cpa-push itself, on a server without cluster" {
	# --once: what the store holds now, then exit
	cpa-push --clickhouse "$(cat "$CH/s2/url")" --database solo \
		--dir "$F/web-2" --cursor "$T/cursor" --host web-2 --once \
		2>"$T/err" 3>&-
	[ ! -s "$T/err" ]
	[ "$(ch_sql "$CH/s2" "SELECT sum(value) FROM solo.samples")" = "$(local_total web-2)" ]
	[ "$(ch_sql "$CH/s2" "SELECT engine FROM system.tables WHERE database = 'solo' AND name = 'samples'")" = MergeTree ]
	[ "$(ch_sql "$CH/s2" "SELECT engine FROM system.tables WHERE database = 'solo' AND name = 'stacks'")" = ReplacingMergeTree ]
	grep -qE '^[0-9]{8}T[0-9]{6}Z(-[0-9]+)? [0-9]+$' "$T/cursor"
	# and again: nothing new, nothing twice
	cpa-push --clickhouse "$(cat "$CH/s2/url")" --database solo \
		--dir "$F/web-2" --cursor "$T/cursor" --host web-2 --once
	[ "$(ch_sql "$CH/s2" "SELECT sum(value) FROM solo.samples")" = "$(local_total web-2)" ]
}

@test "fleet: retention drops the oldest day partition and only it" {
	local day now d before s1 s2
	s1=$(cat "$CH/s1/url")
	s2=$(cat "$CH/s2/url")
	now=$(date +%s)
	day=$(( now / 86400 ))
	for d in 5 4 3; do
		"$CPA_BUILDDIR/tests/tools/gen-stream" --start $(( (day - d) * 86400 + 3600 )) \
			--duration 5 --rate 20 | cpa-store --dir "$F/old-1"
	done
	# a database of its own, so the other tests' fleet is the three hosts
	cpa-push --clickhouse "$s2" --cluster cpa_test --database aged --init 2>/dev/null
	cpa-push --clickhouse "$s1" --cluster cpa_test --database aged --init
	host_push old-1 --database aged
	aged_total() {
		[ "$(ch_sql "$CH/s1" "SELECT sum(value) FROM aged.samples")" = "$(local_total old-1)" ]
	}
	wait_for 60 aged_total
	host_push_kill old-1
	days() {
		ch_sql "$CH/s1" "SELECT arraySort(groupUniqArray(toUInt32(day))) FROM aged.samples"
	}
	[ "$(days)" = "[$((day - 5)),$((day - 4)),$((day - 3))]" ]
	before=$(ch_sql "$CH/s1" "SELECT sum(value) FROM cpa.samples")
	cpa-push --clickhouse "$s1" --cluster cpa_test --database aged --retain 4d
	cpa-push --clickhouse "$s2" --cluster cpa_test --database aged --retain 4d
	[ "$(days)" = "[$((day - 4)),$((day - 3))]" ]
	# the days of the other database, today's, are untouched
	cpa-push --clickhouse "$s1" --cluster cpa_test --retain 4d
	[ "$(ch_sql "$CH/s1" "SELECT sum(value) FROM cpa.samples")" = "$before" ]
}

@test "fleet: a wrong URL, a server's error, a table with wrong columns: one line, exit 1" {
	local url port
	url=$(cat "$CH/s1/url")
	port=$(free_port)
	run cpa-push --clickhouse "http://127.0.0.1:$port" --init
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "cpa-push: http://127.0.0.1:$port: SELECT "*": cannot connect: Connection refused" ]]
	run cpa-push --clickhouse "http://nosuch@${url#http://}" --init
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "cpa-push: http://nosuch@${url#http://}: SELECT "*": HTTP "[0-9]*": "*nosuch* ]]
	ch_sql "$CH/s1" "CREATE DATABASE wrong"
	ch_sql "$CH/s1" "CREATE TABLE wrong.samples (day Date, time UInt64,
		stack String) ENGINE = MergeTree PARTITION BY day ORDER BY time"
	run cpa-push --clickhouse "$url" --database wrong --init
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "cpa-push: $url: wrong.samples has no column duration UInt64: "* ]]
	# and pushing into it is refused the same way, not retried
	run cpa-push --clickhouse "$url" --database wrong --dir "$F/web-1" \
		--cursor "$BATS_TEST_TMPDIR/c"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"wrong.samples has no column duration UInt64"* ]]
	run cpa-push --clickhouse "ftp://x" --init
	[ "$status" -eq 2 ]
}

@test "fleet: docs/fleet.md's schema is the SQL cpa-push --init runs" {
	sed -n '/^```sql schema/,/^```$/p' "$CPA_SRCDIR/docs/fleet.md" | sed '1d;$d' >"$T/doc"
	cpa-push --print-schema --cluster fleet >"$T/sql"
	[ -s "$T/sql" ]
	diff "$T/doc" "$T/sql"
}

@test "fleet: cpa monitor with push = URL in cpa.conf runs cpa-push as a stage, its lag in cpa status" {
	local url mon out
	url=$(cat "$CH/s1/url")
	export CPA_RUN_DIR=$T/run CPA_CONFIG=$T/cpa.conf CPA_STATS_INTERVAL=1s
	printf 'push = %s\ncluster = cpa_test\nhost = mon-1\ndatabase = mon\nbatch-wait = 1s\n' \
		"$url" >"$T/cpa.conf"
	# the other shard's tables; the stage makes its own server's
	cpa-push --clickhouse "$(cat "$CH/s2/url")" --cluster cpa_test --database mon --init 2>/dev/null
	cpa monitor --dir "$T/store" --flush 1s \
		2>"$T/monitor.err" 3>&- &
	mon=$!
	pushed() { [ "$(ch_sql "$CH/s1" "SELECT count() FROM mon.samples WHERE host = 'mon-1'" 2>/dev/null)" -gt 0 ]; }
	if ! wait_for 90 pushed; then
		cat "$T/monitor.err" >&2
		kill "$mon"
		false
	fi
	lag_reported() { cpa status | grep -E '^push .* lag_s=[0-9]+' >/dev/null; }
	wait_for 20 lag_reported
	out=$(tr '\0' ' ' <"/proc/$(sed -n 's/^push=//p' "$CPA_RUN_DIR/stages")/cmdline")
	kill -TERM "$mon"
	wait "$mon" || true
	echo "push stage: $out"
	[[ "$out" == *"cpa-push "*"--clickhouse=$url"* ]]
	[[ "$out" == *"--dir=$T/store"* ]]
}

# ---- fleet queries: cpa-query --clickhouse against the hosts' stores ----

# The local query of all three stores read as one.
all_local() {
	cpa-query --dir "$F/web-1" --dir "$F/web-2" --dir "$F/db-1" "$@"
}

# The first second of web-1's windows, epoch seconds.
t0() {
	ch_sql "$CH/s1" "SELECT intDiv(min(time), 1000000000) FROM cpa.samples WHERE host = 'web-1'"
}

@test "fleet query: the fleet's folded stacks are the hosts' stores', all and by --host" {
	local url h
	url=$(cat "$CH/s1/url")
	cpa-query --clickhouse "$url" | LC_ALL=C sort >"$T/fleet"
	all_local | LC_ALL=C sort >"$T/local"
	same_lines "$T/fleet" "$T/local"
	ch_folded >"$T/sql"
	same_lines "$T/fleet" "$T/sql"
	for h in web-1 web-2 db-1; do
		cpa-query --clickhouse "$url" --host "$h" | LC_ALL=C sort >"$T/$h.fleet"
		cpa-query --dir "$F/$h" | LC_ALL=C sort >"$T/$h.local"
		[ -s "$T/$h.local" ]
		same_lines "$T/$h.fleet" "$T/$h.local"
	done
	cpa-query --clickhouse "$url" --host 'web-[0-9]' | LC_ALL=C sort >"$T/web"
	cpa-query --dir "$F/web-1" --dir "$F/web-2" | LC_ALL=C sort >"$T/web.local"
	same_lines "$T/web" "$T/web.local"
	run cpa-query --clickhouse "$url" --host 'nosuch*'
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "fleet query: --comm, --container, --from/--to, --diff-from/--diff-to and --top are the local query's" {
	local url id t
	url=$(cat "$CH/s1/url")
	id=$(cat "$F/container")
	t=$(t0)
	cpa-query --clickhouse "$url" --comm chain_fp | LC_ALL=C sort >"$T/a"
	all_local --comm chain_fp | LC_ALL=C sort >"$T/b"
	[ -s "$T/b" ]
	same_lines "$T/a" "$T/b"
	cpa-query --clickhouse "$url" --container "${id:0:12}" --labels comm,container | LC_ALL=C sort >"$T/a"
	all_local --container "${id:0:12}" --labels comm,container | LC_ALL=C sort >"$T/b"
	grep -q "^chain_fp;\[container $id\];" "$T/b"
	same_lines "$T/a" "$T/b"
	cpa-query --clickhouse "$url" --from "@$((t + 2))" --to "@$((t + 5))" | LC_ALL=C sort >"$T/a"
	all_local --from "@$((t + 2))" --to "@$((t + 5))" | LC_ALL=C sort >"$T/b"
	[ -s "$T/b" ]
	same_lines "$T/a" "$T/b"
	cpa-query --clickhouse "$url" --from "@$((t + 4))" --to "@$((t + 8))" \
		--diff-from "@$t" --diff-to "@$((t + 4))" | LC_ALL=C sort >"$T/a"
	all_local --from "@$((t + 4))" --to "@$((t + 8))" \
		--diff-from "@$t" --diff-to "@$((t + 4))" | LC_ALL=C sort >"$T/b"
	grep -q ' [0-9][0-9]* [0-9][0-9]*$' "$T/b"
	same_lines "$T/a" "$T/b"
	cpa-query --clickhouse "$url" --top 5 >"$T/a"
	all_local --top 5 >"$T/b"
	grep -q hot_leaf "$T/b"
	diff "$T/a" "$T/b"
}

@test "fleet query: mem-usage answers what was held at --to, and --growth what grew, as a store does" {
	local url t a
	url=$(cat "$CH/s1/url")
	t=$(( ($(date +%s) - 1200) * 1000000000 ))
	# ten windows: 4 KiB allocated in each, 8 KiB more, 4 KiB freed from the
	# fourth on, and an on-CPU sample each
	for i in 0 1 2 3 4 5 6 7 8 9; do
		echo "$((t + i * 1000000000 + 1000)) mem-usage 10 10 0 memhog memhog 4096 main;alloc_a"
		echo "$((t + i * 1000000000 + 1000)) mem-usage 10 10 0 memhog memhog 8192 main;alloc_b"
		[ "$i" -lt 3 ] || echo "$((t + i * 1000000000 + 2000)) mem-usage+free 10 10 0 memhog memhog 4096 main;alloc_a"
		echo "$((t + i * 1000000000 + 3000)) oncpu 10 10 0 memhog memhog 1 main;spin"
	done | "$CPA_BUILDDIR/tests/tools/mkstream" | cpa-store --dir "$T/mem"
	cpa-push --clickhouse "$(cat "$CH/s2/url")" --cluster cpa_test --database mem --init 2>/dev/null
	cpa-push --clickhouse "$url" --cluster cpa_test --database mem --dir "$T/mem" \
		--host mem-1 --once
	t=$(( t / 1000000000 ))
	for a in "" "--from @$((t + 5))" "--from @$((t + 5)) --growth" "--kind mem-usage --to @$((t + 6))"; do
		# shellcheck disable=SC2086
		cpa-query --clickhouse "$url" --database mem $a | LC_ALL=C sort >"$T/f"
		# shellcheck disable=SC2086
		cpa-query --dir "$T/mem" $a | LC_ALL=C sort >"$T/l"
		echo "== $a"
		cat "$T/l"
		grep -q '^memory usage;memhog;main;alloc_b ' "$T/l"
		same_lines "$T/f" "$T/l"
	done
}

@test "fleet query: --labels host puts each host's name first in its stacks" {
	local url h
	url=$(cat "$CH/s1/url")
	cpa-query --clickhouse "$url" --labels comm,host >"$T/all"
	grep -q '^chain_fp;\[host web-1\];.*;hot_leaf ' "$T/all"
	grep -q '^chain_fp;\[host db-1\];' "$T/all"
	grep -q '^chain_nofp;\[host web-2\];' "$T/all"
	for h in web-1 web-2 db-1; do
		grep -F ";[host $h];" "$T/all" | sed "s/;\[host $h\];/;/" | LC_ALL=C sort >"$T/$h.fleet"
		cpa-query --dir "$F/$h" | LC_ALL=C sort >"$T/$h.local"
		same_lines "$T/$h.fleet" "$T/$h.local"
	done
	run cpa-query --dir "$F/web-1" --labels host
	[ "$status" -eq 2 ]
}

@test "fleet query: the stream and pprof go into cpa-render and go tool pprof as a host's do" {
	local url
	url=$(cat "$CH/s1/url")
	cpa-query --clickhouse "$url" --last 1h --comm chain_fp | cpa-render >"$T/fleet.svg"
	xmllint --noout "$T/fleet.svg"
	grep -q 'hot_leaf' "$T/fleet.svg"
	cpa-query --clickhouse "$url" --format stream | cpa-render --format folded | LC_ALL=C sort >"$T/a"
	all_local --format stream | cpa-render --format folded | LC_ALL=C sort >"$T/b"
	same_lines "$T/a" "$T/b"
	# the terminal UI's sums, each group cut to what is wide enough: of
	# one host (several stores read as one are summed store by store)
	cpa-query --clickhouse "$url" --host web-1 --format stream --split-every 2s \
		--prune 20 | cpa-render --format folded | LC_ALL=C sort >"$T/a"
	cpa-query --dir "$F/web-1" --format stream --split-every 2s --prune 20 |
		cpa-render --format folded | LC_ALL=C sort >"$T/b"
	[ -s "$T/b" ]
	same_lines "$T/a" "$T/b"
	cpa-query --clickhouse "$url" --format pprof >"$T/f.pb"
	go tool pprof -raw "$T/f.pb" >"$T/raw" 2>&1
	grep -q hot_leaf "$T/raw"
	cpa show --clickhouse "$url" --comm chain_nofp -o "$T/show.svg"
	grep -q 'chain_nofp' "$T/show.svg"
}

@test "fleet query: cpa show --tui --clickhouse browses the fleet" {
	command -v tmux >/dev/null || skip_missing "tmux not installed"
	local url sock=cpa-fleet-$$
	url=$(cat "$CH/s1/url")
	printf '%q ' env TZ=UTC PATH="$PATH" cpa show --tui --clickhouse "$url" --comm chain_fp >"$T/cmd"
	echo '; echo "tui-exit=$?"; exec sleep 600' >>"$T/cmd"
	tmux -L "$sock" -f /dev/null new-session -d -s t -x 120 -y 40 "bash $T/cmd"
	tui_has() { tmux -L "$sock" capture-pane -p -t t | grep -E -- "$1" >/dev/null; }
	if ! wait_for 20 tui_has 'chain_fp'; then
		tmux -L "$sock" capture-pane -p -t t >&2
		tmux -L "$sock" kill-server
		false
	fi
	tmux -L "$sock" send-keys -t t q
	wait_for 10 tui_has 'tui-exit=0'
	tmux -L "$sock" kill-server
}

@test "fleet query: cpa-serve --clickhouse answers /v1/history for the fleet, host= choosing hosts" {
	local url
	url=$(cat "$CH/s1/url")
	serve_start "$T/serve" --clickhouse "$url"
	[ "$(BODY_FILE=$T/all api GET "/v1/history?format=folded")" = 200 ]
	all_local | LC_ALL=C sort >"$T/all.local"
	LC_ALL=C sort "$T/all" >"$T/all.sorted"
	same_lines "$T/all.sorted" "$T/all.local"
	[ "$(BODY_FILE=$T/h api GET "/v1/history?host=web-*&comm=chain_fp&format=folded")" = 200 ]
	cpa-query --dir "$F/web-1" --comm chain_fp | LC_ALL=C sort >"$T/h.local"
	LC_ALL=C sort "$T/h" >"$T/h.sorted"
	[ -s "$T/h.local" ]
	same_lines "$T/h.sorted" "$T/h.local"
	[ "$(BODY_FILE=$T/svg api GET "/v1/history?host=db-1&format=svg")" = 200 ]
	xmllint --noout "$T/svg"
	serve_stop
}

@test "fleet query: a wrong URL, an error answer, what the fleet does not keep: one line" {
	local url port
	url=$(cat "$CH/s1/url")
	port=$(free_port)
	run cpa-query --clickhouse "http://127.0.0.1:$port"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "cpa-query: http://127.0.0.1:$port: SELECT ... FROM cpa.samples"*": cannot connect: Connection refused" ]]
	run cpa-query --clickhouse "$url" --database nosuch
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "cpa-query: $url: SELECT ... FROM nosuch.samples"*"HTTP "*nosuch* ]]
	run cpa-query --clickhouse "$url" --pid 1
	[ "$status" -eq 2 ]
	[[ "$output" == *"the fleet keeps no pids"* ]]
	run cpa-query --clickhouse "$url" --dir "$F/web-1"
	[ "$status" -eq 2 ]
}
