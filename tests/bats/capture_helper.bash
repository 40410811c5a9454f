# Shared by the cpa-capture suites: workloads and captures started in the
# background at once, each test asserting on one of them.

load helper

dump() { "$CPA_BUILDDIR/tests/tools/cpa-dump" < "$T/$1.cpa"; }
pidof_wl() { cat "$T/$1.pid"; }

# start_bg NAME CMD...: a workload in the background, waited for "ready"
start_bg() {
	local name=$1; shift
	"$@" > "$T/$name.out" 2>&1 3>&- &
	echo $! > "$T/$name.bgpid"
	wait_for 10 grep -q '^ready ' "$T/$name.out"
	awk '/^ready /{print $2; exit}' "$T/$name.out" > "$T/$name.pid"
}

# cap NAME ARGS...: cpa-capture in the background, stream in NAME.cpa
cap() {
	local name=$1; shift
	cpa-capture "$@" > "$T/$name.cpa" 2> "$T/$name.err" 3>&- &
	echo $! > "$T/$name.cpid"
}

# The feature line is printed once everything is attached.
cap_attached() {
	grep -q '^cpa-capture: kernel ' "$T/$1.err" && return 0
	if ! kill -0 "$(cat "$T/$1.cpid")" 2>/dev/null; then
		echo "capture $1 died:" >&2; cat "$T/$1.err" >&2
		return 2
	fi
	return 1
}

# cap_stop NAME: SIGINT to capture NAME, its exit status in NAME.status
cap_stop() {
	local rc=0
	kill -INT "$(cat "$T/$1.cpid")" 2>/dev/null || true
	wait "$(cat "$T/$1.cpid")" || rc=$?
	echo "$rc" > "$T/$1.status"
}

gone() { ! kill -0 "$1" 2>/dev/null; }

# kill_bg: the workloads start_bg started, for teardown_file
kill_bg() {
	local f
	for f in "$T"/*.bgpid; do
		[ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	return 0
}

# cpa_bg NAME ARGS...: `cpa ARGS` in the background with its own run
# directory, its output in NAME.log; cpa_wait NAME... waits for each,
# its exit status in NAME.status. For suites that run their captures
# at once in setup_file.
cpa_bg() {
	local name=$1; shift
	CPA_RUN_DIR=$T/run.$name cpa "$@" >"$T/$name.log" 2>&1 3>&- &
	echo $! >"$T/$name.cpid"
}

cpa_wait() {
	local name rc
	for name in "$@"; do
		rc=0
		wait "$(cat "$T/$name.cpid")" || rc=$?
		echo "$rc" >"$T/$name.status"
	done
}
