#!/usr/bin/env bats
# 50 clients polling cpa-serve for 30 s while a job runs; in make
# check-long, as it does not fit make check's time budget.
load helper
load serve_helper
load serve_load

@test "serve load: 50 clients polling for 30 s while a job runs: all 200, memory flat" {
	load_test 30
}
