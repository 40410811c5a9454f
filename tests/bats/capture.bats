#!/usr/bin/env bats
# cpa-capture on-CPU sampling, filters, backends and side-band records,
# with real BPF against workloads of known behaviour. setup_file starts
# the workloads and all captures at once (each test asserts on one of
# them), so the file takes about 15 s however many tests it has.

load capture_helper

cap_wait() {
	local rc=0
	wait "$(cat "$T/$1.cpid")" || rc=$?
	echo "$rc" > "$T/$1.status"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	# The workloads outlive any setup (teardown_file stops them): on a loaded
	# machine starting them and attaching twelve captures took 27 s.
	# CPU 0 for the spinner whose samples are counted, CPU 1 for the rest
	start_bg spin "$WL/chain_fp" --seconds 60 --pin 0
	start_bg thr "$WL/chain_fp" --seconds 60 --threads 1 --pin 1
	# a name no other test's workload has, for --comm
	COMM=capcomm$(( RANDOM % 100000 ))
	cp "$WL/chain_nofp" "$T/$COMM"
	echo "$COMM" > "$T/comm.name"
	start_bg nofp "$T/$COMM" --seconds 60 --pin 1
	start_bg cgw "$WL/chain_fp" --seconds 60 --pin 1
	start_bg ctw "$WL/chain_fp" --seconds 60 --pin 1

	# a cgroup and a container-like cgroup of our own
	local cg2 cid
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	CG=$cg2/cpa-capture-test-$$
	cid=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mkdir -p "$CG/plain" "$CG/docker-$cid.scope"
	echo "$(pidof_wl cgw)" > "$CG/plain/cgroup.procs"
	echo "$(pidof_wl ctw)" > "$CG/docker-$cid.scope/cgroup.procs"
	echo "$CG" > "$T/cg.path"
	echo "$cid" > "$T/cid"

	local thr worker
	thr=$(pidof_wl thr)
	worker=$(ls "/proc/$thr/task" | grep -vx "$thr" | sed -n 1p)
	echo "$worker" > "$T/worker.tid"

	cap full --duration 10
	cap cpu0 --duration 10 --cpu 0
	cap cpu1 --duration 10 --cpu 1
	# the filters' captures run as long as the whole-host ones, so that
	# each selected task gets samples on a busy machine too
	# the snapshot's own tests: chain_fp would take its FP chain alone
	cap pid --duration 8 --snapshot=always --pid "$thr"
	cap tid --duration 8 --tid "$worker"
	cap comm --duration 8 --comm "$COMM"
	cap cgroup --duration 8 --cgroup "$CG/plain"
	cap container --duration 8 --container "${cid:0:12}"
	cap perf --duration 8 --backend perf --pid "$thr"
	cap konly --duration 4 --kernel-only --pid "$(pidof_wl spin)"
	cap stack4k --duration 8 --snapshot=always --stack-size 4K --pid "$thr"
	cap fpauto --duration 8 --stats --snapshot=auto --pid "$thr"
	# a SIGALRM every millisecond, from before the BPF load
	cap tinyint --duration 3 --stats-file "$T/tinyint.stats" \
		--stats-interval 1ms --pid "$(pidof_wl spin)"
	cap nofpauto --duration 8 --stats --snapshot=auto --pid "$(pidof_wl nofp)"
	cap stats --duration 4 --stats --pid "$(pidof_wl spin)" \
		--stats-file "$T/capture.stats" --stats-interval 1s
	# the spinner's CPU time is counted over the window in which "full"
	# samples: from its attach (its feature line) to its end, not from
	# when the slowest of the twelve captures attached
	wait_for 30 cap_attached full
	cpu_ticks "$(pidof_wl spin)" > "$T/spin.ticks0"
	# a process born and gone while "full" runs, however slowly the other
	# captures attach
	"$WL/chain_fp" --seconds 1 > "$T/short.out" 3>&-
	awk '/^ready /{print $2; exit}' "$T/short.out" > "$T/short.pid"
	for c in cpu0 cpu1 pid tid comm cgroup container perf konly \
		stack4k fpauto nofpauto tinyint stats; do
		wait_for 30 cap_attached $c
	done

	cap_wait full
	cpu_ticks "$(pidof_wl spin)" > "$T/spin.ticks1"
	for c in cpu0 cpu1 pid tid comm cgroup container perf konly stack4k \
		fpauto nofpauto tinyint stats; do
		cap_wait $c
	done
}

teardown_file() {
	local f
	for f in "$T"/*.bgpid; do
		[ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	for f in "$T"/*.bgpid; do
		[ -e "$f" ] && while kill -0 "$(cat "$f")" 2>/dev/null; do sleep 0.05; done
	done
	if [ -e "$T/cg.path" ]; then
		local cg
		cg=$(cat "$T/cg.path")
		rmdir "$cg"/*/ "$cg" 2>/dev/null || true
	fi
}

# raw samples of a capture as "pid tid cpu kind ..." key=value lines
raw() { dump "$1" | awk '$1 == "raw"'; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }

@test "capture: every capture ran and ended cleanly" {
	for c in full cpu0 cpu1 pid tid comm cgroup container perf konly \
		stack4k stats; do
		echo "$c: status $(cat "$T/$c.status")"; cat "$T/$c.err"
		[ "$(cat "$T/$c.status")" -eq 0 ]
		dump $c | tail -1 | grep -q '^end '
	done
}

@test "capture: a spinner pinned to CPU 0 gets --freq samples per CPU-second, all on CPU 0" {
	local spin n ticks expect tol
	spin=$(pidof_wl spin)
	n=$(raw full | awk -v p="pid=$spin" '$3 == p && $6 == "kind=oncpu"' | wc -l)
	ticks=$(( $(cat "$T/spin.ticks1") - $(cat "$T/spin.ticks0") ))
	# 49 Hz x the CPU time it got (100 ticks/s): 490 on an idle machine;
	# on a busy one it gets less CPU and fewer samples
	expect=$(( 49 * ticks / 100 ))
	# +-30%, and never less than +-8 samples when it got little CPU
	tol=$(( expect * 30 / 100 < 8 ? 8 : expect * 30 / 100 ))
	echo "spinner: $n samples, $ticks ticks of CPU, expected $expect +-$tol"
	[ "$ticks" -ge 30 ]
	[ "$n" -ge $(( expect - tol )) ]
	[ "$n" -le $(( expect + tol )) ]
	off=$(raw full | awk -v p="pid=$spin" '$3 == p && $5 != "cpu=0"' | wc -l)
	[ "$off" -eq 0 ]
}

@test "capture: --cpu 0 captures the pinned spinner and only CPU 0, --cpu 1 does not see it" {
	local spin full n0 n1
	spin=$(pidof_wl spin)
	full=$(raw full | awk -v p="pid=$spin" '$3 == p' | wc -l)
	n0=$(raw cpu0 | awk -v p="pid=$spin" '$3 == p' | wc -l)
	n1=$(raw cpu1 | awk -v p="pid=$spin" '$3 == p' | wc -l)
	echo "spinner samples: whole host $full, --cpu 0 $n0, --cpu 1 $n1"
	[ "$n0" -ge $(( full * 70 / 100 )) ]
	[ "$n1" -eq 0 ]
	got=$(raw cpu0 | awk '$5 != "cpu=0"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw cpu1 | awk '$5 != "cpu=1"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw cpu1 | wc -l)
	[ "$got" -gt 0 ]
}

@test "capture: --pid captures only that process, its worker thread included" {
	local thr worker
	thr=$(pidof_wl thr); worker=$(cat "$T/worker.tid")
	raw pid | awk '{print $3, $4}' | sort | uniq -c
	got=$(raw pid | wc -l)
	[ "$got" -gt 10 ]
	got=$(raw pid | awk -v p="pid=$thr" '$3 != p' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw pid | awk -v t="tid=$worker" '$4 == t' | wc -l)
	[ "$got" -gt 3 ]
	got=$(raw pid | awk -v t="tid=$thr" '$4 == t' | wc -l)
	[ "$got" -gt 3 ]
	# the worker's frame-pointer chain: hot_leaf, level_b, level_a, run,
	# worker_main, libc (from the snapshot where it holds the stack)
	got=$(cpa-unwind --unwind=fp --folded <"$T/pid.cpa" 2>/dev/null |
		awk '/worker_main;run;level_a;level_b;hot_leaf/ { s += $NF } END { print s + 0 }')
	[ "$got" -gt 3 ]
}

@test "capture: --tid captures only that thread" {
	local worker
	worker=$(cat "$T/worker.tid")
	got=$(raw tid | wc -l)
	[ "$got" -gt 3 ]
	got=$(raw tid | awk -v t="tid=$worker" '$4 != t' | wc -l)
	[ "$got" -eq 0 ]
}

@test "capture: --comm selects the tasks with that name" {
	local nofp comm
	nofp=$(pidof_wl nofp); comm=$(cat "$T/comm.name")
	raw comm | awk '{print $3, $10, $11}' | sort | uniq -c
	got=$(raw comm | wc -l)
	[ "$got" -gt 3 ]
	got=$(raw comm | awk -v p="pid=$nofp" '$3 != p' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw comm | awk -v c="$comm" '$10 != "comm=" c && $11 != "pcomm=" c' | wc -l)
	[ "$got" -eq 0 ]
}

@test "capture: --cgroup selects the tasks of a cgroup the test created" {
	local cgw id
	cgw=$(pidof_wl cgw)
	id=$(stat -c %i "$(cat "$T/cg.path")/plain")
	raw cgroup | awk '{print $3, $8}' | sort | uniq -c
	got=$(raw cgroup | wc -l)
	[ "$got" -gt 3 ]
	got=$(raw cgroup | awk -v p="pid=$cgw" '$3 != p' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw cgroup | awk -v c="cgroup=$id" '$8 != c' | wc -l)
	[ "$got" -eq 0 ]
}

@test "capture: --container selects a container by id prefix" {
	local ctw
	ctw=$(pidof_wl ctw)
	raw container | awk '{print $3}' | sort | uniq -c
	got=$(raw container | wc -l)
	[ "$got" -gt 3 ]
	got=$(raw container | awk -v p="pid=$ctw" '$3 != p' | wc -l)
	[ "$got" -eq 0 ]
}

# the call chains (return addresses, leaf IP dropped) that carry at least
# 10% of a capture's samples
# the frame-pointer chains of at least a tenth of the samples: the
# kernel's walk, or where the snapshot held the whole stack cpa-unwind's
# walk of it, which must be the same
chains() {
	set -o pipefail
	cpa-unwind --unwind=fp --folded <"$T/$1.cpa" 2>/dev/null |
		awk '{ c = $NF; $NF = ""; n[$0] += c; t += c } END { for (s in n) if (n[s] * 10 >= t) print s }' |
		sort
}

@test "capture: --backend perf produces the same call chains as BPF" {
	local thr
	thr=$(pidof_wl thr)
	grep -q 'backend perf' "$T/perf.err"
	got=$(raw perf | wc -l)
	[ "$got" -gt 10 ]
	got=$(raw perf | awk -v p="pid=$thr" '$3 != p' | wc -l)
	[ "$got" -eq 0 ]
	echo "bpf:"; chains pid
	echo "perf:"; chains perf
	got=$(chains pid | wc -l)
	[ "$got" -eq 2 ]
	[ "$(chains pid)" = "$(chains perf)" ]
	# registers and a stack snapshot for DWARF unwinding, as with BPF
	got=$(raw perf | awk '$13 != "nu=0" && ($14 != "nregs=3" || $15 == "stack=0")' | wc -l)
	[ "$got" -eq 0 ]
}

@test "capture: --kernel-only sends kernel stacks only" {
	got=$(raw konly | wc -l)
	[ "$got" -gt 3 ]
	got=$(raw konly | awk '$13 != "nu=0" || $14 != "nregs=0" || $15 != "stack=0"' | wc -l)
	[ "$got" -eq 0 ]
	dump konly | grep -x 'meta stack_size=0' >/dev/null
}

@test "capture: user samples carry registers and a stack snapshot of at most --stack-size" {
	# default 16 KiB: every sample of the process has ip/sp/bp and stack
	# bytes, and a snapshot of its whole stack no kernel FP chain
	got=$(raw pid | awk '$14 != "nregs=3" || $15 == "stack=0"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw pid | awk '$9 == "flags=0x0" && $13 != "nu=0"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw pid | field stack | awk '$1 > 16384' | wc -l)
	[ "$got" -eq 0 ]
	# the worker's stack is deeper than 4 KiB: cut at 4096 and flagged
	got=$(raw pid | field stack | awk '$1 > 4096' | wc -l)
	[ "$got" -gt 0 ]
	got=$(raw stack4k | field stack | awk '$1 > 4096' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw stack4k | awk '$15 == "stack=4096"' | wc -l)
	[ "$got" -gt 0 ]
	got=$(raw stack4k | awk '$15 == "stack=4096" && $9 !~ /^flags=0x[0-9a-f]*[13579bdf]$/' | wc -l)
	[ "$got" -eq 0 ]
	# a cut snapshot keeps the kernel's FP chain, whose leaf is the IP
	# register in user mode
	got=$(raw stack4k | awk '$9 == "flags=0x1" && $13 == "nu=0"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw stack4k | awk '$9 == "flags=0x1" { split($17, u, /[=,]/); split($18, r, /[=,]/); if (u[2] != r[2]) print }' | wc -l)
	[ "$got" -eq 0 ]
}

# took NAME PATH: the samples --stats says took PATH (frame pointers,
# snapshot, both)
took() {
	sed -n 's/^cpa-capture:   user stacks: \([0-9]*\) frame pointers, \([0-9]*\) snapshot, \([0-9]*\) snapshot and frame pointers$/\1 \2 \3/p' "$T/$1.err" |
		awk -v p="$2" '{ print p == "fp" ? $1 : p == "snapshot" ? $2 : $3 }'
}

@test "capture: --snapshot=auto takes a frame-pointer build's FP chain alone, and the snapshot elsewhere" {
	grep 'user stacks' "$T/fpauto.err" "$T/nofpauto.err"
	# chain_fp keeps frame pointers: but for its first 8 samples (which
	# teach cpa-unwind its roots) and frameless moments, the FP chain
	fp=$(took fpauto fp)
	snap=$(took fpauto snapshot)
	both=$(took fpauto both)
	[ "$fp" -ge 20 ]
	[ $(( snap + both )) -ge 8 ]
	[ "$fp" -ge $(( 9 * (fp + snap + both - 8) / 10 )) ]
	# ...which is in the stream as a chain with registers and no stack,
	# its leaf the IP register, and deep: main or worker_main, run,
	# level_a, level_b, hot_leaf and libc's start
	got=$(raw fpauto | awk '$15 == "stack=0" && $14 == "nregs=3"' | wc -l)
	[ "$got" -eq "$fp" ]
	got=$(raw fpauto | awk '$15 == "stack=0" { split($13, n, "="); if (n[2] < 6) print }' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw fpauto | awk '$15 == "stack=0" { split($17, u, /[=,]/); split($18, r, /[=,]/); if (u[2] != r[2]) print }' | wc -l)
	[ "$got" -eq 0 ]
	# chain_nofp does not: every sample takes the snapshot (its stack
	# is deeper than the copy, so the kernel's chain too)
	[ "$(took nofpauto fp)" -eq 0 ]
	[ $(( $(took nofpauto snapshot) + $(took nofpauto both) )) -ge 20 ]
}

@test "capture: running processes at start, then exec, mappings and exit as they happen" {
	local spin short
	spin=$(pidof_wl spin); short=$(pidof_wl short)
	dump full | grep "^task .* event=seen pid=$spin tid=$spin .* comm=chain_fp$" >/dev/null
	dump full | grep "^mmap .* pid=$spin .*path=$CPA_BUILDDIR/tests/workloads/chain_fp$" >/dev/null
	# the build id read from the file at start is the one the kernel
	# reports for a new mapping of the same file
	local id_seen id_new
	id_seen=$(dump full | grep "^mmap .* pid=$spin .*path=$CPA_BUILDDIR/tests/workloads/chain_fp$" | sed -n 's/.* buildid=\([0-9a-f]*\) .*/\1/p' | sort -u)
	id_new=$(dump full | grep "^mmap .* pid=$short .*path=$CPA_BUILDDIR/tests/workloads/chain_fp$" | sed -n 's/.* buildid=\([0-9a-f]*\) .*/\1/p' | sort -u)
	echo "build id at start: $id_seen, from the kernel: $id_new"
	[ "${#id_seen}" -eq 40 ]
	[ "$id_seen" = "$id_new" ]
	dump full | grep -E " pid=$short " | cut -c1-200 | awk '{print $1, $3, $4, $5}' | uniq -c
	local exec mmap first last exit
	exec=$(dump full | grep -n "^task .* event=exec pid=$short .*comm=chain_fp$" | cut -d: -f1 | sed -n 1p)
	mmap=$(dump full | grep -n "^mmap .* pid=$short .*buildid=[0-9a-f]\{40\} path=$CPA_BUILDDIR/tests/workloads/chain_fp$" | cut -d: -f1 | sed -n 1p)
	# (before the exec the child is the shell that forked it)
	first=$(dump full | grep -n "^raw .* pid=$short .* comm=chain_fp " | cut -d: -f1 | sed -n 1p)
	last=$(dump full | grep -n "^raw .* pid=$short " | cut -d: -f1 | tail -1)
	exit=$(dump full | grep -n "^task .* event=exit pid=$short " | cut -d: -f1 | sed -n 1p)
	echo "exec $exec, mmap $mmap, samples $first..$last, exit $exit"
	[ -n "$exec" ]
	[ -n "$mmap" ]
	[ -n "$first" ]
	[ -n "$exit" ]
	[ "$exec" -lt "$mmap" ]
	[ "$mmap" -lt "$first" ]
	[ "$last" -lt "$exit" ]
	dump full | grep "^task .* event=fork pid=$short " >/dev/null
}

@test "capture: META records at start and an END record with the totals" {
	dump full | sed -n 1,20p | grep '^meta host=' >/dev/null
	dump full | grep -x "meta kernel=$(uname -r)" >/dev/null
	dump full | grep -x 'meta frequency=49' >/dev/null
	dump full | grep -x 'meta mode=oncpu' >/dev/null
	dump full | grep -x 'meta backend=bpf' >/dev/null
	dump full | grep -E '^meta event=(cpu-clock|cycles)$' >/dev/null
	local raws lost records
	raws=$(raw full | wc -l)
	lost=$(dump full | awk '$1 == "lost" { for (i = 2; i <= NF; i++) if ($i ~ /^count=/) s += substr($i, 7) } END { print s + 0 }')
	records=$(dump full | grep -vc '^end ')
	dump full | tail -1
	dump full | tail -1 | grep -qx "end samples=$raws lost=$lost records=$records"
}

@test "capture: --stats reports samples/s, drops and the BPF run time" {
	cat "$T/stats.err"
	grep -qE '^cpa-capture: [0-9.]+ s, [0-9]+ samples \([0-9.]+/s\)' "$T/stats.err"
	grep -qE '^cpa-capture:   lost' "$T/stats.err"
	grep -qE '^cpa-capture: bpf on_cpu: [1-9][0-9]* runs, [0-9]+ ns/run' "$T/stats.err"
}

@test "capture: a --stats-interval shorter than the BPF program's load does not keep it from loading" {
	# the verifier gives up on a pending signal
	grep -q 'backend bpf' "$T/tinyint.err"
	[ "$(cat "$T/tinyint.status")" -eq 0 ]
}

@test "capture: --stats-file keeps self statistics for cpa status" {
	cat "$T/capture.stats"
	grep -qx 'tool=cpa-capture' "$T/capture.stats"
	got=$(raw stats | wc -l)
	grep -qx "samples=$got" "$T/capture.stats"
	grep -qx 'lost=0' "$T/capture.stats"
	[ "$(sed -n 's/^bpf_run_ns=//p' "$T/capture.stats")" -gt 0 ]
	# and a line on stderr every --stats-interval
	[ "$(grep -c '^cpa-capture: stats: cpu ' "$T/stats.err")" -ge 3 ]
}

@test "capture: SIGTERM and SIGINT end the stream with its END record" {
	local sig pid
	for sig in TERM INT; do
		cap sig$sig
		wait_for 30 cap_attached sig$sig
		pid=$(cat "$T/sig$sig.cpid")
		kill -$sig "$pid"
		cap_wait sig$sig
		echo "SIG$sig: status $(cat "$T/sig$sig.status")"
		[ "$(cat "$T/sig$sig.status")" -eq 0 ]
		dump sig$sig | tail -1 | grep -q '^end samples='
	done
}

@test "capture: without CAP_BPF on-CPU sampling falls back to the perf backend, BPF-only modes fail" {
	# something to sample, however idle the rest of the host is
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 10
	# drop CAP_BPF and CAP_SYS_ADMIN, keep CAP_PERFMON
	run bash -c 'setpriv --bounding-set -bpf,-sys_admin cpa-capture --duration 1 > "$0/nocap.cpa"' "$T"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c 'BPF backend unavailable' <<< "$output")" -eq 1 ]
	[[ "$output" == *"BPF backend unavailable (cannot load the BPF program: Operation not permitted (needs CAP_BPF and CAP_PERFMON)): using the perf backend"* ]]
	dump nocap | grep -x 'meta backend=perf' >/dev/null
	got=$(raw nocap | wc -l)
	[ "$got" -gt 0 ]
	run setpriv --bounding-set -bpf,-sys_admin cpa-capture --duration 1 --offcpu
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == *"cannot load the BPF program: Operation not permitted (needs CAP_BPF and CAP_PERFMON); --offcpu needs the BPF backend" ]]
}

@test "capture: a closed stdout ends the capture cleanly" {
	run timeout 30 bash -c 'cpa-capture 2>/dev/null | head -c 100 > /dev/null; echo "${PIPESTATUS[0]}"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = 0 ]
}
