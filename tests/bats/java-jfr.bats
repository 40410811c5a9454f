#!/usr/bin/env bats
# Java without frame pointers and with the JIT's inlining, against two
# truths on the same processes at the same time: the workload's own count
# of the CPU time each path took, and JFR. tests/workloads/JavaInline.java
# runs three workloads whose two paths take 3:1 of their thread's time (an
# inlined chain, a thread pool running two lambdas, LongStream pipelines)
# in four JVMs: OpenJDK 17 and Temurin 25 (where installed), each with the
# default flags and with -XX:+PreserveFramePointer. Each also has
# -XX:+DebugNonSafepoints, which JFR needs to place a sample in inlined
# code (it changes no frame), and records JFR; one cpa capture (999 Hz)
# takes all four, and JFR's samples are read for its window only.
#
# Checked per JVM and workload: >= 95% of the thread's samples in Java
# carry the whole chain, from the thread's first frame through every
# method the JIT inlined to the leaf; the hot path's share of the two
# paths is within 2 points of the workload's count; each path's share of
# the thread's samples is within 2 points of JFR's.
#
# How many samples: the capture runs until every workload has had 2 s of
# CPU (about 2000 samples each at 999 Hz; at most 100 s on a loaded host),
# and JFR takes what it can in that time, at most one sample a
# millisecond per thread and on a loaded 2-CPU host far fewer. A share of
# n samples has a binomial noise of 100 * sqrt(p(1-p)/n) points: about 1
# point at n = 2000, so a bare 2-point bound would fail one run in twenty
# by chance, and 2 points at 3 standard deviations would need 20000
# samples of each of twelve workloads, minutes of this host. Each bound
# is therefore 2 points plus three standard deviations of the shares
# compared (from the run's own counts, printed; tests/tools/java-shares
# computes them): the test fails on a path cpa gets wrong by 2 points
# beyond its noise, and bench/java-shares measures the 2-point goal itself
# with ten times the samples. The file takes 40 to 60 s on an idle host.
load helper

JDK17=/usr/lib/jvm/java-17-openjdk-amd64
JDK25=/usr/lib/jvm/temurin-25-jdk-amd64
WARMUP=6	# s of each workload's life before the capture starts
CPU_NS=2000000000	# CPU time each workload is sampled for: the
			# capture ends when every one has had it
MAX_SECS=100		# or after this, however loaded the host

# jvm_start NAME JDK FLAGS...: a JavaInline recording JFR from its start;
# the recording is written when it exits, and read for the capture's
# window only
jvm_start() {
	local name=$1 jdk=$2
	shift 2
	"$jdk/bin/java" -Xmx64m -XX:+UnlockDiagnosticVMOptions \
		-XX:+DebugNonSafepoints "$@" \
		"-XX:StartFlightRecording=dumponexit=true,filename=$T/$name.jfr,settings=$T/sample.jfc" \
		-cp "$T/cls" cpatest.JavaInline 600 \
		> "$T/$name.out" 2>&1 3>&- &
	echo $! > "$T/$name.pid"
	echo "$jdk" > "$T/$name.jdk"
	echo "$name" >> "$T/jvms"
}

# cpu_since NAME: the least CPU time, in ns, any of JVM NAME's workloads
# has had since the capture began (its truth lines)
cpu_since() {
	{ cat "$T/$1.t0"; grep '^truth ' "$T/$1.out" | tail -1; } |
		awk 'NR == 1 { for (i = 2; i <= 7; i++) a[i] = $i; next }
		     { m = -1
		       for (i = 2; i <= 7; i += 2) {
			       d = $i + $(i + 1) - a[i] - a[i + 1]
			       if (m < 0 || d < m) m = d
		       }
		       print m }'
}

sampled_enough() {
	local n c
	for n in $(cat "$T/jvms"); do
		c=$(cpu_since "$n")
		[ "$c" -ge "$CPU_NS" ] || return 1
	done
}

exited() {
	if kill -0 "$1" 2>/dev/null; then
		return 1
	fi
}

# warmed NAME: WARMUP s of truth lines (one each 200 ms) printed
warmed() {
	[ "$(grep -c '^truth ' "$T/$1.out")" -ge $(( WARMUP * 5 )) ]
}

all_recorded() {
	local n
	for n in $(cat "$T/jvms"); do
		[ -s "$T/$n.jfr" ] || return 1
	done
}

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	if [ ! -x "$JDK17/bin/javac" ]; then
		[ "${CI:-}" = true ] && return 1
		return 0
	fi
	"$JDK17/bin/javac" --release 17 -d "$T/cls" \
		"$CPA_SRCDIR/tests/workloads/JavaInline.java"
	# execution samples alone, as often as JFR takes them
	cat > "$T/sample.jfc" <<-'EOF'
	<?xml version="1.0" encoding="UTF-8"?>
	<configuration version="2.0">
	  <event name="jdk.ExecutionSample">
	    <setting name="enabled">true</setting>
	    <setting name="period">1 ms</setting>
	  </event>
	</configuration>
	EOF
	: > "$T/jvms"
	jvm_start d17 "$JDK17"
	jvm_start p17 "$JDK17" -XX:+PreserveFramePointer
	if [ -x "$JDK25/bin/java" ]; then
		jvm_start d25 "$JDK25"
		jvm_start p25 "$JDK25" -XX:+PreserveFramePointer
	fi
	local n
	date +%s > "$T/times"
	for n in $(cat "$T/jvms"); do
		wait_for 120 warmed "$n"
	done
	date +%s >> "$T/times"
	mkfifo "$T/cap.fifo"
	# this file's JVMs alone: other tests' JVMs may run beside them
	local pids
	pids=$(for n in $(cat "$T/jvms"); do cat "$T/$n.pid"; done | paste -sd,)
	cpa-capture --pid "$pids" --freq 999 > "$T/cap.fifo" 2> "$T/cap.err" 3>&- &
	echo $! > "$T/cap.bgpid"
	# as long as a loaded host takes to load libjvm.so, so that no
	# sample goes out before its frames can be named
	cpa-unwind --folded --labels pid,thread --stats -v --load-wait 2s \
		< "$T/cap.fifo" \
		> "$T/java.folded" 2> "$T/unwind.err" 3>&- &
	echo $! > "$T/unwind.bgpid"
	wait_for 30 grep -q '^cpa-capture: kernel ' "$T/cap.err"
	# the window: JFR's events in it, the workloads' counts across it
	date +%T.%3N > "$T/window"
	for n in $(cat "$T/jvms"); do
		grep '^truth ' "$T/$n.out" | tail -1 > "$T/$n.t0"
	done
	wait_for "$MAX_SECS" sampled_enough || true
	for n in $(cat "$T/jvms"); do
		grep '^truth ' "$T/$n.out" | tail -1 > "$T/$n.t1"
	done
	date +%T.%3N >> "$T/window"
	kill -INT "$(cat "$T/cap.bgpid")"
	local rc=0
	wait "$(cat "$T/cap.bgpid")" || rc=$?
	wait "$(cat "$T/unwind.bgpid")" || rc=$?
	echo "$rc" > "$T/pipe.status"
	date +%s >> "$T/times"
	# JFR writes its recording as the JVM exits
	for n in $(cat "$T/jvms"); do
		kill -TERM "$(cat "$T/$n.pid")"
	done
	for n in $(cat "$T/jvms"); do
		wait_for 60 exited "$(cat "$T/$n.pid")"
	done
	wait_for 10 all_recorded
	date +%s >> "$T/times"
	# one JVM each, side by side
	local pids=""
	for n in $(cat "$T/jvms"); do
		"$(cat "$T/$n.jdk")/bin/jfr" print --events jdk.ExecutionSample \
			--stack-depth 512 "$T/$n.jfr" > "$T/$n.jfr.txt" 3>&- &
		pids="$pids $!"
	done
	for n in $pids; do
		wait "$n"
	done
	date +%s >> "$T/times"
}

teardown_file() {
	local f
	for f in "$T"/*.pid; do
		[ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	return 0
}

setup() {
	require_bpf
	[ -x "$JDK17/bin/javac" ] || skip_missing "openjdk-17-jdk-headless not installed"
}

need() {
	[ -e "$T/$1.pid" ] || skip "no Temurin 25 at $JDK25 (not a Debian package)"
}

# whole NAME, truth NAME, peer NAME: tests/tools/java-shares on JVM NAME
whole() {
	"$CPA_SRCDIR/tests/tools/java-shares" whole "$T/java.folded" \
		"$(cat "$T/$1.pid")"
}

truth() {
	"$CPA_SRCDIR/tests/tools/java-shares" truth "$T/java.folded" \
		"$(cat "$T/$1.pid")" "$(cat "$T/$1.t0")" "$(cat "$T/$1.t1")"
}

peer() {
	"$CPA_SRCDIR/tests/tools/java-shares" peer "$T/java.folded" \
		"$(cat "$T/$1.pid")" "$T/$1.jfr.txt" "$(sed -n 1p "$T/window")" \
		"$(sed -n 2p "$T/window")"
}

@test "java-jfr: the pipeline ran to its end, every JVM read from its memory" {
	cat "$T/times"
	cat "$T/unwind.err"
	[ "$(cat "$T/pipe.status")" = 0 ]
	local n p
	for n in $(cat "$T/jvms"); do
		p=$(cat "$T/$n.pid")
		grep -q "^cpa-unwind: pid $p: JDK [0-9]* layout read in " "$T/unwind.err"
		run ! grep -q "pid $p: Java perf map" "$T/unwind.err"
	done
}

@test "java-jfr: JDK 17, default flags: whole chains in >= 95% of each workload's samples" {
	whole d17
}

@test "java-jfr: JDK 17, default flags: each workload's paths as its own count and JFR give them" {
	truth d17
	peer d17
}

@test "java-jfr: JDK 17, -XX:+PreserveFramePointer: whole chains in >= 95% of each workload's samples" {
	whole p17
}

@test "java-jfr: JDK 17, -XX:+PreserveFramePointer: each workload's paths as its own count and JFR give them" {
	truth p17
	peer p17
}

@test "java-jfr: JDK 25, default flags: whole chains in >= 95% of each workload's samples" {
	need d25
	whole d25
}

@test "java-jfr: JDK 25, default flags: each workload's paths as its own count and JFR give them" {
	need d25
	truth d25
	peer d25
}

@test "java-jfr: JDK 25, -XX:+PreserveFramePointer: whole chains in >= 95% of each workload's samples" {
	need p25
	whole p25
}

@test "java-jfr: JDK 25, -XX:+PreserveFramePointer: each workload's paths as its own count and JFR give them" {
	need p25
	truth p25
	peer p25
}

@test "java-jfr: inlined methods are marked _[i], the compiled method that holds them _[j]" {
	grep -q ';cpatest\.JavaInline\.serve_\[j\];cpatest\.JavaInline\.handle_\[i\];cpatest\.JavaInline\.parse_\[i\];cpatest\.JavaInline\.computeHot_\[i\]' \
		"$T/java.folded"
}
