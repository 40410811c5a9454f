#!/usr/bin/env bats
# 50 clients polling cpa-serve for 5 s while a job runs (the 30 s run is
# serve-load-long.bats, in make check-long).
load helper
load serve_helper
load serve_load

@test "serve load: 50 clients polling for 5 s while a job runs: all 200, memory flat" {
	load_test 5
}
