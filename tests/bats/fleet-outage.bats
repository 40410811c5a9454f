#!/usr/bin/env bats
# fleet.bats's scenario with ClickHouse stopped for a whole minute
# mid-stream, and every pusher killed with -9 during the outage and again
# after it: the fleet's totals are still the hosts' exactly, no block
# twice. Not in make check (its budget); .ci/run runs it.
load helper
load store_helper
load fleet_helper

setup_file() {
	require_bpf
	require_clickhouse
	[ -n "$(cgroup2_root)" ] || skip "no cgroup2 hierarchy mounted"
	fleet_scenario 60 70
}

teardown_file() {
	fleet_teardown
}

@test "fleet-outage: after 60 s without ClickHouse and two kills -9, each stack's total is the hosts' sum" {
	check_fleet_totals
}

@test "fleet-outage: no block is in ClickHouse twice" {
	check_no_duplicates
}
