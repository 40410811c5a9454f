#!/usr/bin/env bats
# cpa-unwind on real capture: workloads with known chains, built without
# frame pointers in C, C++, Rust and Go, a chain through libc, a process
# in its own mount namespace, a short-lived process and Node's JIT.
# Each must show its full chain, in order, in at least 95% of its samples.
load helper

setup_file() {
	B=$BATS_FILE_TMPDIR
	S=$CPA_SRCDIR/tests/workloads
	# Built here with each language's own compiler; a test whose
	# compiler is missing skips and says so.
	if command -v g++ >/dev/null; then
		g++ -O2 -g -fomit-frame-pointer -fno-optimize-sibling-calls \
			-o "$B/cxx_chain" "$S/cxx_chain.cc"
	fi
	if command -v rustc >/dev/null; then
		rustc -C opt-level=2 -C force-frame-pointers=no -g \
			-o "$B/rust_chain" "$S/rust_chain.rs"
	fi
	if command -v go >/dev/null; then
		GOCACHE="$B/gocache" GOPATH="$B/gopath" GO111MODULE=off \
			go build -o "$B/go_chain" "$S/go_chain.go"
	fi
}

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	B=$BATS_FILE_TMPDIR
}

teardown() {
	kill_workloads
}

# profile NAME SECONDS CMD...: runs CMD, captures its process for SECONDS
# and unwinds; leaves $T/NAME.folded and $T/NAME.stats.
profile() {
	local name=$1 secs=$2
	shift 2
	start_workload "$T/$name.wl" "$@"
	cpa-capture --pid "$WL_PID" --duration "$secs" >"$T/$name.cpa" 2>"$T/$name.capture.err"
	cpa-unwind --folded --stats <"$T/$name.cpa" >"$T/$name.folded" 2>"$T/$name.stats"
	sort "$T/$name.folded" | uniq -c | sort -rn | sed -n 1,5p
	cat "$T/$name.stats"
}

# samples PATTERN FILE: total weight of the lines matching PATTERN
samples() {
	awk -v pat="$1" '$0 ~ pat { n = split($0, f, " "); s += f[n] } END { print s + 0 }' "$2"
}

need() {
	[ -x "$B/$1" ] || skip_missing "$2 not installed: $1 not built"
}

@test "C with frame pointers: the chain from the FP user stack (--unwind fp)" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 6
	cpa-capture --pid "$WL_PID" --duration 2 >"$T/fp.cpa" 2>/dev/null
	cpa-unwind --folded --unwind fp <"$T/fp.cpa" >"$T/fp.folded"
	[ "$(samples '^chain_fp;' "$T/fp.folded")" -ge 20 ]
	share=$(share_with_chain "$T/fp.folded" '^chain_fp;' 'main;run;level_a;level_b;hot_leaf')
	echo "fp share: $share%"
	[ "$share" -ge 90 ]
}

@test "C with frame pointers: the FP chain alone, whole, rooted where DWARF roots it" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 6 --threads 1
	cpa-capture --pid "$WL_PID" --duration 3 --stats --snapshot=auto >"$T/fpa.cpa" 2>"$T/fpa.err"
	cpa-unwind --folded <"$T/fpa.cpa" >"$T/fpa.folded"
	sort "$T/fpa.folded" | uniq -c | sort -rn | sed -n 1,5p
	grep 'user stacks' "$T/fpa.err"
	total=$(samples '^chain_fp;' "$T/fpa.folded")
	[ "$total" -ge 20 ]
	# the FP chain and no snapshot, but for the first 8 samples and a
	# few in the vdso
	fp=$(sed -n 's/^cpa-capture:   user stacks: \([0-9]*\) frame pointers.*/\1/p' "$T/fpa.err")
	[ "$fp" -ge $(( (total - 8) * 8 / 10 )) ]
	# and the chains are whole, each thread's rooted as a DWARF walk
	# roots it, below libc's frames the FP walk cannot see
	main=$(samples '^chain_fp;_start;(.*;)?main;run;level_a;level_b;hot_leaf( |;)' "$T/fpa.folded")
	thread=$(samples '^chain_fp;(__)?clone3?;start_thread;worker_main;run;level_a;level_b;hot_leaf( |;)' "$T/fpa.folded")
	echo "rooted: main $main, thread $thread, of $total"
	[ "$main" -gt 0 ]
	[ "$thread" -gt 0 ]
	[ $(( (main + thread) * 100 / total )) -ge 95 ]
}

@test "C without frame pointers: full chain in >= 95% of samples (DWARF)" {
	profile nofp 2 "$WL/chain_nofp" --seconds 6
	[ "$(samples '^chain_nofp;' "$T/nofp.folded")" -ge 20 ]
	share=$(share_with_chain "$T/nofp.folded" '^chain_nofp;' 'main;run;level_a;level_b;hot_leaf')
	echo "share: $share%"
	[ "$share" -ge 95 ]
	# and whole: rooted at the program's _start, whatever names libc's
	# frames in between get (its local symbols need libc6-dbg)
	total=$(samples '^chain_nofp;' "$T/nofp.folded")
	whole=$(samples '^chain_nofp;_start;(.*;)?main;run;level_a;level_b;hot_leaf( |;)' "$T/nofp.folded")
	echo "rooted at _start: $whole of $total"
	[ $(( whole * 100 / total )) -ge 95 ]
	grep -q 'chain chosen .*dwarf=[1-9]' "$T/nofp.stats"
}

@test "C++ without frame pointers: demangled namespaces, class and templates" {
	need cxx_chain g++
	profile cxx 2 "$B/cxx_chain" 6
	[ "$(samples '^cxx_chain;' "$T/cxx.folded")" -ge 20 ]
	share=$(share_with_chain "$T/cxx.folded" '^cxx_chain;' 'main;app::run(long);app::Runner::level_a(long);long app::detail::level_b<long>(long);app::detail::Spinner<long>::hot_leaf(long)')
	echo "share: $share%"
	[ "$share" -ge 95 ]
	# --no-demangle keeps the raw names
	cpa-unwind --folded --no-demangle <"$T/cxx.cpa" | grep ';_ZN3app3runEl;' >/dev/null
}

@test "Rust without frame pointers: demangled paths, no hashes" {
	need rust_chain rustc
	profile rust 2 "$B/rust_chain" 6
	[ "$(samples '^rust_chain;' "$T/rust.folded")" -ge 20 ]
	share=$(share_with_chain "$T/rust.folded" '^rust_chain;' 'rust_chain::main;rust_chain::work::run;rust_chain::work::level_a;rust_chain::work::level_b;rust_chain::work::hot_leaf')
	echo "share: $share%"
	[ "$share" -ge 95 ]
	must_fail grep -q '::h[0-9a-f]\{16\}' "$T/rust.folded"
}

@test "Go: the chain with Go names" {
	need go_chain golang-go
	profile go 2 "$B/go_chain" 6
	[ "$(samples '^go_chain;' "$T/go.folded")" -ge 20 ]
	# the share is of the workload's goroutine: the runtime's own threads
	# (sysmon preempting it, started by runtime.mstart) are sampled too,
	# more often where the host is slow
	grep -v ';runtime\.mstart' "$T/go.folded" >"$T/go.main.folded"
	share=$(share_with_chain "$T/go.main.folded" '^go_chain;' 'runtime.main;main.main;main.run;main.levelA;main.levelB;main.hotLeaf')
	echo "share: $share%"
	[ "$share" -ge 95 ]
}

# qsort_whole NAME: NAME's samples in $T/NAME.folded (profile) are rooted
# at _start with main's chain, most of them in the comparator reached
# through libc's qsort
qsort_whole() {
	local total whole through
	total=$(samples "^$1;" "$T/$1.folded")
	[ "$total" -ge 20 ]
	whole=$(samples "^$1;_start;(.*;)?main;run;level_a;level_b;" "$T/$1.folded")
	echo "rooted at _start: $whole of $total"
	[ $(( whole * 100 / total )) -ge 95 ]
	through=$(samples ';level_b;[^ ]*qsort[^ ]*;compare;cmp_leaf [0-9]+$' "$T/$1.folded")
	echo "through qsort: $through of $total"
	[ $(( through * 100 / total )) -ge 50 ]
}

@test "a chain through Debian's libc: qsort calling the program's comparator" {
	profile qsort_chain 2 "$WL/qsort_chain" 6
	share=$(share_with_chain "$T/qsort_chain.folded" '^qsort_chain;' 'main;run;level_a;level_b')
	echo "share: $share%"
	[ "$share" -ge 95 ]
	qsort_whole qsort_chain
}

@test "frame-pointer code called back from libc: the snapshot, not the FP chain, keeps it whole" {
	# The comparator keeps frame pointers and libc's qsort does not: an
	# FP walk from it skips level_b's call into qsort. The capture must
	# see the chain leave frame-pointer code and take the snapshot.
	start_workload "$T/qsort_chain_fp.wl" "$WL/qsort_chain_fp" 6
	cpa-capture --pid "$WL_PID" --duration 3 --stats --snapshot=auto \
		>"$T/qsort_chain_fp.cpa" 2>"$T/qsort_chain_fp.err"
	grep 'user stacks' "$T/qsort_chain_fp.err"
	cpa-unwind --folded <"$T/qsort_chain_fp.cpa" >"$T/qsort_chain_fp.folded"
	qsort_whole qsort_chain_fp
}

@test "the vdso: its symbols and CFI, from the kernel's image" {
	profile vdso 2 "$WL/vdso_chain" 6
	total=$(samples '^vdso_chain;' "$T/vdso.folded")
	[ "$total" -ge 20 ]
	share=$(share_with_chain "$T/vdso.folded" '^vdso_chain;' 'main;run;level_a;level_b')
	echo "share: $share%"
	[ "$share" -ge 95 ]
	in_vdso=$(samples ';level_b;([^ ]*;)?clock_gettime;__vdso_clock_gettime( |;)' "$T/vdso.folded")
	echo "through the vdso: $in_vdso of $total"
	[ $(( in_vdso * 100 / total )) -ge 30 ]
}

@test "a process in its own mount namespace, binary absent on the host" {
	command -v unshare >/dev/null || skip_missing "unshare (util-linux) not installed"
	mkdir "$T/nsroot"
	start_workload "$T/ns.wl" unshare --mount --propagation private sh -c \
		"mount -t tmpfs none '$T/nsroot' && cp '$WL/chain_nofp' '$T/nsroot/ns_chain' && exec '$T/nsroot/ns_chain' --seconds 6"
	# the binary exists only inside the namespace
	[ ! -e "$T/nsroot/ns_chain" ]
	cpa-capture --pid "$WL_PID" --duration 2 >"$T/ns.cpa" 2>/dev/null
	cpa-unwind --folded <"$T/ns.cpa" >"$T/ns.folded"
	[ "$(samples '^ns_chain;' "$T/ns.folded")" -ge 20 ]
	share=$(share_with_chain "$T/ns.folded" '^ns_chain;' 'main;run;level_a;level_b;hot_leaf')
	echo "share: $share%"
	[ "$share" -ge 95 ]
}

@test "a process that runs 200 ms and exits is symbolized" {
	cp "$WL/chain_nofp" "$T/short_chain"
	cpa-capture --duration 3 --freq 499 >"$T/short.cpa" 2>"$T/short.err" &
	cap=$!
	# capture prints its feature line once sampling is set up
	wait_for 10 grep -q 'backend' "$T/short.err"
	"$T/short_chain" --seconds 0.2 >/dev/null
	wait "$cap"
	# unwound after the process is gone: from its MMAP records and the
	# file found by build id
	cpa-unwind --folded <"$T/short.cpa" >"$T/short.folded"
	total=$(samples '^short_chain;' "$T/short.folded")
	echo "short_chain samples: $total"
	[ "$total" -ge 20 ]
	# of the samples in its spinning leaf (not in process start-up or
	# exit, which a 200 ms process has a few of), the full chain
	share=$(share_with_chain "$T/short.folded" '^short_chain;.*;hot_leaf ' 'main;run;level_a;level_b;hot_leaf')
	echo "share: $share%"
	[ "$share" -ge 95 ]
}

@test "Node with --perf-basic-prof: JavaScript function names as _[j] frames" {
	command -v node >/dev/null || skip_missing "nodejs not installed"
	profile js 2 node --perf-basic-prof "$CPA_SRCDIR/tests/workloads/js_chain.js" 6
	rm -f "/tmp/perf-$WL_PID.map"
	[ "$(samples '^node;' "$T/js.folded")" -ge 20 ]
	grep -q ';[^;]*jsHotLeaf[^;]*_\[j\]' "$T/js.folded"
	grep -q 'jit=[1-9]' "$T/js.stats"
}

@test "Node, live: functions compiled during the capture are named; one without --interpreted-frames-native-stack is told once" {
	command -v node >/dev/null || skip_missing "nodejs not installed"
	# a new hot function every 100 ms, its map line written as V8
	# compiles it; and a node with the flag, whose interpreted callers
	# are named
	start_workload "$T/churn.wl" node --perf-basic-prof "$CPA_SRCDIR/tests/workloads/js_churn.js" 14
	local churn=$WL_PID
	start_workload "$T/flag.wl" node --perf-basic-prof --interpreted-frames-native-stack \
		"$CPA_SRCDIR/tests/workloads/js_chain.js" 14
	local flag=$WL_PID
	# --load-wait 2s, as java.bats: node's own symbols loaded before its
	# samples go out, however slow the host
	cpa-capture --pid "$churn,$flag" --duration 6 --freq 199 2>/dev/null |
		cpa-unwind --folded --stats --load-wait 2s >"$T/live.folded" 2>"$T/live.stats"
	rm -f "/tmp/perf-$churn.map" "/tmp/perf-$flag.map"
	sed -n '/perf maps\|v8 \|warning/p' "$T/live.stats"
	# the churning node's new functions, called from jsChurnCaller: named,
	# where a map read at most once a second left half of them [anon]
	local named anon
	named=$(samples ';[^;]*jsChurnCaller[^;]*_[[]j[]];[^;]*_[[]j[]]( |;)' "$T/live.folded")
	anon=$(samples ';[^;]*jsChurnCaller[^;]*_[[]j[]];[[]anon[]]( |;)' "$T/live.folded")
	echo "called from jsChurnCaller: $named named, $anon [anon]"
	[ "$named" -ge 50 ]
	[ "$((anon * 100))" -le "$((5 * (named + anon)))" ]
	# the node with the flag: its interpreted callers named
	grep -q ';JS:~jsLevelA [^;]*_\[j\];JS:[*~]jsHotLeaf ' "$T/live.folded"
	# told once, of the node without the flag only
	[ "$(grep -c "pid $churn: V8 runs without --interpreted-frames-native-stack" "$T/live.stats")" -eq 1 ]
	run ! grep -q "pid $flag: V8 runs without" "$T/live.stats"
	grep -q 'v8 .*without-interpreted-frames-native-stack=1$' "$T/live.stats"
}
