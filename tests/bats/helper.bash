# Shared set-up for the bats suites. `make check` exports CPA_SRCDIR,
# CPA_BUILDDIR and a PATH with the built tools; run by hand,
#   CPA_BUILDDIR=build bats tests/bats/x.bats
# works from the source tree.

: "${CPA_SRCDIR:=$(cd "$(dirname "${BATS_TEST_FILENAME}")/../.." && pwd)}"
: "${CPA_BUILDDIR:=$CPA_SRCDIR/build}"
case "$CPA_BUILDDIR" in /*) ;; *) CPA_BUILDDIR="$CPA_SRCDIR/$CPA_BUILDDIR" ;; esac
for t in capture unwind store query render serve push supervise; do
	case ":$PATH:" in *":$CPA_BUILDDIR/cpa-$t:"*) ;; *) PATH="$CPA_BUILDDIR/cpa-$t:$PATH" ;; esac
done
PATH="$CPA_SRCDIR/scripts:$PATH"
export CPA_SRCDIR CPA_BUILDDIR PATH
# No test asks a debuginfod server it did not start on loopback: one
# named by the environment would be asked for every stripped object.
unset DEBUGINFOD_URLS
WL="$CPA_BUILDDIR/tests/workloads"

# A pipe fails the test when any stage fails, not only the last: a tool that
# dies (or leaks, under ASan) upstream of grep or wc is a failure. And `run !`
# needs bats 1.5.0. tests/lint-bats checks every .bats file loads this.
set -o pipefail
bats_require_minimum_version 1.5.0

# BPF tests run as root. Where BPF should work (CI sets CPA_REQUIRE_BPF=1)
# a missing capability is a failure, not a skip.
require_bpf() {
	local why=""
	if [ "$(id -u)" -ne 0 ]; then
		why="not root"
	elif [ ! -r /sys/kernel/btf/vmlinux ]; then
		why="kernel has no BTF (/sys/kernel/btf/vmlinux)"
	fi
	if [ -n "$why" ]; then
		if [ "${CPA_REQUIRE_BPF:-0}" = 1 ]; then
			echo "BPF required (CPA_REQUIRE_BPF=1) but unavailable: $why" >&2
			return 1
		fi
		skip "BPF unavailable: $why"
	fi
	ensure_tracefs
}

# skip_missing WHAT: skips the test for a missing tool or package, except
# under CI (CI=true), where scripts/install-deps provides every one of them
# and a missing one is a failure.
skip_missing() {
	if [ "${CI:-}" = true ]; then
		echo "required under CI (scripts/install-deps provides it): $1" >&2
		return 1
	fi
	skip "$1"
}

# part_built NAME: false when configure left the optional part NAME out
# (configure --without-NAME). A setup_file, where bats cannot skip, returns
# early on it: `part_built ncurses || return 0`; each test's setup then
# skips with require_part.
part_built() {
	[[ " ${CPA_WITHOUT:-} " != *" $1 "* ]]
}

# require_part NAME: skips the test when NAME was left out, saying so.
require_part() {
	part_built "$1" || skip "cpa built --without-$1"
}

# midday_tz: exports a TZ in which it is now about noon, so a test that
# names times of day (HH:MM, "today") a few minutes back never crosses
# midnight, whenever it runs.
midday_tz() {
	local h
	h=$(date -u +%-H)
	TZ=$(printf 'CPA%+d' $((h - 12)))
	export TZ
}

ensure_tracefs() {
	if [ ! -d /sys/kernel/tracing/events ]; then
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
	fi
}

# wait_for TIMEOUT_S CMD...: polls CMD every 50 ms until it succeeds.
wait_for() {
	local timeout=$1; shift
	local deadline=$(( $(date +%s%N) + timeout * 1000000000 ))
	until "$@"; do
		if [ "$(date +%s%N)" -gt "$deadline" ]; then
			echo "timed out after ${timeout}s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# start_workload OUTFILE CMD...: starts CMD in the background and waits
# for its "ready PID" line; sets WL_PID.
start_workload() {
	local out=$1; shift
	"$@" >"$out" 2>&1 3>&- &
	WL_BG_PIDS="${WL_BG_PIDS:-} $!"
	wait_for 10 grep -q '^ready ' "$out"
	WL_PID=$(awk '/^ready /{print $2; exit}' "$out")
}

# must_fail CMD...: CMD must exit non-zero, and not by a signal. A bare
# `! CMD` never fails a test: bash exempts `!` from set -e. Unlike `run !`
# it leaves $output alone.
must_fail() {
	local rc=0
	"$@" || rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "expected to fail: $*" >&2
		return 1
	fi
	if [ "$rc" -gt 128 ]; then
		echo "died of signal $(( rc - 128 )): $*" >&2
		return 1
	fi
}

kill_workloads() {
	local p
	for p in ${WL_BG_PIDS:-}; do kill "$p" 2>/dev/null || true; done
	for p in ${WL_BG_PIDS:-}; do wait "$p" 2>/dev/null || true; done
	WL_BG_PIDS=""
}

# share_with_chain FOLDED PATTERN CHAIN: prints the percentage of the
# weight of lines matching PATTERN whose stack contains CHAIN (a
# ;-separated run of frames, in order).
share_with_chain() {
	awk -v pat="$2" -v chain="$3" '
		$0 ~ pat {
			n = split($0, f, " "); c = f[n]; total += c
			s = substr($0, 1, length($0) - length(c) - 1)
			if (index(";" s ";", ";" chain ";")) hit += c
		}
		END { if (total == 0) print 0; else printf "%d\n", 100 * hit / total }' "$1"
}
