#!/usr/bin/env bats
# CPA's option names for `cpa show` and `cpa monitor --oneshot`, on real
# BPF captures of a workload with a known call chain (README.md, "Coming
# from CPA", a test per row; the store-side rows are in monitor.bats).
load helper

setup_file() {
	require_bpf
	T=$BATS_FILE_TMPDIR
	# The workload, pinned to the last CPU, labelled by an env value.
	CPU=$(( $(nproc) - 1 ))
	env CPA_TEST_ENV=blue "$WL/chain_fp" --seconds 60 --pin "$CPU" >"$T/wl.out" 2>&1 3>&- &
	echo $! >"$T/wl.bgpid"
	wait_for 10 grep -q '^ready ' "$T/wl.out"
	WL_PID=$(awk '/^ready /{print $2; exit}' "$T/wl.out")
	cpa-capture --duration 3 | cpa-unwind --env CPA_TEST_ENV | cpa-store --dir "$T/store"
	export WL_PID CPU STORE=$T/store
}

teardown_file() {
	[ -f "$BATS_FILE_TMPDIR/wl.bgpid" ] && kill "$(cat "$BATS_FILE_TMPDIR/wl.bgpid")" 2>/dev/null
	true
}

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	export CPA_CONFIG=/dev/null
}

# only_comm COMM: the folded output is not empty and every line is COMM's.
only_comm() {
	[ -n "$output" ]
	run ! grep -v "^$1;" <<<"$output"
}

@test "CPA: the whole host is recorded, the workload among other processes" {
	run cpa show --read "$STORE" --format folded
	[ "$status" -eq 0 ]
	grep -q '^chain_fp;.*level_b;hot_leaf ' <<<"$output"
	grep -qv '^chain_fp;' <<<"$output"
}

@test "CPA: --target_pid is --pid" {
	run cpa show --read "$STORE" --target_pid "$WL_PID" --format folded
	[ "$status" -eq 0 ]
	only_comm chain_fp
}

@test "CPA: --target_comm is --comm" {
	run cpa show --read "$STORE" --target_comm chain_fp --format folded
	[ "$status" -eq 0 ]
	only_comm chain_fp
}

@test "CPA: --target_env is --env, recorded by unwind's --env (CPA's --record_env_name)" {
	run cpa show --read "$STORE" --target_env blue --format folded
	[ "$status" -eq 0 ]
	only_comm chain_fp
}

@test "CPA: --target_cpu is --cpu" {
	# Our workload, pinned: on its CPU, and on no other (other chain_fp
	# processes on a shared host are told apart by the pid).
	run cpa show --read "$STORE" --target_cpu "$CPU" --target_pid "$WL_PID" --format folded
	[ "$status" -eq 0 ]
	grep -q '^chain_fp;.*hot_leaf ' <<<"$output"
	if [ "$CPU" -gt 0 ]; then
		run cpa show --read "$STORE" --target_cpu 0 --target_pid "$WL_PID" --format folded
		[ "$status" -eq 1 ]
		[[ "$output" == *"no samples"* ]]
	fi
}

@test "CPA: --target_cgroup_id is --cgroup" {
	# The root cgroup (id 1) holds the workload here.
	run cpa show --read "$STORE" --target_cgroup_id 1 --format folded
	[ "$status" -eq 0 ]
	grep -q '^chain_fp;' <<<"$output"
	run cpa show --read "$STORE" --target_cgroup_id 999999999 --format folded
	[ "$status" -ne 0 ]
	[[ "$output" == *"no samples"* ]]
}

@test "CPA: --show_thread_name, -S label stacks with the thread name" {
	for form in --show_thread_name -S "--show_thread_name 1"; do
		run cpa show --read "$STORE" --target_pid "$WL_PID" $form --format folded
		[ "$status" -eq 0 ]
		grep -q '^chain_fp;\[thread chain_fp\];.*;main;run;level_a;level_b;hot_leaf ' <<<"$output"
	done
	run cpa show --read "$STORE" --target_pid "$WL_PID" --format folded
	[ "$status" -eq 0 ]
	run ! grep -q '\[thread ' <<<"$output"
}

@test "CPA: --oneshot --output_prof F writes folded text; --pid, -p, --comm, -n, -d are CPA's" {
	cd "$T"
	run cpa monitor --oneshot --duration 2 --pid "$WL_PID" --output_prof cpa.prof
	[ "$status" -eq 0 ]
	run cat cpa.prof
	only_comm chain_fp
	grep -q '^chain_fp;.*;main;run;level_a;level_b;hot_leaf [0-9]*$' cpa.prof
	run cpa monitor --oneshot -d 2 -n chain_fp -o one.svg
	[ "$status" -eq 0 ]
	xmllint --noout one.svg
	grep -q 'hot_leaf' one.svg
	run cpa monitor --oneshot --oneshot 1 -d 2 -p "$WL_PID" --output_prof p.prof
	[ "$status" -eq 0 ]
	grep -q '^chain_fp;.*hot_leaf [0-9]*$' p.prof
}

@test "CPA: --kernel_stack, -K record kernel stacks only" {
	cd "$T"
	for form in --kernel_stack -K "--kernel_stack 1"; do
		run cpa monitor --oneshot -d 1 -p "$WL_PID" $form --output_prof k.prof
		[ "$status" -eq 0 ]
		grep -q '^chain_fp' k.prof
		run ! grep -q 'hot_leaf\|level_b' k.prof
	done
}

@test "CPA: --offcpu 1 records off-CPU time in one-shot mode" {
	cd "$T"
	# A shell that waits for a child ten times a second: blocked off-CPU.
	# Off-CPU alone: one profile has one unit (render refuses to mix
	# samples and nanoseconds).
	bash -c 'while :; do sleep 0.1; done' 3>&- &
	waiter=$!
	run cpa monitor --oneshot -d 2 --offcpu 1 --no-oncpu --pid "$waiter" --output_prof off.prof
	echo "$output"
	kill "$waiter"
	[ "$status" -eq 0 ]
	grep -q '^off-CPU blocked;bash;.*wait4' off.prof
	run cpa monitor --oneshot -d 1 --offcpu 0 --pid "$WL_PID" --output_prof on.prof
	[ "$status" -eq 0 ]
	grep -q 'hot_leaf' on.prof
	run ! grep -q 'off-CPU' on.prof
}
