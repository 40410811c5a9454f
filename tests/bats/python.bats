#!/usr/bin/env bats
# Python frames in every stack: cpa-capture walks the interpreter's frames
# in BPF, cpa-unwind names them and splices them where the eval function's
# frames are. Every CPython on the machine is tested: Debian's
# /usr/bin/python3 and every other python3 on PATH (a source-built one
# has its own binary layout: libpython shared, not linked in), each named
# in the messages. Per interpreter, the workloads of
# tests/workloads/py_chain.py run at once under one capture (on- and
# off-CPU); processes that exit or exec start once it is attached.

bats_require_minimum_version 1.5.0

load capture_helper

PYWL="$CPA_SRCDIR/tests/workloads/py_chain.py"
MODES="chain cext offcpu threads loop garbage"
# the workloads outlive the capture and its unwinding (cpa-unwind reads
# their code objects from their memory); teardown stops them
SECONDS_RUN=60

# Every CPython on the machine, by its real executable, once each.
interpreters() {
	local p exe
	{
		echo /usr/bin/python3
		type -a -P python3 python3.11 python3.12 python3.13 2>/dev/null || true
	} | while read -r p; do
		exe=$("$p" -c 'import os, sys; print(os.path.realpath(sys.executable))' 2>/dev/null) || continue
		echo "$exe"
	done | awk '!seen[$0]++'
}

# launch NAME CMD...: a workload in the background, its output in NAME.out
launch() {
	local name=$1; shift
	"$@" > "$T/$name.out" 2>&1 3>&- &
	echo $! > "$T/$name.bgpid"
}

# exit_and_exec N PY: a process that exits and one that execs while a
# live capture | unwind pipeline samples them, released once cpa-unwind
# has caught up with the samples of the interpreter's chain workload
# (still running): it reads code objects while their process lives, and
# a cold start (kallsyms, the interpreter's CFI) takes seconds on a busy
# host, longer under ASan
exit_and_exec() {
	local i=$1 py=$2 m
	launch "py$i-exit" "$py" "$PYWL" chain 4
	launch "py$i-exec" "$py" "$PYWL" exec 6
	for m in exit exec; do
		wait_for 60 grep -q '^ready ' "$T/py$i-$m.out"
		awk '/^ready /{print $2; exit}' "$T/py$i-$m.out" > "$T/py$i-$m.pid"
	done
	mkfifo "$T/py$i-life.pipe"
	cpa-unwind --folded --labels pid,tid --stats-file "$T/py$i-life.stats" \
		--stats-interval 1s < "$T/py$i-life.pipe" > "$T/py$i-life.folded" 3>&- &
	echo $! > "$T/py$i-life.upid"
	cpa-capture --freq 199 --comm "$(basename "$py")" \
		> "$T/py$i-life.pipe" 2> "$T/py$i-life.err" 3>&- &
	echo $! > "$T/py$i-life.cpid"
	wait_for 30 grep -q '^cpa-capture: kernel ' "$T/py$i-life.err"
	wait_for 60 unwound "$T/py$i-life.stats" 50
	for m in exit exec; do
		kill -USR1 "$(pidof_wl "py$i-$m")"
	done
	for m in exit exec; do
		wait "$(cat "$T/py$i-$m.bgpid")"
	done
	kill -INT "$(cat "$T/py$i-life.cpid")"
	wait "$(cat "$T/py$i-life.cpid")"
	wait "$(cat "$T/py$i-life.upid")"
}

# unwound FILE N: cpa-unwind's statistics FILE counts N samples or more
unwound() {
	[ -f "$1" ] && awk -F= -v n="$2" '$1 == "samples" && $2 >= n { ok = 1 } END { exit !ok }' "$1"
}

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	interpreters > "$T/interpreters"
	local i=0 py m
	while read -r py; do
		i=$((i + 1))
		echo "$py" > "$T/py$i.name"
		# all at once, then each waited for: the interpreters start
		# slowly on a loaded machine
		for m in $MODES; do
			launch "py$i-$m" "$py" "$PYWL" "$m" "$SECONDS_RUN"
		done
		launch "py$i-unsupported" "$WL/python_unsupported" "$SECONDS_RUN"
		for m in $MODES unsupported; do
			wait_for 60 grep -q '^ready ' "$T/py$i-$m.out"
			awk '/^ready /{print $2; exit}' "$T/py$i-$m.out" > "$T/py$i-$m.pid"
		done
		local pids
		pids=$(for m in $MODES unsupported; do pidof_wl "py$i-$m"; done | paste -sd,)
		cap "py$i" --freq 199 --offcpu --duration 3 --pid "$pids"
		wait_for 30 cap_attached "py$i"
		for m in $MODES unsupported; do
			kill -USR1 "$(pidof_wl "py$i-$m")"
		done
		wait "$(cat "$T/py$i.cpid")"
		cpa-unwind --folded --labels pid,tid < "$T/py$i.cpa" > "$T/py$i.folded"
		for m in $MODES unsupported; do
			[ "$m" = chain ] || kill "$(cat "$T/py$i-$m.bgpid")"
		done
		exit_and_exec "$i" "$py"
		kill "$(cat "$T/py$i-chain.bgpid")"
	done < "$T/interpreters"
	echo "$i" > "$T/count"
}

# what a failed set-up left running
teardown_file() {
	kill $(cat "$T"/*.bgpid "$T"/*.cpid 2>/dev/null) 2>/dev/null || true
}

# each_py CHECK: runs CHECK N NAME for every interpreter, its name
# printed first so a failure says which; never under `if` or `||`, where
# bash would ignore the failures inside CHECK
each_py() {
	local i n
	n=$(cat "$T/count")
	for i in $(seq 1 "$n"); do
		echo "checking $(cat "$T/py$i.name")"
		"$1" "$i" "$(cat "$T/py$i.name")"
	done
}

# line TEXT: the line of py_chain.py that holds TEXT (a comment marks it)
line() { awk -v t="# $1" 'index($0, t) { print NR; exit }' "$PYWL"; }

# tid_of PY MODE NAME: the native id of the workload's thread NAME
tid_of() { awk -v n="$3" '$1 == "thread" && $2 == n {print $3}' "$T/py$1-$2.out"; }

# lines PY MODE: the folded lines of that workload's process
lines() {
	grep -F "[pid $(pidof_wl "py$1-$2")];" "$T/py$1.folded" || true
}

@test "python: every CPython on the machine is found and tested" {
	run cat "$T/interpreters"
	echo "$output"
	[[ "$output" == *"/usr/bin/python3"* ]]
	[ "$(cat "$T/count")" -ge 1 ]
	# and what this image puts first on PATH, if it is another one
	local first
	first=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
	grep -qxF "$first" "$T/interpreters"
}

check_chain() {
	local f="$T/py$1.chain"
	lines "$1" chain | grep -v '^off-CPU\|^scheduling' > "$f"
	local total
	total=$(awk '{s += $NF} END {print s + 0}' "$f")
	echo "$2: $total on-CPU samples"
	[ "$total" -ge 20 ]
	local F=$PYWL share
	# handler -> parse -> compute_hot, each with its file and line, below
	# the interpreter's entry (Py_RunMain) and the module's frames
	share=$(share_with_chain "$f" . "main ($F:$(line main-chain))_[py];handler ($F:$(line handler-parse))_[py];parse ($F:$(line parse-compute))_[py]")
	echo "$2: chain in $share%"
	[ "$share" -ge 90 ]
	# compute_hot, on one of its loop's two lines, right under parse
	share=$(awk -v a="parse ($F:$(line parse-compute))_[py];compute_hot ($F:$(line hot-for))_[py]" \
		-v b="parse ($F:$(line parse-compute))_[py];compute_hot ($F:$(line hot-body))_[py]" '
		{ s += $NF } index($0, a) || index($0, b) { h += $NF }
		END { print s ? int(100 * h / s) : 0 }' "$f")
	echo "$2: compute_hot in $share%"
	[ "$share" -ge 90 ]
	# rooted in the interpreter: Py_RunMain comes before every Python frame
	share=$(share_with_chain "$f" . "Py_RunMain")
	[ "$share" -ge 90 ]
	run ! grep -E '_\[py\].*Py_RunMain' "$f"
}

@test "python: handler -> parse -> compute_hot in order with file and line, under the interpreter's entry" {
	each_py check_chain
}

check_cext() {
	local f="$T/py$1.cext" F=$PYWL
	lines "$1" cext | grep -v '^off-CPU\|^scheduling' > "$f"
	# samples in C under hash_data: hashlib's C code (libcrypto) is
	# leafward of the Python function that called it
	local share
	share=$(awk -v h="hash_data ($F:$(line hash-call))_[py];" '
		{ n = $NF }
		index($0, h) { s += n; rest = substr($0, index($0, h) + length(h))
			if (rest !~ /_\[py\]/ && rest ~ /SHA256|EVP_|libcrypto|_hashlib/) c += n }
		END { print s ? int(100 * c / s) : 0 }' "$f")
	echo "$2: hashlib's C frames under hash_data in $share% of its samples"
	[ "$share" -ge 50 ]
}

@test "python: C extension frames appear under the Python function that called them" {
	each_py check_cext
}

check_offcpu() {
	local f="$T/py$1.offcpu" F=$PYWL a b
	a=$(tid_of "$1" offcpu sleep_here)
	b=$(tid_of "$1" offcpu wait_sock)
	lines "$1" offcpu | grep -e "^off-CPU blocked;\[pid [0-9]*\];\[tid $a\];" \
		-e "^off-CPU blocked;\[pid [0-9]*\];\[tid $b\];" > "$f"
	local total sleep sock
	total=$(awk '{s += $NF} END {print s + 0}' "$f")
	sleep=$(awk -v k="sleep_here ($F:$(line sleep-call))_[py]" 'index($0, k) {s += $NF} END {print s + 0}' "$f")
	sock=$(awk -v k="wait_sock ($F:$(line recv-call))_[py]" 'index($0, k) {s += $NF} END {print s + 0}' "$f")
	echo "$2: the two threads blocked $total ns, $sleep under sleep_here, $sock under wait_sock"
	# each thread blocks nearly all of the capture's 3 s, less the time
	# it waits for a CPU on a busy machine
	[ "$sleep" -ge 500000000 ]
	[ "$sock" -ge 500000000 ]
	[ $(( (sleep + sock) * 100 )) -ge $(( total * 90 )) ]
}

@test "python: off-CPU time is under the Python function that sleeps or blocks on a socket" {
	each_py check_offcpu
}

check_threads() {
	local f="$T/py$1.threads" F=$PYWL name other tid share
	lines "$1" threads | grep -v '^off-CPU\|^scheduling' > "$f"
	for name in spin_a spin_b hash_c; do
		tid=$(tid_of "$1" threads "$name")
		[ -n "$tid" ]
		share=$(awk -v t="[tid $tid];" -v k="$name ($F:" '
			index($0, t) { s += $NF; if (index($0, k)) h += $NF }
			END { print s ? int(100 * h / s) : 0 }' "$f")
		echo "$2: thread $name ($tid): its function in $share% of its samples"
		[ "$share" -ge 90 ]
		# and none of the others' functions
		run awk -v t="[tid $tid];" -v me="$name" -v F="$F" '
			index($0, t) { for (o in fs) if (o != me && index($0, o " (" F ":")) bad++ }
			BEGIN { fs["spin_a"]; fs["spin_b"]; fs["hash_c"] }
			END { exit bad > 0 }' "$f"
		[ "$status" -eq 0 ]
	done
}

@test "python: each thread has its own Python chain, the one releasing the GIL too" {
	each_py check_threads
}

check_unsupported() {
	local pid n
	pid=$(pidof_wl "py$1-unsupported")
	# one note, in the stream and on stderr
	n=$(dump "py$1" | grep -c "^meta python=pid $pid: CPython 3.8 .*not supported.*native frames only" || true)
	[ "$n" -eq 1 ]
	n=$(grep -c "pid $pid: CPython 3.8 .*not supported" "$T/py$1.err" || true)
	[ "$n" -eq 1 ]
	# and its native chain
	local share
	grep -F "[pid $pid];" "$T/py$1.folded" > "$T/py$1.unsupported"
	share=$(share_with_chain "$T/py$1.unsupported" . "main;fake_eval;fake_spin")
	[ "$share" -ge 90 ]
	run grep -cF "_[py]" "$T/py$1.unsupported"
	[ "$output" = 0 ]
}

@test "python: a process of a version cpa has no table for is sampled natively, with one note" {
	each_py check_unsupported
}

check_corrupt() {
	local mode f total trunc
	for mode in loop garbage; do
		f="$T/py$1.$mode"
		lines "$1" "$mode" | grep -v '^off-CPU\|^scheduling' > "$f"
		total=$(awk '{s += $NF} END {print s + 0}' "$f")
		# marked truncated, the frames read before the break named
		trunc=$(awk -v k="corrupted ($PYWL:" '
			/^\[pid [0-9]+\];\[tid [0-9]+\];\[truncated\];/ && index($0, k) { s += $NF }
			END { print s + 0 }' "$f")
		echo "$2: $mode: $trunc of $total samples truncated, corrupted named"
		[ "$total" -ge 10 ]
		[ $(( trunc * 100 )) -ge $(( total * 90 )) ]
	done
	# a frame that is its own caller: the walk stops at 64 frames
	run awk -F';' '{ n = 0; for (i = 1; i <= NF; i++) if ($i ~ /^corrupted \(/) n++
		if (n > max) max = n } END { print max + 0 }' "$T/py$1.loop"
	[ "$output" -eq 64 ]
}

@test "python: a corrupt frame chain ends the walk: bounded, no crash, the sample marked truncated" {
	each_py check_corrupt
}

# the samples of a process that exits: the ones with Python frames (not
# those of its interpreter's finalization and its exit) named
check_exit() {
	local pid F=$PYWL total chain unknown
	pid=$(pidof_wl "py$1-exit")
	grep -F "[pid $pid];" "$T/py$1-life.folded" | grep -v '^off-CPU\|^scheduling' > "$T/py$1.exit" || true
	total=$(awk '/_\[py\]/ {s += $NF} END {print s + 0}' "$T/py$1.exit")
	chain=$(awk -v k="handler ($F:$(line handler-parse))_[py];parse ($F:$(line parse-compute))_[py]" \
		'index($0, k) {s += $NF} END {print s + 0}' "$T/py$1.exit")
	unknown=$(awk 'index($0, "[unknown]_[py]") {s += $NF} END {print s + 0}' "$T/py$1.exit")
	echo "$2: a process that exits: $total samples with Python frames, $chain with its chain, $unknown unknown"
	[ "$chain" -ge 10 ]
	[ $(( chain * 100 )) -ge $(( total * 90 )) ]
	[ $(( unknown * 10 )) -le "$total" ]
}

check_exec() {
	local pid F=$PYWL before after total unknown
	pid=$(pidof_wl "py$1-exec")
	grep -F "[pid $pid];" "$T/py$1-life.folded" | grep -v '^off-CPU\|^scheduling' > "$T/py$1.exec" || true
	total=$(awk '/_\[py\]/ {s += $NF} END {print s + 0}' "$T/py$1.exec")
	before=$(awk -v k="before_exec ($F:" 'index($0, k) {s += $NF} END {print s + 0}' "$T/py$1.exec")
	after=$(awk -v k="after_exec ($F:" 'index($0, k) {s += $NF} END {print s + 0}' "$T/py$1.exec")
	unknown=$(awk 'index($0, "[unknown]_[py]") {s += $NF} END {print s + 0}' "$T/py$1.exec")
	echo "$2: a process that execs: $total samples with Python frames, $before before, $after after, $unknown unknown"
	[ "$before" -ge 10 ]
	[ "$after" -ge 10 ]
	[ $(( unknown * 10 )) -le "$total" ]
}

@test "python: a process that exits or execs while sampled keeps its frames named" {
	each_py check_exit
	each_py check_exec
}
