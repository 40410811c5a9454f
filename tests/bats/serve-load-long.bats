#!/usr/bin/env bats
# 50 clients polling cpa-serve for 30 s while a job runs (the 5 s run is
# serve-load.bats, in make check).
load helper
load serve_helper
load serve_load

@test "serve load: 50 clients polling for 30 s while a job runs: all 200, memory flat" {
	load_test 30
}
