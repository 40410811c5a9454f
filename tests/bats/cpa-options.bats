#!/usr/bin/env bats
# CPA's options that cpa once refused, as CPA's users type them: each on
# a real capture of known workloads (the captures run at once in
# setup_file), or on a store CPA's format describes.
load capture_helper

GEN="$CPA_BUILDDIR/tests/tools/gen-cpastore"

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR CPA_CONFIG=/dev/null
	"$GEN" "$T/cpa" <<-'EOF'
	day cpa_261129
	record 36000000 36001000
	10	worker	nginx	1234	1	4321	pod-a	main;run;hot
	record 36001000 36002000
	3	worker	nginx	1234	1	4321	pod-a	main;run;hot
	record 36002000 36003000
	7	nginx	nginx	1234	0	4321	pod-a	main;idle
	EOF
	# the one whose env value is listed, and one without it
	start_bg a env CPA_TEST_ENV=blue "$WL/chain_nofp" --seconds 60
	start_bg b "$WL/chain_fp" --seconds 60
	A=$(pidof_wl a) B=$(pidof_wl b)
	cd "$T"
	cpa_bg env monitor --oneshot -R CPA_TEST_ENV -V blue -p "$A,$B" -d 2 --output_prof env.prof
	cpa_bg sym monitor --oneshot --disable_sym 1 -p "$B" -d 2 --output_prof sym.prof
	cpa_bg path monitor --oneshot --include_full_path 1 -p "$B" -d 2 --output_prof path.prof
	cpa_bg queue monitor --oneshot --max_queue_size 1 --freq 1000 -d 2 --output_prof queue.prof
	cpa_bg bench monitor -s bench.store --bench 1 --log_print_cycles 1 -p "$A" -d 6
	cpa_wait env sym path queue bench
	export A B
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

@test "CPA: --parse_env_values (-V) unwinds user stacks only where the env value matches" {
	cat env.log
	grep -q '^chain_nofp;.*level_b;hot_leaf [0-9]*$' env.prof
	# the other process keeps its samples, without a user frame
	grep -q '^chain_fp' env.prof
	run ! grep -E '^chain_fp;.*(main|hot_leaf)' env.prof
}

@test "CPA: --disable_sym (-S) keeps raw addresses, module+offset, that addr2line names" {
	cat sym.log
	run ! grep -E '^chain_fp;.*(main|hot_leaf)' sym.prof
	leaf=$(sort -t' ' -k2 -n sym.prof | tail -1 | sed 's/ [0-9]*$//; s/.*;//')
	[[ "$leaf" =~ ^chain_fp\+0x[0-9a-f]+$ ]]
	addr2line -f -e "$WL/chain_fp" "${leaf#chain_fp+}" >"$BATS_TEST_TMPDIR/a2l"
	grep -qx 'hot_leaf' "$BATS_TEST_TMPDIR/a2l"
}

@test "CPA: --include_full_path names each frame's object by its path" {
	cat path.log
	grep -q "^chain_fp;.*;main \[$WL/chain_fp\];run \[$WL/chain_fp\];level_a \[$WL/chain_fp\];level_b \[$WL/chain_fp\];hot_leaf \[$WL/chain_fp\] [0-9]*$" path.prof
	# libc by its path too, named or not yet named ("PATH+0xOFFSET")
	libc=$(grep -o '/[^];+]*/libc\.so\.6' path.prof | sed -n 1p)
	[ -f "$libc" ]
}

@test "CPA: --max_queue_size (-m) bounds the queue, and what does not fit is counted lost" {
	cat queue.log
	grep -Eq 'cpa-render: warning: <stdin>: [1-9][0-9]* samples were lost upstream' queue.log
	[ -s queue.prof ]
}

@test "CPA: --log_print_cycles N prints the statistics every N seconds, --bench the DWARF timings" {
	cat bench.log
	n=$(grep -c '^cpa-unwind: stats: ' bench.log)
	[ "$n" -ge 2 ]
	grep -Eq '^cpa-unwind: bench: DWARF unwind count=[1-9][0-9]* rate=[0-9.]+/s avg=[0-9.]+ us min=[0-9.]+ us max=[0-9.]+ us; .*us=[1-9]' bench.log
}

@test "CPA: cpa show --output_num N exports N records from the selected point" {
	run --separate-stderr cpa show --read cpa/cpa_261129 --output_num 2 --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "nginx;main;run;hot 13" ]
	# CPA's times of day are of the store's day, as CPA's --starttime
	run --separate-stderr cpa show --read cpa/cpa_261129 -n 1 --starttime 10:00:01 --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "nginx;main;run;hot 3" ]
	run --separate-stderr cpa show --read cpa/cpa_261129 -B 10:00:01 -E 10:00:03 --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'nginx;main;idle 7\nnginx;main;run;hot 3')" ]
	run cpa-query --dir cpa --windows 0
	[ "$status" -eq 2 ]
	[ "$output" = "cpa-query: invalid --windows '0': expected an integer from 1 to 4294967295" ]
}

@test "CPA: cpa show --show_raw roots each stack in CPA's metadata; --use_cache is accepted" {
	run --separate-stderr cpa show --read cpa --show_raw 1 --use_cache 1 --format folded
	[ "$status" -eq 0 ]
	want=$(printf '%s\n' 'nginx          nginx          -1234-0-4321|pod-a;main;idle 7' \
		'worker         nginx          -1234-1-4321|pod-a;main;run;hot 13')
	[ "$output" = "$want" ]
}

@test "CPA: --debug_option stays refused, saying what to use" {
	run cpa monitor --debug_option 1,49,/tmp/x
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: --debug_option (CPA) is not available: use --pid and --freq; cpa-capture > FILE keeps the raw samples" ]
}
