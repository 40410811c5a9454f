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
	local pid
	cpa-push --clickhouse "$(cat "$CH/s2/url")" --database solo \
		--dir "$F/web-2" --cursor "$T/cursor" --host web-2 \
		--batch-wait 200ms 2>"$T/err" 3>&- &
	pid=$!
	solo_done() {
		[ "$(ch_sql "$CH/s2" "SELECT sum(value) FROM solo.samples" 2>/dev/null)" = "$(local_total web-2)" ]
	}
	wait_for 60 solo_done
	kill "$pid"
	wait "$pid"
	[ "$(ch_sql "$CH/s2" "SELECT engine FROM system.tables WHERE database = 'solo' AND name = 'samples'")" = MergeTree ]
	[ "$(ch_sql "$CH/s2" "SELECT engine FROM system.tables WHERE database = 'solo' AND name = 'stacks'")" = ReplacingMergeTree ]
	grep -qE '^[0-9]{8}T[0-9]{6}Z(-[0-9]+)? [0-9]+$' "$T/cursor"
	[ ! -s "$T/err" ]
}

@test "fleet: retention drops the oldest day partition and only it" {
	local day now d before
	now=$(date +%s)
	day=$(( now / 86400 ))
	for d in 5 4 3; do
		"$CPA_BUILDDIR/tests/tools/gen-stream" --start $(( (day - d) * 86400 + 3600 )) \
			--duration 5 --rate 20 | cpa-store --dir "$F/old-1"
	done
	host_push old-1
	wait_for 60 host_caught_up old-1
	host_push_kill old-1
	days() {
		ch_sql "$CH/s1" "SELECT arraySort(groupUniqArray(toUInt32(day))) FROM cpa.samples WHERE host = 'old-1'"
	}
	[ "$(days)" = "[$((day - 5)),$((day - 4)),$((day - 3))]" ]
	before=$(ch_sql "$CH/s1" "SELECT sum(value) FROM cpa.samples WHERE host != 'old-1'")
	cpa-push --clickhouse "$(cat "$CH/s1/url")" --cluster cpa_test --retain 4d
	cpa-push --clickhouse "$(cat "$CH/s2/url")" --cluster cpa_test --retain 4d
	[ "$(days)" = "[$((day - 4)),$((day - 3))]" ]
	[ "$(ch_sql "$CH/s1" "SELECT sum(value) FROM cpa.samples WHERE host != 'old-1'")" = "$before" ]
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
