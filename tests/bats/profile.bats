#!/usr/bin/env bats
# cpa profile: HUATUO's profiler command line as its document types it,
# with its output files (--output-path DIR: perf_UNIX_HEX.folded,
# flamegraph_UNIX_HEX.svg), on real captures of known workloads, run at
# once in setup_file. Each row of README's "Coming from HUATUO" has a test.
load capture_helper

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR CPA_CONFIG=/dev/null
	PIN=$(( $(nproc) - 1 ))
	OTHER=$(( PIN > 0 ? 0 : 1 ))
	start_bg chain "$WL/chain_fp" --seconds 60 --threads 2 --pin "$PIN"
	start_bg sleep "$WL/sleeper" --sleep 20 --count 100000
	start_bg mem "$WL/memory" --virt 8M
	C=$(pidof_wl chain) S=$(pidof_wl sleep) M=$(pidof_wl mem)
	kill -USR1 "$S"
	cd "$T"
	prof() {	# prof NAME ARGS...: cpa profile ARGS, output in NAME/
		local name=$1; shift
		cpa_bg "$name" profile "$@" --output-path "$T/$name"
	}
	prof main --type cpu --language c --pid "$C" --duration 2 --aggr-interval 2
	prof group --type cpu --language go --pid "$C" --thread-group --freq 99 \
		--duration 2 --aggr-interval 1 --output-format flamegraph
	prof cpu --type cpu --language c++ --pid "$C" --thread-group --cpuid "$PIN" \
		--duration 2 --aggr-interval 2 --output-format svg
	prof nocpu --type cpu --language c --pid "$C" --thread-group --cpuid "$OTHER" \
		--duration 2 --aggr-interval 2
	prof off --type cpu --language go --pid "$S" --thread-group --cpu-mode offcpu \
		--offcpu-phase all --offcpu-min-duration-us 1000 --duration 2 --aggr-interval 2
	prof off100ms --type cpu --language go --pid "$S" --thread-group --cpu-mode offcpu \
		--offcpu-phase blocked --offcpu-min-duration-us 100000 --duration 2 --aggr-interval 2
	prof virt --type memory --language c --memory-mode virtual_alloc --pid "$M" \
		--thread-group --duration 3 --aggr-interval 3
	prof pmu --type cpu --language c --pid "$C" --require-hardware-pmu \
		--duration 1 --aggr-interval 1
	prof ctr --type cpu --language c --container-id 0123456789ab \
		--duration 1 --aggr-interval 1
	# Java and Python take several PIDs; HUATUO's tool options do no harm
	prof py --type cpu --language python --pid "$C,$S" --tool-path /opt/huatuo/tools \
		--max-concurrent-procs 2 --duration 1 --aggr-interval 1
	wait_for 30 grep -q '^cpa-capture: kernel ' "$T/virt.log"
	kill -USR1 "$M"
	cpa_wait main group cpu nocpu off off100ms virt pmu ctr py
	export C S M PIN
}

teardown_file() {
	T=$BATS_FILE_TMPDIR
	kill_bg
}

setup() {
	require_bpf
	T=$BATS_FILE_TMPDIR
	cd "$T"
	export CPA_CONFIG=/dev/null CPA_RUN_DIR=$BATS_TEST_TMPDIR/run
}

# the_file NAME EXT: the one file HUATUO's names give in NAME/
the_file() {
	local f
	f=$(ls "$T/$1")
	[[ "$f" =~ ^(perf|flamegraph)_[0-9]{10}_[0-9a-f]{16}\.$2$ ]]
	echo "$T/$1/$f"
}

@test "profile: --type cpu --language c --pid P writes DIR/perf_UNIX_HEX.folded, HUATUO's roots" {
	cat main.log
	[ "$(cat main.status)" = 0 ]
	f=$(the_file main folded)
	grep -q "^process $C:chain_fp;.*;main;run;level_a;level_b;hot_leaf [0-9]*$" "$f"
	run ! grep -v "^process $C:chain_fp;" "$f"
	# without --thread-group, the thread the pid names only
	run ! grep -q worker_main "$f"
}

@test "profile: --thread-group takes the process's threads; --output-format flamegraph is an SVG" {
	cat group.log
	[ "$(cat group.status)" = 0 ]
	f=$(the_file group svg)
	[[ "$f" == */flamegraph_* ]]
	grep -q '<title>worker_main (' "$f"
	grep -q "<title>process $C:chain_fp (" "$f"
	xmllint --noout "$f"
}

@test "profile: --cpuid takes the CPUs, --output-format svg" {
	cat cpu.log nocpu.log
	[ "$(cat cpu.status)" = 0 ]
	f=$(the_file cpu svg)
	grep -q '<title>hot_leaf (' "$f"
	# pinned elsewhere: nothing to write
	[ "$(cat nocpu.status)" != 0 ]
	grep -q 'no samples to draw' nocpu.log
	n=$(ls nocpu | wc -l)
	[ "$n" -eq 0 ]
}

@test "profile: --cpu-mode offcpu with --offcpu-min-duration-us in microseconds, roots as HUATUO's" {
	cat off.log off100ms.log
	[ "$(cat off.status)" = 0 ]
	f=$(the_file off folded)
	grep -q "^process $S:sleeper;off-CPU blocked;" "$f"
	blocked=$(awk '/^process [0-9]+:sleeper;off-CPU blocked;/ { s += $NF } END { print s + 0 }' "$f")
	# 20 ms sleeps, 1000 us the least recorded: at least one of them
	[ "$blocked" -ge 20000000 ]
	# 100000 us is 100 ms: no 20 ms sleep is long enough
	[ "$(cat off100ms.status)" != 0 ]
	grep -q 'no samples to draw' off100ms.log
}

@test "profile: --type memory --memory-mode virtual_alloc, the mapped bytes exactly" {
	cat virt.log
	[ "$(cat virt.status)" = 0 ]
	f=$(the_file virt folded)
	cat "$f"
	bytes=$(awk '/^process [0-9]+:memory;memory virtual;.*;map_region[; ]/ { s += $NF } END { print s + 0 }' "$f")
	[ "$bytes" -eq $((8 << 20)) ]
}

@test "profile: durations in HUATUO's units, whole numbers, never guessed" {
	run cpa profile --type cpu --language c --duration 30s
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: invalid --duration '30s': a whole number of seconds, as HUATUO takes it" ]
	run cpa profile --type cpu --language c --cpu-mode offcpu --offcpu-min-duration-us 1ms
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: invalid --offcpu-min-duration-us '1ms': a whole number of microseconds, as HUATUO takes it" ]
	run cpa profile --type cpu --language c --cpu-mode offcpu --offcpu-min 1000
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: unknown option '--offcpu-min' for cpa profile: HUATUO's is --offcpu-min-duration-us N, in microseconds" ]
	# and cpa's own --offcpu-min asks for the unit
	run cpa monitor --oneshot --offcpu 1 --offcpu-min 1000 -d 1
	[ "$status" -ne 0 ]
	[[ "$output" == *"invalid --offcpu-min '1000': give its unit (1000us, 1000ms, 1000s)"* ]]
	run cpa profile --type cpu --language c --duration 2
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: aggregation interval (10s) exceeds duration (2s)" ]
	run cpa profile --type cpu --language python --pid 1 --duration 4 --aggr-interval 2
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: Python profiling requires --aggr-interval to equal --duration" ]
}

@test "profile: HUATUO's rules on types, languages, modes and targets" {
	bad() {	# bad MESSAGE ARGS...
		local want=$1; shift
		run cpa profile "$@"
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "cpa: $want" ]
	}
	bad "missing required flags: --type and --language" --type cpu
	bad "unsupported language: rust (c, c++, go, java, python)" --type cpu --language rust
	bad "Python profiler supports only --type=cpu" --type memory --language python --pid 1 --duration 2 --aggr-interval 2
	bad "--memory-mode is required when --type=memory" --type memory --language c --pid 1
	bad 'memory mode "object_alloc" is not supported for c; supported modes: virtual_alloc, physical_alloc, physical_usage' \
		--type memory --language c --memory-mode object_alloc --pid 1
	bad "exactly one of --container-id or --pid must be provided" --type memory --language c --memory-mode virtual_alloc
	bad "native profiler does not support multiple PIDs" --type cpu --language c --pid 1,2
	bad "--cpu-mode=offcpu is supported only by native CPU profiling" --type cpu --language java --pid 1 --cpu-mode offcpu
	bad "--freq is not used with --cpu-mode=offcpu" --type cpu --language c --cpu-mode offcpu --freq 99
	bad "--offcpu-phase requires native CPU profiling with --cpu-mode=offcpu" --type cpu --language c --offcpu-phase all
	bad "--cpuid is supported only by native CPU profiling" --type cpu --language java --pid 1 --cpuid 0
	bad "--thread-group is supported only by native profiling" --type cpu --language java --pid 1 --thread-group
	bad "--physical-memory-probability is supported only by native physical memory profiling" \
		--type memory --language c --memory-mode virtual_alloc --pid 1 --physical-memory-probability 50
	bad "physical memory probability must be between 1 and 100" \
		--type memory --language c --memory-mode physical_usage --pid 1 --physical-memory-probability 0
	bad "Java profiler frequency must not exceed 1000 samples per second" --type cpu --language java --pid 1 --freq 2000
	bad "--require-hardware-pmu requires native CPU profiling with --cpu-mode=oncpu" \
		--type cpu --language c --cpu-mode offcpu --require-hardware-pmu
	bad "invalid --output-format 'pprof': collapsed, flamegraph or svg" --type cpu --language c --output-format pprof
}

@test "profile: --require-hardware-pmu, --container-id and the Java and Python targets reach the capture" {
	cat pmu.log ctr.log py.log
	# this machine's PMU, or its absence, decides
	if grep -q '^pmu=no' <(cpa-capture --features); then
		[ "$(cat pmu.status)" != 0 ]
		grep -q -- '--require-pmu: this machine has no hardware cycles event' pmu.log
	else
		[ "$(cat pmu.status)" = 0 ]
	fi
	[ "$(cat ctr.status)" != 0 ]
	grep -q "cpa-capture: --container '0123456789ab': no running process is in a container with that id" ctr.log
	[ "$(cat py.status)" = 0 ]
	f=$(the_file py folded)
	grep -q "^process $C:chain_fp;" "$f"
}
