#!/usr/bin/env bats
# Python frames in every stack: cpa-capture walks the interpreter's frames
# in BPF, cpa-unwind names them and splices them where the eval function's
# frames are. Every CPython on the machine is tested: Debian's
# /usr/bin/python3, every python3 on PATH (a source-built one has its own
# binary layout: libpython shared, not linked in) and every one pyenv
# installed, each named in the messages. Every supported version runs the
# chain workload of tests/workloads/py_chain.py; Debian's python3 and the
# oldest other supported version run every workload; the
# newest older version is the unsupported one. All of them run at once
# under one live capture | unwind pipeline (on- and off-CPU), and the
# processes that exit or exec are started once cpa-unwind has caught up.

bats_require_minimum_version 1.5.0

load capture_helper

PYWL="$CPA_SRCDIR/tests/workloads/py_chain.py"
FULL="chain cext offcpu threads loop garbage"
# the workloads outlive the capture and its unwinding (cpa-unwind reads
# their code objects from their memory); the set-up stops them
SECONDS_RUN=300

# Every CPython 3 on the machine, by its real executable, once each, with
# its version: "PATH 3.11"
interpreters() {
	local p
	{
		echo /usr/bin/python3
		type -a -P python3 2>/dev/null || true
		ls -d /usr/bin/python3.* /usr/local/bin/python3.* \
			"${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3 2>/dev/null |
			grep -E '/python3(\.[0-9]+)?$' || true
	} | while read -r p; do
		"$p" -c 'import os, sys; print(os.path.realpath(sys.executable), "%d.%d" % sys.version_info[:2])' 2>/dev/null || true
	done | awk '!seen[$1]++'
}

supported() { [[ "$1" =~ ^3\.(9|1[0-3])$ ]]; }

# launch NAME CMD...: a workload in the background, its output in NAME.out
launch() {
	local name=$1; shift
	"$@" > "$T/$name.out" 2>&1 3>&- &
	echo $! > "$T/$name.bgpid"
}

# ready NAME: waits for the workload's "ready PID", kept in NAME.pid
ready() {
	wait_for 60 grep -q '^ready ' "$T/$1.out"
	awk '/^ready /{print $2; exit}' "$T/$1.out" > "$T/$1.pid"
}

# unwound FILE N: cpa-unwind's statistics FILE counts N samples or more
unwound() {
	[ -f "$1" ] && awk -F= -v n="$2" '$1 == "samples" && $2 >= n { ok = 1 } END { exit !ok }' "$1"
}

# caught_up: cpa-unwind has named all but the last two seconds' samples
# of what the capture wrote so far (its stats are written every second)
caught_up() {
	local n
	n=$("$CPA_BUILDDIR/tests/tools/cpa-dump" < "$T/all.cpa" 2>/dev/null |
		awk '$1 == "raw" { n++ } END { print n + 0 }')
	[ "$n" -ge 100 ] || return 1
	unwound "$T/all.stats" $(( n - 800 ))
}

# Roles: every supported interpreter runs "chain"; Debian's and the
# oldest other supported version (not 3.11, Debian's; before 3.11 the
# frames are frame objects, threads named by pthread_t) run every
# workload and the exit and exec ones; the first 3.12+ runs the chain under -X perf too; the newest
# version older than cpa knows is the unsupported one, next to a C
# program that only looks like Python.
assign_roles() {
	local exe ver i=0 old=
	while read -r exe ver; do
		if ! supported "$ver"; then
			[[ "$ver" =~ ^3\.[0-8]$ ]] && old="$exe $ver"
			continue
		fi
		i=$((i + 1))
		echo "$exe" > "$T/py$i.name"
		echo "$ver" > "$T/py$i.ver"
		echo chain > "$T/py$i.modes"
	done < <(sort -k2,2V "$T/interpreters")
	echo "$i" > "$T/count"
	local full=() n
	for n in $(seq 1 "$i"); do
		[ "$(cat "$T/py$n.name")" = "$(realpath /usr/bin/python3)" ] && full+=("$n")
	done
	local others=()
	for n in $(seq 1 "$i"); do
		[ "$(cat "$T/py$n.ver")" = 3.11 ] || others+=("$n")
	done
	if [ "${#others[@]}" -gt 0 ]; then
		full+=("${others[0]}")
	fi
	local uniq
	uniq=$(printf '%s\n' "${full[@]}" | sort -un)
	for n in $uniq; do
		echo "$FULL" > "$T/py$n.modes"
		echo "$n" >> "$T/full"
	done
	for n in $(seq 1 "$i"); do
		if [[ "$(cat "$T/py$n.ver")" =~ ^3\.1[2-9]$ ]]; then
			echo "$n" > "$T/perf"
			break
		fi
	done
	echo "$old" > "$T/old"
}

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	interpreters > "$T/interpreters"
	: > "$T/full"
	: > "$T/perf"
	assign_roles
	local i n py m names=()
	n=$(cat "$T/count")
	# every workload at once, then each waited for: the interpreters
	# start slowly on a loaded machine
	for i in $(seq 1 "$n"); do
		py=$(cat "$T/py$i.name")
		for m in $(cat "$T/py$i.modes"); do
			launch "py$i-$m" "$py" "$PYWL" "$m" "$SECONDS_RUN"
			names+=("py$i-$m")
		done
	done
	for i in $(cat "$T/perf"); do
		launch "py$i-perf" "$(cat "$T/py$i.name")" -X perf "$PYWL" chain "$SECONDS_RUN"
		names+=("py$i-perf")
	done
	launch unsupported "$WL/python_unsupported" "$SECONDS_RUN"
	names+=(unsupported)
	if [ -s "$T/old" ]; then
		launch old "$(awk '{print $1}' "$T/old")" "$PYWL" chain "$SECONDS_RUN"
		names+=(old)
	fi
	local life=()
	for i in $(cat "$T/full"); do
		py=$(cat "$T/py$i.name")
		launch "py$i-exit" "$py" "$PYWL" chain 12
		launch "py$i-exec" "$py" "$PYWL" exec 14
		life+=("py$i-exit" "py$i-exec")
	done
	for m in "${names[@]}" "${life[@]}"; do
		ready "$m"
	done
	local pids
	pids=$(for m in "${names[@]}" "${life[@]}"; do pidof_wl "$m"; done | paste -sd,)
	# one live pipeline: cpa-unwind reads code objects while their
	# processes live, and the stream is kept for its meta records. The
	# dozen spinning workloads would starve the pipeline of CPU on two
	# cores (the sanitized build most), and a process gone before
	# cpa-unwind gets to its samples cannot be read: it runs ahead of
	# them, as a profiler on a busy host should be set to.
	mkfifo "$T/cap.pipe" "$T/unwind.pipe"
	nice -n -10 cpa-unwind --folded --labels pid,tid --load-wait 10s --stats-file "$T/all.stats" \
		--stats-interval 1s < "$T/unwind.pipe" > "$T/all.folded" 3>&- &
	echo $! > "$T/all.upid"
	nice -n -10 tee "$T/all.cpa" < "$T/cap.pipe" > "$T/unwind.pipe" 3>&- &
	echo $! > "$T/all.tpid"
	# blocked intervals only: on a busy machine every preemption of the
	# spinning workloads would be a runqueue sample to unwind
	nice -n -10 cpa-capture --freq 99 --offcpu --offcpu-phase blocked --pid "$pids" > "$T/cap.pipe" 2> "$T/all.err" 3>&- &
	echo $! > "$T/all.cpid"
	wait_for 60 cap_attached all
	for m in "${names[@]}"; do
		kill -USR1 "$(pidof_wl "$m")"
	done
	# the processes that exit and exec go once cpa-unwind has caught up
	# with the others' samples: a cold start (kallsyms, each
	# interpreter's CFI) takes seconds on a busy host, longer under ASan
	wait_for 120 caught_up
	for m in "${life[@]}"; do
		kill -USR1 "$(pidof_wl "$m")"
	done
	for m in "${life[@]}"; do
		wait "$(cat "$T/$m.bgpid")"
	done
	kill -INT "$(cat "$T/all.cpid")"
	wait "$(cat "$T/all.cpid")"
	wait "$(cat "$T/all.tpid")"
	wait "$(cat "$T/all.upid")"
	for m in "${names[@]}"; do
		kill "$(cat "$T/$m.bgpid")"
	done
}

# what a failed set-up left running
teardown_file() {
	kill $(cat "$T"/*.bgpid "$T"/*.cpid "$T"/*.upid 2>/dev/null) 2>/dev/null || true
}

# each_py CHECK [LIST]: runs CHECK N NAME for every supported interpreter
# (or those LIST names, one number a line), its name and version printed
# first so a failure says which; never under `if` or `||`, where bash
# would ignore the failures inside CHECK
each_py() {
	local i
	for i in $(if [ -n "${2:-}" ]; then cat "$2"; else seq 1 "$(cat "$T/count")"; fi); do
		echo "checking $(cat "$T/py$i.name") ($(cat "$T/py$i.ver"))"
		"$1" "$i" "$(cat "$T/py$i.name") ($(cat "$T/py$i.ver"))"
	done
}

# each_full CHECK: CHECK for the interpreters that run every workload
each_full() {
	[ -s "$T/full" ]
	each_py "$1" "$T/full"
}

# line TEXT: the line of py_chain.py that holds TEXT (a comment marks it)
line() { awk -v t="# $1" 'index($0, t) { print NR; exit }' "$PYWL"; }

# tid_of PY MODE NAME: the native id of the workload's thread NAME
tid_of() { awk -v n="$3" '$1 == "thread" && $2 == n {print $3}' "$T/py$1-$2.out"; }

# lines_of NAME: the folded lines of that workload's process
lines_of() {
	grep -F "[pid $(pidof_wl "$1")];" "$T/all.folded" || true
}

# lines PY MODE: the folded lines of interpreter PY's workload MODE
lines() { lines_of "py$1-$2"; }

# py_only FILE: its folded lines with only their Python frames, in order:
# before 3.11 the interpreter's C functions that make a call
# (function_code_fastcall, _PyEval_Vector) sit between any two
py_only() {
	awk '{ n = split(substr($0, 1, length($0) - length($NF) - 1), f, ";"); o = ""
		for (i = 1; i <= n; i++) if (f[i] ~ /_\[py\]$/) o = o (o == "" ? "" : ";") f[i]
		print (o == "" ? "-" : o), $NF }' "$1"
}

@test "python: every CPython on the machine is found and tested" {
	run cat "$T/interpreters"
	echo "$output"
	[[ "$output" == *"$(realpath /usr/bin/python3) "* ]]
	[ "$(cat "$T/count")" -ge 1 ]
	# what this image puts first on PATH, if it is another one, and every
	# pyenv version cpa supports
	local first exe ver
	first=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')
	grep -q "^$first " "$T/interpreters"
	for exe in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3; do
		[ -x "$exe" ] || continue
		ver=$("$exe" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
		supported "$ver" || continue
		echo "pyenv $ver: $exe"
		grep -qxF "$(realpath "$exe")" "$T"/py*.name
	done
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
	py_only "$f" > "$f.py"
	share=$(share_with_chain "$f.py" . "main ($F:$(line main-chain))_[py];handler ($F:$(line handler-parse))_[py];parse ($F:$(line parse-compute))_[py]")
	echo "$2: chain in $share%"
	[ "$share" -ge 90 ]
	# compute_hot, on one of its loop's two lines, right under parse
	share=$(awk -v a="parse ($F:$(line parse-compute))_[py];compute_hot ($F:$(line hot-for))_[py]" \
		-v b="parse ($F:$(line parse-compute))_[py];compute_hot ($F:$(line hot-body))_[py]" '
		{ s += $NF } index($0, a) || index($0, b) { h += $NF }
		END { print s ? int(100 * h / s) : 0 }' "$f.py")
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
	each_full check_cext
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
	each_full check_offcpu
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
	each_full check_threads
}

# check_unsupported NAME VERSION: one note, in the stream and on stderr,
# and no Python frame in the workload's samples
check_unsupported() {
	local pid n
	pid=$(pidof_wl "$1")
	n=$(dump all | grep -c "^meta python=pid $pid: CPython $2 .*not supported.*native frames only" || true)
	echo "$1: CPython $2: $n notes in the stream"
	[ "$n" -eq 1 ]
	n=$(grep -c "pid $pid: CPython $2 .*not supported" "$T/all.err" || true)
	[ "$n" -eq 1 ]
	lines_of "$1" | grep -v '^off-CPU\|^scheduling' > "$T/$1.lines"
	n=$(awk '{s += $NF} END {print s + 0}' "$T/$1.lines")
	echo "$1: $n samples"
	[ "$n" -ge 10 ]
	run grep -cF "_[py]" "$T/$1.lines"
	[ "$output" = 0 ]
}

@test "python: a process of a version cpa has no table for is sampled natively, with one note" {
	check_unsupported unsupported 3.8
	# its native chain
	local share
	share=$(share_with_chain "$T/unsupported.lines" . "main;fake_eval;fake_spin")
	[ "$share" -ge 90 ]
	# and a real interpreter older than 3.9, where the machine has one
	if [ -s "$T/old" ]; then
		check_unsupported old "$(awk '{print $2}' "$T/old")"
		share=$(share_with_chain "$T/old.lines" . "Py_RunMain")
		[ "$share" -ge 90 ]
	fi
}

@test "python: 3.12's -X perf trampolines are dropped where the walker names the frames" {
	[ -s "$T/perf" ] || skip "no CPython 3.12 or later on this host"
	local i f F=$PYWL total share
	i=$(cat "$T/perf")
	f="$T/perf.lines"
	lines_of "py$i-perf" | grep -v '^off-CPU\|^scheduling' > "$f"
	total=$(awk '{s += $NF} END {print s + 0}' "$f")
	echo "$(cat "$T/py$i.name") -X perf: $total samples"
	[ "$total" -ge 20 ]
	# the perf map names each eval call's code ("py::handler:..."): none
	# is kept, and each function is named once, by the walker
	run ! grep -F 'py::' "$f"
	share=$(share_with_chain "$f" . "main ($F:$(line main-chain))_[py];handler ($F:$(line handler-parse))_[py];parse ($F:$(line parse-compute))_[py]")
	echo "chain in $share%"
	[ "$share" -ge 90 ]
	run awk '{ n = split($0, a, "handler \\("); if (n > 2) bad++ } END { exit bad > 0 }' "$f"
	[ "$status" -eq 0 ]
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
	each_full check_corrupt
}

# unknown_outside_imports FILE: the samples with an unnamed Python frame,
# but for those in an import: a module's top-level code object lives
# only while it is imported (the exec'd interpreter's start-up imports
# dozens), and on a loaded host cpa-unwind may get to it after that
unknown_outside_imports() {
	awk '!index($0, "_find_and_load (") && index($0, "[unknown]_[py]") {s += $NF}
		END {print s + 0}' "$1"
}

# the samples of a process that exits: the ones with Python frames (not
# those of its interpreter's finalization and its exit) named
check_exit() {
	local pid F=$PYWL total chain unknown
	pid=$(pidof_wl "py$1-exit")
	grep -F "[pid $pid];" "$T/all.folded" | grep -v '^off-CPU\|^scheduling' > "$T/py$1.exit" || true
	total=$(awk '/_\[py\]/ {s += $NF} END {print s + 0}' "$T/py$1.exit")
	chain=$(awk -v k="handler ($F:$(line handler-parse))_[py];parse ($F:$(line parse-compute))_[py]" \
		'index($0, k) {s += $NF} END {print s + 0}' <(py_only "$T/py$1.exit"))
	unknown=$(unknown_outside_imports "$T/py$1.exit")
	echo "$2: a process that exits: $total samples with Python frames, $chain with its chain, $unknown unknown"
	[ "$chain" -ge 10 ]
	[ $(( chain * 100 )) -ge $(( total * 90 )) ]
	[ $(( unknown * 10 )) -le "$total" ]
}

check_exec() {
	local pid F=$PYWL before after total unknown
	pid=$(pidof_wl "py$1-exec")
	grep -F "[pid $pid];" "$T/all.folded" | grep -v '^off-CPU\|^scheduling' > "$T/py$1.exec" || true
	total=$(awk '/_\[py\]/ {s += $NF} END {print s + 0}' "$T/py$1.exec")
	before=$(awk -v k="before_exec ($F:" 'index($0, k) {s += $NF} END {print s + 0}' "$T/py$1.exec")
	after=$(awk -v k="after_exec ($F:" 'index($0, k) {s += $NF} END {print s + 0}' "$T/py$1.exec")
	unknown=$(unknown_outside_imports "$T/py$1.exec")
	echo "$2: a process that execs: $total samples with Python frames, $before before, $after after, $unknown unknown"
	[ "$before" -ge 10 ]
	[ "$after" -ge 10 ]
	[ $(( unknown * 10 )) -le "$total" ]
}

@test "python: a process that exits or execs while sampled keeps its frames named" {
	each_full check_exit
	each_full check_exec
}
