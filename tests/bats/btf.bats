#!/usr/bin/env bats
# A host without /sys/kernel/btf/vmlinux: cpa-capture --btf FILE (CPA's
# --btf_path, -b), tried in a private mount namespace where an empty
# tmpfs hides the kernel's BTF directory, with a copy of its BTF passed.
load helper

setup_file() {
	require_bpf
	cp /sys/kernel/btf/vmlinux "$BATS_FILE_TMPDIR/vmlinux.btf"
}

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	BTF=$BATS_FILE_TMPDIR/vmlinux.btf
	export CPA_CONFIG=/dev/null CPA_RUN_DIR=$T/run
	command -v unshare >/dev/null || skip_missing "no unshare (util-linux)"
}

# hidden CMD...: CMD where /sys/kernel/btf is an empty directory
hidden() {
	unshare -m --propagation private -- sh -c \
		'mount -t tmpfs none /sys/kernel/btf && exec "$@"' sh "$@"
}

@test "btf: without the kernel's BTF, --btf FILE captures the workload's frames" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 20
	run hidden cpa-capture --offcpu --duration 1 --pid "$WL_PID"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cpa-capture: the kernel has no BTF (/sys/kernel/btf/vmlinux); --offcpu needs the BPF backend"* ]]
	hidden cpa-capture --btf "$BTF" --offcpu --duration 1 --pid "$WL_PID" \
		>"$T/c.cpa" 2>"$T/c.err"
	kill_workloads
	grep -q "^cpa-capture: kernel .*: BTF $BTF, .*; backend bpf, " "$T/c.err"
	cpa-unwind --folded <"$T/c.cpa" >"$T/f"
	grep -q '^chain_fp;.*level_b;hot_leaf ' "$T/f"
}

@test "btf: CPA's cpa monitor -b FILE, one-shot, in the same namespace" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 20
	cd "$T"
	hidden cpa monitor --oneshot -b "$BTF" -p "$WL_PID" -d 1 --output_prof x.prof 2>"$T/err"
	kill_workloads
	grep -q '^chain_fp;.*level_b;hot_leaf ' x.prof
	grep -q "^cpa-capture: kernel .*: BTF $BTF, .*; backend bpf, " "$T/err"
}

@test "btf: an unreadable or invalid --btf is refused with one line, exit 2" {
	run cpa-capture --btf "$T/none.btf" --duration 1
	[ "$status" -eq 2 ]
	[ "$output" = "cpa-capture: --btf '$T/none.btf': No such file or directory" ]
	echo 'not BTF' >"$T/bad.btf"
	run cpa-capture --btf "$T/bad.btf" --duration 1
	[ "$status" -eq 2 ]
	[ "$output" = "cpa-capture: --btf '$T/bad.btf': not a valid BTF object (BPF object format invalid); make one with pahole --btf_encode_detached" ]
	run cpa monitor --btf_path "$T/bad.btf" -d 2
	[ "$status" -eq 2 ]
	[[ "$output" == *"cpa-capture: --btf '$T/bad.btf': not a valid BTF object"* ]]
}
