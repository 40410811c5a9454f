#!/usr/bin/env bats
# Java: cpa-unwind reads each JVM it samples from the JVM's own memory
# (vmStructs: its code cache, frame layout and method names), on OpenJDK 17
# (Debian's) and, where it is installed, the Temurin 25 of the CI image;
# a JVM whose tables cannot be read is asked for its perf map over
# HotSpot's attach protocol instead (CPA_UNWIND_NO_VMSTRUCTS=1 makes a
# second cpa-unwind on the same capture take that path for every JVM; a
# third takes the frame-pointer chains alone, --unwind fp).
# setup_file starts the JVMs, one capture for all of them teed to the
# three cpa-unwinds, and the JVMs that start after it, so the file takes about
# 15 s; each test asserts on one JVM. cpa-unwind waits up to 2 s
# (--load-wait) for a JVM's layout or first map, so that on a loaded
# machine too no sample is written before it is there. Inlined methods,
# JFR as the peer, are tests/bats/java-jfr.bats'.
load helper

JDK17=/usr/lib/jvm/java-17-openjdk-amd64
JDK25=/usr/lib/jvm/temurin-25-jdk-amd64
# the compiled part of the chain, named by a perf map alone (run, called
# once, may still run in the interpreter)
COMPILED='cpatest.JavaChain.levelA_[j];cpatest.JavaChain.levelB_[j];cpatest.JavaChain.hotLeaf_[j]'
# from the spinning thread's Runnable down; interpreted frames named too
CHAIN='cpatest.JavaChain.lambda$main$0_[j];cpatest.JavaChain.run_[j];cpatest.JavaChain.levelA_[j];cpatest.JavaChain.levelB_[j];cpatest.JavaChain.hotLeaf_[j]'

# IN_CG CMD...: CMD in this file's cgroup, which the capture takes (other
# tests' JVMs may run beside this file's): the shell moves itself in and
# becomes CMD, its pid CMD's
IN_CG=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"')

# jvm_start NAME JDK FLAGS...: a JavaChain spinner in the background; its
# pid on the host in NAME.pid. jvm_ready NAME: waits for it to say so.
jvm_start() {
	local name=$1 jdk=$2
	shift 2
	"${IN_CG[@]}" "$CG" "$jdk/bin/java" -Xmx64m -XX:+UseSerialGC -XX:CompileCommand=quiet \
		'-XX:CompileCommand=dontinline,cpatest.JavaChain::*' "$@" \
		-cp "$T/cls" cpatest.JavaChain 600 > "$T/$name.out" 2>&1 3>&- &
	echo $! > "$T/$name.pid"
}

# deopt_start NAME JDK: a JavaDeopt whose compiled outer() the JVM
# deoptimizes while it is on the stack; it prints "deopt" then
deopt_start() {
	"${IN_CG[@]}" "$CG" "$2/bin/java" -Xmx64m -XX:+UseSerialGC -XX:CompileCommand=quiet \
		'-XX:CompileCommand=dontinline,cpatest.JavaDeopt::spin' \
		-cp "$T/cls" cpatest.JavaDeopt 600 > "$T/$1.out" 2>&1 3>&- &
	echo $! > "$T/$1.pid"
}

jvm_ready() {
	wait_for 60 grep -q '^ready ' "$T/$1.out"
}

capture_attached() {
	grep -q '^cpa-capture: kernel ' "$T/cap.err"
}

# spin_ticks NAME: CPU time of JVM NAME's spinning thread, in ticks
spin_ticks() {
	local t
	for t in /proc/"$(cat "$T/$1.pid")"/task/*; do
		if [ "$(cat "$t/comm" 2>/dev/null)" = spin ]; then
			awk '{ print $14 + $15 }' "$t/stat"
			return 0
		fi
	done
	echo 0
}

# 0.6 s of CPU in each late JVM's chain, 7 s since the capture began
sampled_enough() {
	local n
	for n in after17 after25; do
		[ -e "$T/$n.pid" ] || continue
		[ "$(spin_ticks "$n")" -ge 60 ] || return 1
	done
	[ "$(date +%s)" -ge $(( $(cat "$T/attached.time") + 7 )) ] || return 1
	# the refusing JVM given up on (its listener waited for 5 s), before
	# the capture stops and cancels what is under way
	grep -q "pid $(cat "$T/refuse.pid"): Java perf map: no attach listener" "$T/map.err"
}

# A JVM without an attach listener, killed as soon as cpa-unwind's
# trigger file appears: it exits in the middle of the attach.
# stale_map PID: a map as an earlier process with the same pid would have
# left, older than this JVM, naming all its anonymous code: it must not be
# believed (a JVM that refuses attach never writes its own over it)
stale_map() {
	local range perms off dev inode path
	while read -r range perms off dev inode path; do
		[[ $perms == *x* && $inode == 0 && -z $path ]] || continue
		printf '%s %x stale.EarlierProcess.method\n' "${range%-*}" \
			$(( 0x${range#*-} - 0x${range%-*} ))
	done < "/proc/$1/maps" > "/tmp/perf-$1.map"
	[ -s "/tmp/perf-$1.map" ]
	touch -d '1 hour ago' "/tmp/perf-$1.map"
}

exit_mid_attach() {
	local p
	p=$(cat "$T/gone.pid")
	wait_for 120 test -e "/tmp/.attach_pid$p"
	kill -9 "$p"
	echo killed > "$T/gone.killed"
}

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	if [ ! -x "$JDK17/bin/javac" ]; then
		[ "${CI:-}" = true ] && return 1
		return 0
	fi
	"$JDK17/bin/javac" --release 17 -d "$T/cls" \
		"$CPA_SRCDIR/tests/workloads/JavaChain.java" \
		"$CPA_SRCDIR/tests/workloads/JavaDeopt.java"
	local cg2
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	export CG=$cg2/cpa-java-test-$$
	mkdir "$CG"
	echo "$CG" > "$T/cg.path"

	# started together, waited for together: a JVM's start is mostly
	# waiting on its own threads
	local n
	jvm_start before17 "$JDK17" -XX:+PreserveFramePointer
	[ -x "$JDK25/bin/java" ] && jvm_start before25 "$JDK25" -XX:+PreserveFramePointer
	jvm_start noflag "$JDK17"
	jvm_start xint "$JDK17" -Xint
	[ -x "$JDK25/bin/java" ] && jvm_start xint25 "$JDK25" -Xint
	jvm_start refuse "$JDK17" -XX:+DisableAttachMechanism
	jvm_start gone "$JDK17" -XX:+DisableAttachMechanism
	deopt_start deopt17 "$JDK17"
	[ -x "$JDK25/bin/java" ] && deopt_start deopt25 "$JDK25"
	for n in before17 before25 noflag xint xint25 refuse gone; do
		[ -e "$T/$n.pid" ] || continue
		jvm_ready "$n"
	done
	for n in deopt17 deopt25; do
		[ -e "$T/$n.pid" ] || continue
		wait_for 60 grep -q '^deopt$' "$T/$n.out"
	done
	# its map written by another tool before cpa sees it: cpa must still
	# ask it once, for the layout that names its interpreted frames
	"$JDK17/bin/jcmd" "$(cat "$T/xint.pid")" Compiler.perfmap > /dev/null
	stale_map "$(cat "$T/refuse.pid")"
	# in its own mount and pid namespaces, with a /tmp of its own: pid 1
	# there, its attach files and map only inside
	mkdir "$T/nstmp"
	"${IN_CG[@]}" "$CG" unshare --mount --pid --fork --propagation private sh -c \
		"mount -t tmpfs none '$T/nstmp' && cp -r '$T/cls' '$T/nstmp/' &&
		mount --bind '$T/nstmp' /tmp && exec '$JDK17/bin/java' -Xmx64m \
		-XX:+UseSerialGC \
		-XX:CompileCommand=quiet \
		'-XX:CompileCommand=dontinline,cpatest.JavaChain::*' \
		-XX:+PreserveFramePointer -cp /tmp/cls cpatest.JavaChain 600" \
		> "$T/ns.out" 2>&1 3>&- &
	echo $! > "$T/ns.unshare"
	wait_for 60 grep -q '^ready ' "$T/ns.out"
	pgrep -P "$(cat "$T/ns.unshare")" > "$T/ns.pid"

	mkfifo "$T/raw.fifo" "$T/cap.fifo" "$T/map.fifo" "$T/fp.fifo"
	cpa-capture --comm java --cgroup "$CG" --freq 199 --duration 120 \
		> "$T/raw.fifo" 2> "$T/cap.err" 3>&- &
	echo $! > "$T/cap.bgpid"
	tee "$T/map.fifo" "$T/fp.fifo" < "$T/raw.fifo" > "$T/cap.fifo" 3>&- &
	# the frame-pointer chains alone: interpreted frames still named
	cpa-unwind --unwind fp --folded --labels pid,thread --load-wait 2s \
		< "$T/fp.fifo" > "$T/fp.folded" 2> "$T/fp.err" 3>&- &
	echo $! > "$T/fp.bgpid"
	cpa-unwind --folded --labels pid,thread --stats -v --load-wait 2s \
		< "$T/cap.fifo" > "$T/java.folded" 2> "$T/unwind.err" 3>&- &
	echo $! > "$T/unwind.bgpid"
	CPA_UNWIND_NO_VMSTRUCTS=1 cpa-unwind --folded --labels pid,thread \
		--stats -v --load-wait 2s < "$T/map.fifo" > "$T/map.folded" \
		2> "$T/map.err" 3>&- &
	echo $! > "$T/map.bgpid"
	exit_mid_attach &
	local killer=$!
	wait_for 60 capture_attached
	date +%s > "$T/attached.time"
	jvm_start after17 "$JDK17" -XX:+PreserveFramePointer
	if [ -x "$JDK25/bin/java" ]; then
		jvm_start after25 "$JDK25" -XX:+PreserveFramePointer
		jvm_ready after25
	fi
	jvm_ready after17
	# the capture ends once the late JVMs have spun long enough, however
	# loaded the machine, and the refusing JVM's attach has given up
	wait_for 120 sampled_enough
	kill -INT "$(cat "$T/cap.bgpid")"
	local rc=0
	wait "$(cat "$T/cap.bgpid")" || rc=$?
	echo "$rc" > "$T/cap.status"
	rc=0
	wait "$(cat "$T/unwind.bgpid")" || rc=$?
	echo "$rc" > "$T/unwind.status"
	rc=0
	wait "$(cat "$T/map.bgpid")" || rc=$?
	echo "$rc" > "$T/map.status"
	rc=0
	wait "$(cat "$T/fp.bgpid")" || rc=$?
	echo "$rc" > "$T/fp.status"
	wait "$killer"
}

teardown_file() {
	local f
	for f in "$T"/*.pid "$T"/ns.unshare "$T"/*.bgpid; do
		[ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	# the JVMs' maps, which would mislead a later process given a pid
	for f in "$T"/*.pid; do
		[ -e "$f" ] && rm -f "/tmp/perf-$(cat "$f").map"
	done
	# the cgroup, once the JVMs killed have left it
	[ -e "$T/cg.path" ] && wait_for 30 rmdir "$(cat "$T/cg.path")" 2>/dev/null
	return 0
}

setup() {
	require_bpf
	[ -x "$JDK17/bin/javac" ] || skip_missing "openjdk-17-jdk-headless not installed"
}

# spin NAME [OUT]: the samples of JVM NAME's spinning thread, labels cut,
# from cpa-unwind's output OUT (java, the default, or map)
spin() {
	awk -v pre="[pid $(cat "$T/$1.pid")];[thread spin];" \
		'index($0, pre) == 1 { print substr($0, length(pre) + 1) }' \
		"$T/${2:-java}.folded" > "$T/$1.folded"
	cat "$T/$1.folded"
}

# share_of NAME [OUT]: the share of those samples carrying the chain
share_of() {
	spin "$1" "${2:-java}" > /dev/null
	share_with_chain "$T/$1.folded" '' "$CHAIN"
}

# rooted NAME [OUT]: the share of them whose chain starts at the thread's
# first frame, not at [truncated]
rooted() {
	spin "$1" "${2:-java}" > /dev/null
	awk '{ t += $NF } /^__clone3;start_thread;/ { r += $NF }
		END { printf "%d\n", t ? 100 * r / t : 0 }' "$T/$1.folded"
}

spin_samples() {
	spin "$1" "${2:-java}" > /dev/null
	awk '{ s += $NF } END { print s + 0 }' "$T/$1.folded"
}

need25() {
	[ -x "$JDK25/bin/java" ] || skip "no Temurin 25 at $JDK25 (not a Debian package)"
}

@test "java: the pipeline ran to its end" {
	cat "$T/unwind.err"
	[ "$(cat "$T/cap.status")" = 0 ]
	[ "$(cat "$T/unwind.status")" = 0 ]
	[ "$(cat "$T/map.status")" = 0 ]
	[ "$(cat "$T/fp.status")" = 0 ]
}

@test "java: each JVM read from its own memory, none attached to" {
	local n p
	for n in before17 before25 noflag xint xint25 refuse after17 after25; do
		[ -e "$T/$n.pid" ] || continue
		p=$(cat "$T/$n.pid")
		grep -q "^cpa-unwind: pid $p: JDK [0-9]* layout read in " "$T/unwind.err"
		run ! grep -q "pid $p: Java perf map" "$T/unwind.err"
	done
	run ! test -e "/tmp/.attach_pid$(cat "$T/before17.pid")"
}

@test "java: JDK 17 started before cpa, -XX:+PreserveFramePointer: the chain in >= 90% of samples" {
	[ "$(spin_samples before17)" -ge 20 ]
	share=$(share_of before17)
	echo "share: $share%"
	[ "$share" -ge 90 ]
}

@test "java: JDK 17, -XX:+PreserveFramePointer, frame-pointer chains alone: the chain, interpreted frames named, in >= 90% of samples" {
	[ "$(spin_samples before17 fp)" -ge 20 ]
	share=$(share_of before17 fp)
	echo "share: $share%"
	[ "$share" -ge 90 ]
}

@test "java: JDK 17 started after cpa, -XX:+PreserveFramePointer: the chain in >= 60% of samples" {
	[ "$(spin_samples after17)" -ge 20 ]
	share=$(share_of after17)
	echo "share: $share%"
	# its first moments run interpreted, before the chain is compiled
	[ "$share" -ge 60 ]
}

@test "java: JDK 25 started before cpa, -XX:+PreserveFramePointer: the chain in >= 90% of samples" {
	need25
	[ "$(spin_samples before25)" -ge 20 ]
	share=$(share_of before25)
	echo "share: $share%"
	[ "$share" -ge 90 ]
}

@test "java: JDK 25 started after cpa, -XX:+PreserveFramePointer: the chain in >= 60% of samples" {
	need25
	[ "$(spin_samples after25)" -ge 20 ]
	share=$(share_of after25)
	echo "share: $share%"
	[ "$share" -ge 60 ]
}

@test "java: without -XX:+PreserveFramePointer, the whole chain from the JVM's frame layout in >= 90% of samples" {
	[ "$(spin_samples noflag)" -ge 20 ]
	share=$(share_of noflag)
	echo "share: $share%"
	[ "$share" -ge 90 ]
	share=$(rooted noflag)
	echo "rooted: $share%"
	[ "$share" -ge 90 ]
}

@test "java: perf maps alone, without -XX:+PreserveFramePointer: the leaf is named in >= 90%, the chain cut as [truncated]" {
	local total leaf
	total=$(spin_samples noflag map)
	[ "$total" -ge 20 ]
	# the leaf method, then at most kernel frames
	leaf=$(awk '/^\[truncated\];cpatest\.JavaChain\.hotLeaf_\[j\]( |;[^ ]*_\[k\] )/ { s += $NF } END { print s + 0 }' "$T/noflag.folded")
	echo "leaf named, chain cut: $leaf of $total"
	[ $(( leaf * 100 / total )) -ge 90 ]
}

@test "java: JDK 17, -Xint, its map already written by jcmd: interpreted frames named, the chain in >= 90% of samples" {
	[ "$(spin_samples xint)" -ge 20 ]
	share=$(share_of xint)
	echo "share: $share%"
	[ "$share" -ge 90 ]
}

@test "java: JDK 25, -Xint: interpreted frames named, the chain in >= 90% of samples" {
	need25
	[ "$(spin_samples xint25)" -ge 20 ]
	share=$(share_of xint25)
	echo "share: $share%"
	[ "$share" -ge 90 ]
}

@test "java: a JVM in its own mount and pid namespaces is named from its memory" {
	[ "$(spin_samples ns)" -ge 20 ]
	share=$(share_of ns)
	echo "share: $share%"
	[ "$share" -ge 90 ]
}

@test "java: perf maps alone: a JVM in its own mount and pid namespaces is named; its map stays in its /tmp" {
	[ "$(spin_samples ns map)" -ge 20 ]
	share=$(share_with_chain "$T/ns.folded" '' "$COMPILED")
	echo "share: $share%"
	[ "$share" -ge 90 ]
	# pid 1 in its namespace: the map is the JVM's own /tmp/perf-1.map
	[ -s "/proc/$(cat "$T/ns.pid")/root/tmp/perf-1.map" ]
}

# deopted NAME: the share of JVM NAME's main thread's samples whose chain
# has outer and the method called in it (inlined on JDK 17, its own frame
# on JDK 25), through the frame the JVM deoptimized, down to spin
deopted() {
	awk -v pre="[pid $(cat "$T/$1.pid")];[thread java];" \
		'index($0, pre) == 1 { print substr($0, length(pre) + 1) }' \
		"$T/java.folded" > "$T/$1.folded"
	awk '{ t += $NF }
	     /;cpatest\.JavaDeopt\.main_\[j\];cpatest\.JavaDeopt\.outer_\[[ij]\];cpatest\.JavaDeopt\$Square\.area_\[[ij]\];cpatest\.JavaDeopt\.spin_\[j\]/ { h += $NF }
	     END { printf "%d %d\n", h, t }' "$T/$1.folded"
}

@test "java: a frame the JVM deoptimized is named by the pc it had, inlined methods and all" {
	local h t n
	for n in deopt17 deopt25; do
		[ -e "$T/$n.pid" ] || continue
		read -r h t < <(deopted "$n")
		echo "$n: $h of $t"
		[ "$t" -ge 20 ]
		[ $(( h * 100 / t )) -ge 90 ]
	done
}

@test "java: a JVM that refuses attach is named from its memory; an older map of its pid not believed" {
	[ "$(spin_samples refuse)" -ge 20 ]
	[ "$(grep -c 'stale\.EarlierProcess' "$T/refuse.folded")" -eq 0 ]
	share=$(share_of refuse)
	echo "share: $share%"
	[ "$share" -ge 90 ]
}

@test "java: perf maps alone: a JVM that refuses attach: one line naming it, not asked again, an older map of its pid not believed" {
	local p
	p=$(cat "$T/refuse.pid")
	grep -c "^cpa-unwind: warning: pid $p: Java perf map: no attach listener came up (run with -XX:+DisableAttachMechanism?)\$" "$T/map.err" > "$T/refuse.count"
	[ "$(cat "$T/refuse.count")" = 1 ]
	[ "$(spin_samples refuse map)" -ge 20 ]
	[ "$(grep -c 'stale\.EarlierProcess' "$T/refuse.folded")" -eq 0 ]
}

@test "java: perf maps alone: a JVM that exits while attached to: one line naming it" {
	grep "pid $(cat "$T/gone.pid")" "$T/map.err" || true
	[ -e "$T/gone.killed" ]
	grep -Fx "cpa-unwind: warning: pid $(cat "$T/gone.pid"): Java perf map: exited while attaching" "$T/map.err"
}
