# Shared set-up for the bats suites. `make check` exports CPA_SRCDIR,
# CPA_BUILDDIR and a PATH with the built tools; run by hand,
#   CPA_BUILDDIR=build bats tests/bats/x.bats
# works from the source tree.

: "${CPA_SRCDIR:=$(cd "$(dirname "${BATS_TEST_FILENAME}")/../.." && pwd)}"
: "${CPA_BUILDDIR:=$CPA_SRCDIR/build}"
case "$CPA_BUILDDIR" in /*) ;; *) CPA_BUILDDIR="$CPA_SRCDIR/$CPA_BUILDDIR" ;; esac
for t in capture unwind store query render; do
	case ":$PATH:" in *":$CPA_BUILDDIR/cpa-$t:"*) ;; *) PATH="$CPA_BUILDDIR/cpa-$t:$PATH" ;; esac
done
PATH="$CPA_SRCDIR/scripts:$PATH"
export CPA_SRCDIR CPA_BUILDDIR PATH
WL="$CPA_BUILDDIR/tests/workloads"

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
