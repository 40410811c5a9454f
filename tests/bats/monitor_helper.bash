# Shared by monitor.bats and monitor-faults.bats: a `cpa monitor` in the
# test's own run directory, and what its stages report.

setup() {
	T=$BATS_TEST_TMPDIR
	export CPA_RUN_DIR=$T/run CPA_CONFIG=$T/none.conf CPA_STATS_INTERVAL=1s
	STORE=$T/store
}

teardown() {
	[ -n "${MON:-}" ] && kill -TERM "$MON" 2>/dev/null && wait "$MON" 2>/dev/null
	kill_workloads
}

stage_pid() { sed -n "s/^$1=//p" "$CPA_RUN_DIR/stages" 2>/dev/null; }
restarts() { sed -n 's/^restarts=//p' "$CPA_RUN_DIR/stages" 2>/dev/null; }
restarted_once() { [ "$(restarts)" = 1 ]; }
# stage_args STAGE: the command line of the stage, once it runs the tool.
stage_runs() { tr '\0' ' ' <"/proc/$(stage_pid "$1")/cmdline" | grep "cpa-$1 " >/dev/null; }
stage_args() {
	wait_for 10 stage_runs "$1" >&2
	tr '\0' ' ' <"/proc/$(stage_pid "$1")/cmdline"
}
# reported STAGE SECONDS: the stage's statistics, written by its current
# process, say it has run SECONDS.
reported() {
	local f=$CPA_RUN_DIR/$1.stats
	[ -f "$CPA_RUN_DIR/store/$1.stats" ] && f=$CPA_RUN_DIR/store/$1.stats
	[ "$(sed -n 's/^pid=//p' "$f" 2>/dev/null)" = "$(stage_pid "$1")" ] &&
		awk -F= -v s="$2" '/^uptime_s=/ { ok = $2 >= s } END { exit !ok }' "$f"
}
# took_samples STAGE: the stage's statistics count samples.
took_samples() {
	local f=$CPA_RUN_DIR/$1.stats
	[ -f "$CPA_RUN_DIR/store/$1.stats" ] && f=$CPA_RUN_DIR/store/$1.stats
	awk -F= '/^samples=/ { ok = $2 > 0 } END { exit !ok }' "$f" 2>/dev/null
}
store_has() { cpa-query --dir "$STORE" --from "$1" --to now 2>/dev/null | grep "$2" >/dev/null; }
windows_stored() { cpa-query --dir "$STORE" --list 2>/dev/null | awk '$1 ~ /^\// && $(NF-2) > 0 { ok = 1 } END { exit !ok }'; }

start_monitor() {
	cpa monitor --dir "$STORE" --flush 1s "$@" 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
}
