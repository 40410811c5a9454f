#!/usr/bin/env bats
# cpa-capture's command line: every invalid value is refused with exit 2
# and one line naming the option and the value; inputs that do not exist
# are refused with exit 1 before anything is attached.

load helper

# bad_value EXPECTED-TEXT ARGS...: exit 2, one line, which names the value
bad_value() {
	local want=$1; shift
	run cpa-capture "$@"
	echo "cpa-capture $*: status $status: $output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == cpa-capture:* ]]
	[[ "${lines[0]}" == *"$want"* ]]
}

@test "capture: --help lists the options and exits 0" {
	run cpa-capture --help
	[ "$status" -eq 0 ]
	for o in --freq --duration --stack-size --kernel-only --backend \
		--require-pmu --pid --tid --comm --cgroup --container --cpu \
		--offcpu --offcpu-phase --offcpu-min --probe --probe-rate \
		--irqoff --stats --stats-file --stats-interval --offcpu-stack-size \
		--ringbuf-size --mem --mem-probability --mem-stack-size \
		--mem-max-pages --btf; do
		[[ "$output" == *"$o"* ]] || { echo "missing $o"; return 1; }
	done
}

@test "capture: invalid sampling options exit 2 with one line" {
	bad_value "--freq '0'" --freq 0
	bad_value "--freq '1001'" --freq 1001
	bad_value "--freq 'fast'" --freq fast
	bad_value "--freq '-5'" --freq -5
	bad_value "--duration 'soon'" --duration soon
	bad_value "--duration '0'" --duration 0
	bad_value "--stack-size '1000'" --stack-size 1000
	bad_value "--stack-size '6K'" --stack-size 6K
	bad_value "--stack-size '68K'" --stack-size 68K
	bad_value "--stack-size 'big'" --stack-size big
	bad_value "--backend 'ebpf'" --backend ebpf
	bad_value "--stats-interval 'often'" --stats-interval often
	bad_value "--ringbuf-size '100K'" --ringbuf-size 100K
	bad_value "--ringbuf-size '4K'" --ringbuf-size 4K
}

@test "capture: invalid filter values exit 2 with one line" {
	bad_value "--pid '0'" --pid 0
	bad_value "--pid '12,x'" --pid 12,x
	bad_value "--pid ''" --pid ''
	bad_value "--tid 'abc'" --tid abc
	bad_value "--comm 'a-name-longer-than-15'" --comm a-name-longer-than-15
	bad_value "--comm ''" --comm ''
	bad_value "--cpu '1-'" --cpu 1-
	bad_value "--cpu 'x'" --cpu x
	bad_value "CPU 4000" --cpu 4000
	bad_value "--container 'not-hex'" --container not-hex
	bad_value "--container 'abc'" --container abc
	bad_value "--cgroup ''" --cgroup ''
}

@test "capture: invalid off-CPU and probe values exit 2 with one line" {
	bad_value "--offcpu-phase 'sleep'" --offcpu --offcpu-phase sleep
	bad_value "--offcpu-min 'long'" --offcpu --offcpu-min long
	bad_value "--offcpu-stack-size '32K'" --offcpu-stack-size 32K
	bad_value "--offcpu-stack-size '100'" --offcpu-stack-size 100
	bad_value "--probe 'write'" --probe write
	bad_value "--probe 'tracepoint:syscalls'" --probe tracepoint:syscalls
	bad_value "--probe 'uprobe:/bin/true'" --probe uprobe:/bin/true
	bad_value "--probe 'uprobe:/bin/true:0xzz'" --probe uprobe:/bin/true:0xzz
	bad_value "--probe 'fentry:vfs_read'" --probe fentry:vfs_read
	bad_value "--probe-rate '0'" --probe tracepoint:sched:sched_switch --probe-rate 0
	bad_value "--probe-rate needs" --probe-rate 10
	bad_value "--no-oncpu leaves nothing" --no-oncpu
	bad_value "unexpected argument 'extra'" extra
}

@test "capture: BPF-only modes refuse --backend perf" {
	bad_value "--offcpu needs the BPF backend" --backend perf --offcpu
	bad_value "--probe needs the BPF backend" --backend perf \
		--probe tracepoint:sched:sched_switch
	bad_value "--comm needs the BPF backend" --backend perf --comm bash
}

@test "capture: missing cgroups, containers and probe targets exit 1" {
	require_bpf
	# pid_max is at most 2^22: this pid cannot exist
	run cpa-capture --pid 4194305 --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$output" = "cpa-capture: --pid 4194305: no such process" ]
	run cpa-capture --tid 4194305 --duration 1
	[ "$status" -eq 1 ]
	[ "$output" = "cpa-capture: --tid 4194305: no such thread" ]

	run cpa-capture --cgroup /no/such/cgroup --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[0]}" == *"--cgroup: cgroup '/no/such/cgroup' not found"* ]]
	[ "${#lines[@]}" -eq 1 ]

	run cpa-capture --cgroup /proc --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"'/proc' is not a cgroup directory"* ]]

	run cpa-capture --container 0123456789abcdef --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--container '0123456789abcdef': no running process"* ]]

	run cpa-capture --probe tracepoint:nosuchgroup:nosuchevent --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"no tracepoint nosuchgroup:nosuchevent"* ]]

	run cpa-capture --probe uprobe:/no/such/binary:main --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cannot read '/no/such/binary'"* ]]

	run cpa-capture --no-oncpu --probe "uprobe:$WL/writer:no_such_function" --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "${lines[-1]}" == *"no function 'no_such_function' in $WL/writer"* ]]
}

@test "capture: kprobe probes fail clearly where the kernel has no kprobes" {
	require_bpf
	if [ -e /sys/bus/event_source/devices/kprobe/type ] ||
	   [ -e /sys/kernel/tracing/kprobe_events ]; then
		skip "this kernel has kprobes"
	fi
	run cpa-capture --probe kprobe:vfs_read --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"kprobes are not available on this kernel"* ]]
}

@test "capture: --require-pmu fails where there is no hardware PMU" {
	require_bpf
	if [ -e /sys/bus/event_source/devices/cpu/type ] ||
	   [ -e /sys/bus/event_source/devices/cpu_core/type ]; then
		skip "this machine has a hardware PMU"
	fi
	run cpa-capture --require-pmu --duration 1
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"--require-pmu: this machine has no hardware cycles event"* ]]
	# without it, one warning and cpu-clock
	run cpa-capture --duration 1
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning: no hardware PMU: sampling the cpu-clock timer"* ]]
}

@test "capture: invalid --mem values and probabilities exit 2 with one line" {
	bad_value "unknown mode 'rss'" --mem rss
	bad_value "unknown mode ''" --mem virt,,phys
	bad_value "unknown mode ''" --mem ''
	bad_value "unknown mode 'VIRT'" --mem VIRT
	bad_value "--mem-probability '0'" --mem phys --mem-probability 0
	bad_value "--mem-probability '101'" --mem phys --mem-probability 101
	bad_value "--mem-probability 'half'" --mem phys --mem-probability half
	bad_value "needs --mem phys or --mem usage" --mem virt --mem-probability 50
	bad_value "--mem-stack-size '100'" --mem virt --mem-stack-size 100
	bad_value "--mem-max-pages '10'" --mem usage --mem-max-pages 10
	bad_value "--mem needs the BPF backend" --mem virt --backend perf
	run cpa-unwind --max-allocs 0
	[ "$status" -eq 2 ]
	[[ "$output" == *"--max-allocs '0'"* ]]
}
