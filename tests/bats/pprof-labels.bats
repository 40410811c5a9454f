#!/usr/bin/env bats
# pprof output sliced by its labels: every sample carries pid, tid, comm,
# thread, container, pod, cgroup and env, so `go tool pprof -tags` lists
# them and `-tagfocus` keeps one process, thread or container; sample
# types follow the event kind. From cpa-render and cpa-query alike, on
# generated streams with a known truth and on a real capture.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	command -v go >/dev/null || skip_missing "no go (apt-get install golang-go)"
	MKSTREAM="$CPA_BUILDDIR/tests/tools/mkstream"
	GEN="$CPA_BUILDDIR/tests/tools/gen-stream"
	T0=1700000000
	NS=${T0}000000000
}

teardown() {
	kill_workloads
}

# focused PROFILE INDEX FILTER: the total go tool pprof shows for the
# samples that -tagfocus FILTER keeps, in sample type INDEX.
focused() {
	go tool pprof -top -nodefraction=0 -sample_index="$2" -tagfocus="$3" "$1" >"$T/top" 2>&1
	sed -n 's/^Showing nodes accounting for \([0-9]*\),.*/\1/p' "$T/top"
}

# truth_sum KIND COLUMN VALUE: the weight of gen-stream's truth lines of
# KIND (0 on-CPU, 1 off-CPU) whose COLUMN is VALUE.
truth_sum() {
	awk -F'\t' -v k="$1" -v c="$2" -v v="$3" \
		'$3 == k && $c == v { s += $13 } END { print s + 0 }' "$T/truth"
}

@test "pprof labels: -tagfocus on comm, pid, tid, container and env gives exactly their samples" {
	"$GEN" --start $T0 --duration 6 --rate 50 --procs 3 --offcpu 20 \
		--truth "$T/truth" >"$T/g.cpa"
	cpa-store --dir "$T/store" <"$T/g.cpa"
	local range=(--dir "$T/store" --from @$T0 --to @$((T0 + 6)))
	cpa-render --format pprof -o "$T/render.pb.gz" "$T/g.cpa"
	cpa-query "${range[@]}" --format pprof -o "$T/query.pb.gz"
	# cpa show's way: the stored stream through cpa-render
	cpa-query "${range[@]}" --format stream |
		cpa-render --format pprof -o "$T/show.pb.gz"
	# every label is listed, each value with its share
	go tool pprof -tags -sample_index=samples "$T/render.pb.gz" >"$T/tags" 2>&1
	for key in comm pid tid thread container env; do
		grep -q "^ *$key: Total" "$T/tags"
	done
	grep -Eq '^ +[0-9.]+ \( *[0-9.]+%\): proc1$' "$T/tags"
	# samples (on-CPU) and off-CPU nanoseconds, by each label
	f=$T/render.pb.gz
	want=$(truth_sum 0 8 proc1)
	[ "$want" -gt 0 ]
	[ "$(focused "$f" samples 'comm=^proc1$')" = "$want" ]
	want=$(truth_sum 0 4 1002)
	[ "$want" -gt 0 ]
	[ "$(focused "$f" samples 'pid=^1002$')" = "$want" ]
	want=$(truth_sum 0 5 1000)
	[ "$want" -gt 0 ]
	[ "$(focused "$f" samples 'tid=^1000$')" = "$want" ]
	want=$(truth_sum 0 10 ctr1)
	[ "$want" -gt 0 ]
	[ "$(focused "$f" samples 'container=^ctr1$')" = "$want" ]
	# off-CPU nanoseconds, shown by go tool pprof in its own unit:
	# -raw's column sums of the focused samples
	want=$(truth_sum 1 11 env0)
	[ "$want" -gt 0 ]
	go tool pprof -raw -tagfocus='env=^env0$' "$f" >"$T/raw" 2>&1
	got=$(awk '/^Samples:/ { on = 1; getline; next }
		/^Locations/ { on = 0 } on && /:/ { s += $3 }
		END { print s + 0 }' "$T/raw")
	[ "$got" = "$want" ]
	# cpa-query, cpa show's way and the live stream make the same
	# samples, labels and all; the store's profile spans whole windows
	for pb in render query show; do
		go tool pprof -raw "$T/$pb.pb.gz" 2>&1 |
			grep -Ev '^(Time|Duration): ' >"$T/$pb.raw"
	done
	diff "$T/render.raw" "$T/query.raw"
	diff "$T/show.raw" "$T/query.raw"
	grep -q 'container:\[ctr1\]' "$T/show.raw"
}

@test "pprof labels: a cgroup path gives the container id, the pod UID and the path" {
	local id pod path
	id=$(printf 'c%.0s' {1..64})
	pod=1b2c3d4e-5f60-4718-8a9b-0c1d2e3f4a5b
	path="/kubepods/burstable/pod$pod/$id"
	cat >"$T/s.desc" <<-EOF
	$NS oncpu 7 7 0 app app 5 main;run
	container $path
	env APP=web
	$NS oncpu 8 9 0 web worker 3 main;serve
	EOF
	"$MKSTREAM" <"$T/s.desc" >"$T/s.cpa"
	cpa-render --format pprof -o "$T/s.pb.gz" "$T/s.cpa"
	go tool pprof -raw "$T/s.pb.gz" >"$T/raw" 2>&1
	grep -q "cgroup:\[$path\] comm:\[web\] container:\[$id\] env:\[APP=web\] pid:\[8\] pod:\[$pod\] thread:\[worker\] tid:\[9\]" "$T/raw"
	# no container, no env: no such labels, rather than empty ones
	grep -qx ' *comm:\[app\] pid:\[7\] thread:\[app\] tid:\[7\]' "$T/raw"
	[ "$(focused "$T/s.pb.gz" samples "pod=^$pod\$")" = 3 ]
	[ "$(focused "$T/s.pb.gz" samples "container=^$id\$")" = 3 ]
}

@test "pprof labels: sample types follow the event kind" {
	cat >"$T/k.desc" <<-EOF
	meta frequency 100
	$NS oncpu 1 1 0 app app 4 main;run
	$NS offcpu-blocked 1 1 0 app app 2000 main;wait
	$NS offcpu-delay 1 1 0 app app 3000 main;wait
	$NS irqoff 1 1 0 app app 5000 main;spin
	$NS probe 1 1 0 app app 6 main;probe_hit
	$NS mem-virt 1 1 0 app app 8192 main;mmap
	$NS mem-phys 1 1 0 app app 12288 main;fault
	$NS mem-usage 1 1 0 app app 4096 main;touch
	$NS heap-alloc 1 1 0 app app 1024 main;malloc
	$NS heap-inuse 1 1 0 app app 512 main;keep
	EOF
	"$MKSTREAM" <"$T/k.desc" >"$T/k.cpa"
	cpa-render --format pprof -o "$T/k.pb.gz" "$T/k.cpa"
	go tool pprof -raw "$T/k.pb.gz" >"$T/raw" 2>&1
	grep -qx 'samples/count cpu/nanoseconds\[dflt\] off_cpu/nanoseconds irq_off/nanoseconds events/count mem_virt/bytes mem_phys/bytes mem_usage/bytes alloc_space/bytes inuse_space/bytes' "$T/raw"
	# each in its own column, by its marker frame apart in off_cpu
	go tool pprof -top -sample_index=off_cpu "$T/k.pb.gz" >"$T/top" 2>&1
	grep -q 'Showing nodes accounting for 5us, 100% of 5us total' "$T/top"
	go tool pprof -top -sample_index=irq_off "$T/k.pb.gz" >"$T/top" 2>&1
	grep -q 'Showing nodes accounting for 5us, 100% of 5us total' "$T/top"
	go tool pprof -top -sample_index=mem_usage "$T/k.pb.gz" >"$T/top" 2>&1
	grep -q 'Showing nodes accounting for 4kB, 100% of 4kB total' "$T/top"
	go tool pprof -top -sample_index=inuse_space "$T/k.pb.gz" >"$T/top" 2>&1
	grep -q 'Showing nodes accounting for 512B, 100% of 512B total' "$T/top"
	grep -Eq ' keep$' "$T/top"
	go tool pprof -top -sample_index=alloc_space "$T/k.pb.gz" >"$T/top" 2>&1
	grep -q 'Showing nodes accounting for 1kB, 100% of 1kB total' "$T/top"
	go tool pprof -top -sample_index=events "$T/k.pb.gz" >"$T/top" 2>&1
	grep -Eq '^ +6 +100% +100% +6 +100% +probe_hit$' "$T/top"
	# cpa-query names them alike
	cpa-store --dir "$T/store" <"$T/k.cpa"
	cpa-query --dir "$T/store" --from @$T0 --to @$((T0 + 1)) --format pprof \
		-o "$T/q.pb.gz"
	go tool pprof -raw "$T/q.pb.gz" >"$T/raw" 2>&1
	grep -qx 'samples/count cpu/nanoseconds\[dflt\] off_cpu/nanoseconds irq_off/nanoseconds events/count mem_virt/bytes mem_phys/bytes mem_usage/bytes alloc_space/bytes inuse_space/bytes' "$T/raw"
}

@test "pprof labels: a real capture of two processes, sliced by pid and by thread" {
	require_bpf
	start_workload "$T/a.out" "$WL/chain_fp" --seconds 30 --threads 1
	local a=$WL_PID
	start_workload "$T/b.out" "$WL/chain_fp" --seconds 30
	local b=$WL_PID
	cpa-capture --pid "$a,$b" --freq 199 --duration 2 >"$T/c.cpa" 2>"$T/c.err"
	cpa-unwind <"$T/c.cpa" >"$T/u.cpa"
	cpa-render --format pprof -o "$T/c.pb.gz" "$T/u.cpa"
	# the expected totals, from the same stream through another path
	cpa-render --format folded --labels pid,tid "$T/u.cpa" >"$T/f"
	sum() { awk -v p="$1" 'index($0, p) == 1 { s += $NF } END { print s + 0 }' "$T/f"; }
	local wa wb
	wa=$(sum "[pid $a];")
	wb=$(sum "[pid $b];")
	[ "$wa" -gt 10 ]
	[ "$wb" -gt 10 ]
	[ "$(focused "$T/c.pb.gz" samples "pid=^$a\$")" = "$wa" ]
	[ "$(focused "$T/c.pb.gz" samples "pid=^$b\$")" = "$wb" ]
	# the spinner's chain, in the focused process only
	go tool pprof -top -sample_index=samples -tagfocus="pid=^$b\$" \
		"$T/c.pb.gz" >"$T/top" 2>&1
	grep -Eq ' hot_leaf$' "$T/top"
	run ! grep -q 'worker_main' "$T/top"
	# process a has two threads: each its own tid, the worker's chain
	# only under its tid
	go tool pprof -tags -sample_index=samples -tagfocus="pid=^$a\$" \
		"$T/c.pb.gz" >"$T/tags" 2>&1
	tids=$(awk '/^ *tid: Total/ { on = 1; next } /^ *[a-z]+: Total/ { on = 0 }
		on && /%\): / { print $NF }' "$T/tags" | sort -n)
	[ "$(wc -l <<<"$tids")" -eq 2 ]
	# the main thread's tid is the pid; the worker's is the other one,
	# lower too where the host's pids have wrapped around
	grep -qx "$a" <<<"$tids"
	worker=$(grep -vx "$a" <<<"$tids")
	go tool pprof -top -sample_index=samples -tagfocus="tid=^$worker\$" \
		"$T/c.pb.gz" >"$T/top" 2>&1
	grep -Eq ' worker_main$' "$T/top"
	[ "$(sed -n 's/^Showing nodes accounting for \([0-9]*\),.*/\1/p' "$T/top")" = \
		"$(sum "[pid $a];[tid $worker];")" ]
	grep -Eq '^ +[0-9.]+ \( *[0-9.]+%\): chain_fp$' "$T/tags"
}
