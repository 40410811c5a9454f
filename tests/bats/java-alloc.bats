#!/usr/bin/env bats
# cpa-capture --java-alloc and --java-live: the JVMTI agent loaded into a
# running OpenJDK 17 through the attach mechanism, against a workload
# whose paths allocate known shares (tests/workloads/JavaAlloc.java).
# One JVM serves two captures in turn: allocations (a 3:1 ratio), then
# live objects through a second capture that finds the agent loaded.
# The first capture also takes the Temurin 25 of the CI image, where it
# is installed; another JVM refuses attach meanwhile.
load helper

JDK17=/usr/lib/jvm/java-17-openjdk-amd64
JDK25=/usr/lib/jvm/temurin-25-jdk-amd64

# jvm NAME JDK FLAGS...: a JavaAlloc reading commands from the fifo
# NAME.in (held open by a sleeper), its pid in NAME.pid
jvm() {
	local name=$1 jdk=$2
	shift 2
	mkfifo "$T/$name.in"
	( sleep 300 > "$T/$name.in" 3>&- &
	  echo $! > "$T/$name.holder" )
	"$jdk/bin/java" -Xmx256m -XX:+UseSerialGC "$@" -cp "$T/cls" \
		cpatest.JavaAlloc < "$T/$name.in" > "$T/$name.out" 2>&1 3>&- &
	echo $! > "$T/$name.pid"
}

# jvm_ns NAME: the same in mount and pid namespaces of its own, with a
# /tmp of its own and the build's agent directory hidden, so that the
# agent has to be copied in; its host pid in NAME.pid
jvm_ns() {
	local name=$1
	mkfifo "$T/$name.in"
	( sleep 300 > "$T/$name.in" 3>&- &
	  echo $! > "$T/$name.holder" )
	mkdir "$T/$name.tmp"
	unshare --mount --pid --fork --propagation private sh -c \
		"mount -t tmpfs none '$T/$name.tmp' &&
		mount -t tmpfs none '$CPA_BUILDDIR/cpa-jvmti' &&
		cp -r '$T/cls' '$T/$name.tmp/' && mount --bind '$T/$name.tmp' /tmp &&
		exec '$JDK17/bin/java' -Xmx256m -XX:+UseSerialGC -cp /tmp/cls \
		cpatest.JavaAlloc" < "$T/$name.in" > "$T/$name.out" 2>&1 3>&- &
	echo $! > "$T/$name.unshare"
}

# run_cmd NAME CMD: one workload command, waited for
run_cmd() {
	echo "$2" > "$T/$1.in"
	wait_for 60 grep -q "^done ${2%% *}" "$T/$1.out"
}

# cap NAME ARGS...: a capture in the background, stream in NAME.cpa
cap() {
	local name=$1
	shift
	cpa-capture --no-oncpu -v "$@" > "$T/$name.cpa" 2> "$T/$name.err" 3>&- &
	echo $! > "$T/$name.cpid"
}

cap_stop() {
	local rc=0
	kill -INT "$(cat "$T/$1.cpid")"
	wait "$(cat "$T/$1.cpid")" || rc=$?
	echo "$rc" > "$T/$1.status"
}

# agents_sampling CAPTURE PID...: the capture says each JVM's agent samples
agents_sampling() {
	local c=$1 p
	shift
	for p in "$@"; do
		grep -q "^cpa-capture: pid $p: Java agent sampling " "$T/$c.err" ||
			return 1
	done
}

setup_file() {
	part_built jvmti || return 0
	require_bpf
	export T=$BATS_FILE_TMPDIR
	if [ ! -x "$JDK17/bin/javac" ]; then
		[ "${CI:-}" = true ] && return 1
		return 0
	fi
	"$JDK17/bin/javac" --release 17 -d "$T/cls" \
		"$CPA_SRCDIR/tests/workloads/JavaAlloc.java"
	local pids
	jvm wl "$JDK17"
	jvm refuse "$JDK17" -XX:+DisableAttachMechanism
	[ -x "$JDK25/bin/java" ] && jvm wl25 "$JDK25"
	jvm_ns ns
	wait_for 60 grep -q '^ready ' "$T/wl.out"
	wait_for 60 grep -q '^ready ' "$T/refuse.out"
	cap refused --java-alloc "$(cat "$T/refuse.pid")" --duration 1
	wait_for 60 grep -q '^ready ' "$T/ns.out"
	pgrep -P "$(cat "$T/ns.unshare")" > "$T/ns.pid"
	pids=$(cat "$T/wl.pid"),$(cat "$T/ns.pid")
	if [ -e "$T/wl25.pid" ]; then
		wait_for 60 grep -q '^ready ' "$T/wl25.out"
		pids=$pids,$(cat "$T/wl25.pid")
	fi

	cap alloc --java-alloc "$pids" --java-sample-bytes 8K
	# the agents load one after another: each JVM is sent its work once
	# its own agent samples
	wait_for 60 agents_sampling alloc ${pids//,/ }
	[ -e "$T/wl25.pid" ] && echo "ratio 64" > "$T/wl25.in"
	echo "ratio 64" > "$T/ns.in"
	run_cmd wl "ratio 64"
	wait_for 60 grep -q "^done ratio" "$T/ns.out"
	[ -e "$T/wl25.pid" ] && wait_for 60 grep -q "^done ratio" "$T/wl25.out"
	cap_stop alloc

	cap live --java-live "$(cat "$T/wl.pid")" --java-sample-bytes 8K
	wait_for 60 agents_sampling live "$(cat "$T/wl.pid")"
	run_cmd wl "live 16"
	cap_stop live
	grep -c libcpa-jvmti "/proc/$(cat "$T/wl.pid")/maps" > "$T/maps.count" || true

	local rc=0
	wait "$(cat "$T/refused.cpid")" || rc=$?
	echo "$rc" > "$T/refused.status"
	for c in alloc live refused; do
		cpa-unwind < "$T/$c.cpa" > "$T/$c.sym" 2> "$T/$c.unwind.err"
	done
	cpa-store --dir "$T/store" < "$T/live.sym"
}

teardown_file() {
	local f
	for f in "$T"/*.cpid "$T"/*.pid "$T"/*.holder "$T"/*.unshare; do
		[ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	return 0
}

setup() {
	require_part jvmti
	require_bpf
	[ -x "$JDK17/bin/javac" ] || skip_missing "openjdk-17-jdk-headless not installed"
}

# bytes CAPTURE KIND METHOD [PID]: the bytes of that kind under METHOD
bytes() {
	cpa-render --format folded --kind "$2" --labels pid < "$T/$1.sym" |
		awk -v m="cpatest.JavaAlloc.$3_[j]" -v pid="${4:-}" '
			pid != "" && index($0, "[pid " pid "];") == 0 { next }
			index($0, ";" m ";") { s += $NF } END { print s + 0 }'
}

# ratio_within PID: threeParts against onePart, 3:1 within 10%, and
# 64 MiB in all within 10%
ratio_within() {
	local three one d
	three=$(bytes alloc java-alloc threeParts "$1")
	one=$(bytes alloc java-alloc onePart "$1")
	echo "threeParts $three onePart $one"
	[ "$one" -gt 0 ]
	d=$(( three - 3 * one ))
	[ "${d#-}" -le $(( 3 * one / 10 )) ]
	local all=$(( three + one )) want=$(( 64 * 1048576 ))
	d=$(( all - want ))
	[ "${d#-}" -le $(( want / 10 )) ]
}

@test "java-alloc: Temurin 25: two paths allocating 3:1, the ratio within 10%" {
	[ -x "$JDK25/bin/java" ] || skip "no Temurin 25 at $JDK25 (not a Debian package)"
	ratio_within "$(cat "$T/wl25.pid")"
}

@test "java-alloc: two paths allocating 3:1, the ratio within 10%, class and chain named" {
	[ "$(cat "$T/alloc.status")" = 0 ]
	ratio_within "$(cat "$T/wl.pid")"
	# root first: the marker, the process, the Java chain, the class
	grep -q '^Java allocated;java;cpatest\.JavaAlloc\.main_\[j\];cpatest\.JavaAlloc\.ratio_\[j\];cpatest\.JavaAlloc\.threeParts_\[j\];byte\[\]_\[a\] [0-9]*$' \
		< <(cpa-render --format folded --kind java-alloc < "$T/alloc.sym")
}

@test "java-alloc: a JVM in its own mount and pid namespaces gets a copy of the agent in its /tmp; 3:1 within 10%" {
	ratio_within "$(cat "$T/ns.pid")"
	# pid 1 there: the copy and the socket are its /tmp's
	[ -s "/proc/$(cat "$T/ns.pid")/root/tmp/.cpa-jvmti-1.so" ]
	[ -S "/proc/$(cat "$T/ns.pid")/root/tmp/.cpa-jvmti-1" ]
}

@test "java-live: after a GC the path that keeps its objects holds >= 90% of live bytes" {
	[ "$(cat "$T/live.status")" = 0 ]
	local keep all
	keep=$(bytes live java-live keepPath)
	all=$(cpa-render --format folded --kind java-live < "$T/live.sym" |
		awk '{ s += $NF } END { print s + 0 }')
	echo "keepPath $keep of $all live"
	[ "$keep" -gt $(( 16 * 1048576 * 8 / 10 )) ]
	[ $(( keep * 100 / all )) -ge 90 ]
	# the dropped path's objects were freed, each free paired in unwind
	[ "$(bytes live java-alloc dropPath)" -gt $(( 48 * 1048576 * 8 / 10 )) ]
	run ! grep -q 'alloc-table' "$T/live.unwind.err"
}

@test "java-live: through the store, cpa-query --kind java-live answers what is live at the end" {
	local keep all
	cpa-query --dir "$T/store" --kind java-live > "$T/live.query"
	keep=$(awk '/;cpatest\.JavaAlloc\.keepPath_\[j\];/ { s += $NF } END { print s + 0 }' "$T/live.query")
	all=$(awk '{ s += $NF } END { print s + 0 }' "$T/live.query")
	echo "keepPath $keep of $all live"
	[ "$keep" = "$(bytes live java-live keepPath)" ]
	[ $(( keep * 100 / all )) -ge 90 ]
	# drawn in bytes, the class's suffix dropped as the other kinds' are
	cpa-render --kind java-live < "$T/live.sym" > "$T/live.svg"
	grep -q '<title>byte\[\] ([0-9.]* MiB, [0-9.]*%)</title>' "$T/live.svg"
}

@test "java: a second capture reuses the agent the first one loaded" {
	local p
	p=$(cat "$T/wl.pid")
	grep -c "^cpa-capture: pid $p: Java agent loaded in [0-9]* ms\$" "$T/alloc.err" > "$T/loaded.count"
	[ "$(cat "$T/loaded.count")" = 1 ]
	grep -Fx "cpa-capture: pid $p: Java agent already loaded, reused" "$T/live.err"
	run ! grep -q "Java agent loaded" "$T/live.err"
	[ "$(cat "$T/maps.count")" -ge 1 ]
}

@test "java: a JVM that refuses attach: one line naming it, the capture goes on to its end" {
	local p
	p=$(cat "$T/refuse.pid")
	grep -c "^cpa-capture: warning: pid $p: Java allocations: no attach listener came up (run with -XX:+DisableAttachMechanism?)\$" "$T/refused.err" > "$T/refused.count"
	[ "$(cat "$T/refused.count")" = 1 ]
	[ "$(grep -c "pid $p" "$T/refused.err")" = 1 ]
	[ "$(cat "$T/refused.status")" = 0 ]
	[ -s "$T/refused.sym" ]
}
