#!/usr/bin/env bats
# cpa-unwind on streams with known contents: selfsnap writes raw samples
# of its own stack (registers plus the stack bytes, as cpa-capture's
# snapshot has them), from a binary without frame pointers, so the DWARF
# walker, the ELF cache and the error paths are tested exactly, with no
# BPF involved. Real capture is in unwind-capture.bats.
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	DUMP=$CPA_BUILDDIR/tests/tools/cpa-dump
	# the sampled PC is in grab_registers, inlined into snap_leaf (a
	# chain of return addresses, as the FP one, ends at snap_leaf)
	FUNCS='main;run;level_a;level_b;snap_leaf'
	CHAIN="$FUNCS;grab_registers_[i]"
	CHAIN_RE="$FUNCS;grab_registers_\\[i\\]"
}

teardown() {
	kill_workloads
}

@test "DWARF walk of a frame-pointer-less stack: the exact chain, root to leaf" {
	"$WL/selfsnap" --samples 5 >"$T/s.cpa"
	run cpa-unwind --folded "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "${#lines[@]}" -eq 5 ]
	for l in "${lines[@]}"; do
		[[ "$l" == "selfsnap;"*";$CHAIN 1" ]]
		# the walk reached _start through libc (its CFI ends there)
		[[ "$l" == "selfsnap;_start;"* ]]
	done
}

@test "a chain through libc: qsort calling back into the program" {
	"$WL/selfsnap" --qsort >"$T/s.cpa"
	run cpa-unwind --folded "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	# level_b -> qsort's libc frames -> compare -> snap_leaf
	[[ "$output" =~ \;main\;run\;level_a\;level_b\;[^\ ]*qsort[^\ ]*\;compare\;snap_leaf\;grab_registers_\[i\]\ 1$ ]]
}

@test "the symbolized stream: dictionaries, sample, end; --stats counts DWARF" {
	"$WL/selfsnap" --samples 3 >"$T/s.cpa"
	cpa-unwind --stats <"$T/s.cpa" >"$T/out.cpa" 2>"$T/stats"
	"$DUMP" <"$T/out.cpa" >"$T/dump"
	cat "$T/dump" "$T/stats"
	[ "$(grep -c '^sample ' "$T/dump")" -eq 3 ]
	grep -q '^string .*snap_leaf' "$T/dump"
	grep -q '^stack ' "$T/dump"
	tail -n 1 "$T/dump" | grep -q '^end .*samples=3'
	grep -q 'chain chosen .*dwarf=3' "$T/stats"
	grep -q 'dwarf walks .*outermost=3' "$T/stats"
	grep -q 'latency per sample' "$T/stats"
}

@test "--stats-file keeps self statistics as key=value lines" {
	"$WL/selfsnap" --samples 7 >"$T/s.cpa"
	cpa-unwind --stats-file "$T/unwind.stats" <"$T/s.cpa" >/dev/null 2>"$T/err"
	cat "$T/unwind.stats"
	grep -qx 'tool=cpa-unwind' "$T/unwind.stats"
	grep -qx 'samples=7' "$T/unwind.stats"
	grep -qx 'chain_dwarf=7' "$T/unwind.stats"
	grep -qx 'walk_outermost=7' "$T/unwind.stats"
	grep -q '^unwind_latency_p99_ns=[1-9]' "$T/unwind.stats"
}

@test "a snapshot cut by the size limit gets a [truncated] root" {
	"$WL/selfsnap" --stack-size 256 >"$T/s.cpa"
	run cpa-unwind --folded "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == "selfsnap;[truncated];"*"snap_leaf;grab_registers_[i] 1" ]]
}

@test "garbage snapshot bytes: counted failure, sampled frame kept, no crash" {
	"$WL/selfsnap" --garbage --samples 20 >"$T/s.cpa"
	run cpa-unwind --folded --stats "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(grep -c ';snap_leaf;grab_registers_\[i\] 1$' <<<"$output")" -eq 20 ]
	# each chain cut short says so, beside no real root
	[ "$(grep -c '^selfsnap;\[truncated\];\(.*;\)\?snap_leaf;grab_registers_\[i\] 1$' <<<"$output")" -eq 20 ]
	must_fail grep -q ';main;run;level_a' <<<"$output"
	# the walks ended for a reason other than reaching the root
	grep -q 'dwarf walks .*\(bad-stack\|no-mapping\|no-cfi\|truncated\)=' <<<"$output"
}

@test "best-of: a whole frame-pointer chain wins over a broken DWARF walk" {
	# garbage stack bytes break the DWARF walk; the FP chain is whole
	"$WL/selfsnap" --garbage --fp-chain --samples 3 >"$T/s.cpa"
	run cpa-unwind --folded --stats "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	# (under a sanitizer, backtrace(3)'s interceptor adds a leaf frame)
	[ "$(grep -c "^selfsnap;_start;.*;$FUNCS\(;[^ ]*\)\? 1$" <<<"$output")" -eq 3 ]
	grep -q 'chain chosen .*dwarf=0 fp=3' <<<"$output"
	# an intact stack: both whole, DWARF preferred
	"$WL/selfsnap" --fp-chain >"$T/ok.cpa"
	run cpa-unwind --folded --stats "$T/ok.cpa"
	grep -q 'chain chosen .*dwarf=1 fp=0' <<<"$output"
	# forced modes
	run cpa-unwind --folded --unwind dwarf "$T/s.cpa"
	must_fail grep -q ';main;run;' <<<"$output"
	run cpa-unwind --folded --unwind fp "$T/ok.cpa"
	grep -q ";$FUNCS\(;[^ ]*\)\? 1$" <<<"$output"
}

@test "without MMAP records the mappings come from /proc/PID/maps" {
	"$WL/selfsnap" --no-mmap --hold >"$T/s.cpa" 2>"$T/wl.err" &
	WL_BG_PIDS="$!"
	wait_for 10 grep -q '^ready ' "$T/wl.err"
	run cpa-unwind --folded "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == *";$CHAIN 1" ]]
}

@test "the ELF is found by build id through the MMAP record after the process exited" {
	cp "$WL/selfsnap" "$T/gone_snap"
	"$T/gone_snap" >"$T/s.cpa"
	run cpa-unwind --folded "$T/s.cpa"
	[[ "$output" == *";$CHAIN 1" ]]
	# the same path now holds another build: never trusted for names
	cp "$WL/qsort_chain" "$T/gone_snap"
	run cpa-unwind --folded --stats "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	must_fail grep -q 'level_b' <<<"$output"
	grep -q 'build-id-mismatch=1' <<<"$output"
	# the program's frames keep their module name; without its CFI the
	# walk stops early (or follows rbp where the build kept it), never
	# naming a frame wrongly
	grep -q '^selfsnap;\(.*;\)\?gone_snap+0x[0-9a-f]* 1$' <<<"$output"
}

@test "inlined functions come as _[i] frames by default; --no-inline drops them" {
	"$WL/selfsnap" --samples 2 >"$T/s.cpa"
	run cpa-unwind --folded --stats "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(grep -c ";$CHAIN_RE 1$" <<<"$output")" -eq 2 ]
	grep -q 'inlined=[1-9]' <<<"$output"
	grep -q 'inline tables  objects=[1-9]' <<<"$output"
	run cpa-unwind --folded --inline "$T/s.cpa"
	[ "$(grep -c ";$CHAIN_RE 1$" <<<"$output")" -eq 2 ]
	run cpa-unwind --folded --no-inline "$T/s.cpa"
	[ "$(grep -c ";main;run;level_a;level_b;snap_leaf 1$" <<<"$output")" -eq 2 ]
	must_fail grep -q '_\[i\]' <<<"$output"
}

@test "kernel frames from kallsyms, modules included, carry _[k]" {
	printf '%s\n' 'ffffffff81000000 T fake_entry' \
		'ffffffff81000100 t fake_core_leaf' \
		$'ffffffffc0000000 t fake_mod_leaf\t[fake_mod]' \
		$'ffffffffc0000000 d fake_mod_data\t[fake_mod]' >"$T/kallsyms"
	"$WL/selfsnap" --kernel-ip ffffffff81000180 >"$T/core.cpa"
	"$WL/selfsnap" --kernel-ip ffffffffc0000010 >"$T/mod.cpa"
	run cpa-unwind --folded --kallsyms "$T/kallsyms" "$T/core.cpa"
	[[ "$output" == *";$CHAIN;fake_core_leaf_[k] 1" ]]
	run cpa-unwind --folded --kallsyms "$T/kallsyms" "$T/mod.cpa"
	[[ "$output" == *";$CHAIN;fake_mod_leaf_[k] 1" ]]
	# an address below every kernel symbol is never bare
	"$WL/selfsnap" --kernel-ip ffffffff80000000 >"$T/low.cpa"
	run cpa-unwind --folded --kallsyms "$T/kallsyms" "$T/low.cpa"
	[[ "$output" == *";$CHAIN;[unknown]_[k] 1" ]]
}

@test "a stripped binary: module+offset frames, still unwound through .eh_frame" {
	cp "$WL/selfsnap" "$T/stripped_snap"
	strip --strip-all "$T/stripped_snap"
	"$T/stripped_snap" --samples 2 >"$T/s.cpa"
	run cpa-unwind --folded --stats "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	# 5 frames of the binary, each as module+offset, below libc's names
	grep -q '^selfsnap;stripped_snap+0x[0-9a-f]*;.*;\(stripped_snap+0x[0-9a-f]*;\)\{4\}stripped_snap+0x[0-9a-f]* 1$' <<<"$output"
	# _start and the program's five functions, in both samples
	grep -q 'unresolved  *user=12 ' <<<"$output"
}

@test "names from a separate debug file found through .gnu_debuglink" {
	cp "$WL/selfsnap" "$T/dl_snap"
	objcopy --only-keep-debug "$T/dl_snap" "$T/dl_snap.debug"
	strip --strip-all "$T/dl_snap"
	objcopy --add-gnu-debuglink="$T/dl_snap.debug" "$T/dl_snap"
	"$T/dl_snap" >"$T/s.cpa"
	run cpa-unwind --folded "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == "selfsnap;_start;"*";$CHAIN 1" ]]
	# without the debug file the same stream has no names for them
	rm "$T/dl_snap.debug"
	run cpa-unwind --folded "$T/s.cpa"
	must_fail grep -q 'level_b' <<<"$output"
}

@test "a corrupt or truncated ELF: counted failure and module+offset frames" {
	cp "$WL/selfsnap" "$T/bad_snap"
	"$T/bad_snap" >"$T/s.cpa"
	head -c 3000 "$WL/selfsnap" >"$T/bad_snap"	# truncated ELF
	run cpa-unwind --folded --stats "$T/s.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	grep -q ';bad_snap+0x[0-9a-f]* 1$' <<<"$output"
	grep -q 'elf-corrupt=1' <<<"$output"
	head -c 20000 /dev/urandom >"$T/bad_snap"	# not an ELF at all
	run cpa-unwind --folded --stats "$T/s.cpa"
	[ "$status" -eq 0 ]
	grep -q ';bad_snap+0x[0-9a-f]* 1$' <<<"$output"
	grep -q 'elf-corrupt=1' <<<"$output"
}

@test "a stream cut short: what came is unwound, the byte offset is named, exit 1" {
	"$WL/selfsnap" --samples 3 >"$T/s.cpa"
	# cut at a record boundary: the END record is missing
	head -c -32 "$T/s.cpa" >"$T/noend.cpa"
	run cpa-unwind --folded "$T/noend.cpa"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(grep -c ";$CHAIN_RE 1" <<<"$output")" -eq 3 ]
	grep -q 'noend.cpa: byte [0-9][0-9]*: stream ended without an end record' <<<"$output"
	# cut inside the last sample
	size=$(stat -c %s "$T/s.cpa")
	head -c $(( size - 100 )) "$T/s.cpa" >"$T/cut.cpa"
	run cpa-unwind --folded "$T/cut.cpa"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$(grep -c ";$CHAIN_RE 1" <<<"$output")" -eq 2 ]
	grep -q 'cut.cpa: byte [0-9][0-9]*: ' <<<"$output"
}

@test "malformed input: one line naming the input and byte offset, exit 1" {
	printf 'not a cpa stream at all' >"$T/bad.cpa"
	run cpa-unwind --folded "$T/bad.cpa"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == cpa-unwind:*bad.cpa*byte\ 0* ]]
	# a record length larger than the limit
	"$WL/selfsnap" >"$T/s.cpa"
	{ head -c 16 "$T/s.cpa"; printf '\x03\x00\x00\x00\xff\xff\xff\x7f'; } >"$T/len.cpa"
	run cpa-unwind "$T/len.cpa"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"byte 16"* ]]
	# an MMAP payload too short for its fixed part, after a good sample:
	# the sample is kept, the output has no END (downstream sees the cut)
	{ head -c -32 "$T/s.cpa"; printf '\x03\x00\x00\x00\x04\x00\x00\x00abcd'; } >"$T/short.cpa"
	run cpa-unwind "$T/short.cpa"
	[ "$status" -eq 1 ]
	[[ "$output" == *"short.cpa: byte "*"mmap"* ]]
	cpa-unwind <"$T/short.cpa" 2>/dev/null | "$CPA_BUILDDIR/tests/tools/cpa-dump" >"$T/dump" 2>&1 || true
	cat "$T/dump"
	grep -q '^sample ' "$T/dump"
	must_fail grep -q '^end ' "$T/dump"
	grep -q 'without an end record' "$T/dump"
}

@test "unknown records pass through unchanged; lost records too" {
	"$WL/selfsnap" >"$T/s.cpa"
	{ head -c 16 "$T/s.cpa"
	  printf '\x2a\x00\x00\x00\x04\x00\x00\x00WXYZ'
	  # LOST: time, count 7, reason 1 (ring buffer), cpu
	  printf '\x04\x00\x00\x00\x18\x00\x00\x00'
	  printf '\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\xff'
	  tail -c +17 "$T/s.cpa"; } >"$T/mixed.cpa"
	cpa-unwind <"$T/mixed.cpa" | "$DUMP" >"$T/dump"
	cat "$T/dump"
	grep -q '^unknown type=42 len=4' "$T/dump"
	grep -q '^lost .*count=7' "$T/dump"
	grep -q '^end .*lost=7' "$T/dump"
	run cpa-unwind --folded "$T/mixed.cpa"
	grep -qx '\[lost\] 7' <<<"$output"
}

@test "a malformed meta record is dropped, named and counted; the store downstream keeps going" {
	"$WL/selfsnap" --samples 3 >"$T/s.cpa"
	# META "abc": no NUL after its key; then a good one
	{ head -c 16 "$T/s.cpa"
	  printf '\x08\x00\x00\x00\x03\x00\x00\x00abc'
	  printf '\x08\x00\x00\x00\x05\x00\x00\x00ok\x00go'
	  tail -c +17 "$T/s.cpa"; } >"$T/meta.cpa"
	set -o pipefail
	run bash -c "cpa-unwind --stats-file '$T/stats' '$T/meta.cpa' 2>'$T/err' | cpa-store --dir '$T/st'; echo \"\${PIPESTATUS[*]}\""
	cat "$T/err"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "1 0" ]
	[ "$(grep -c warning "$T/err")" -eq 1 ]
	grep -qx "cpa-unwind: warning: $T/meta.cpa: byte 16: meta record: no NUL after the key; record dropped" "$T/err"
	grep -qx 'dropped_malformed_records=1' "$T/stats"
	# every sample and the good meta reached the store
	cpa-query --dir "$T/st" >"$T/q"
	[ "$(awk -v c=";$CHAIN" 'index($0, c " ") {n += $NF} END {print n}' "$T/q")" -eq 3 ]
	grep -qx 'stream.ok=go' "$T"/st/*Z/meta
	# a reset would empty downstream's dictionary under our ids: refused
	{ head -c 16 "$T/s.cpa"; printf '\x09\x00\x00\x00\x00\x00\x00\x00'; tail -c +17 "$T/s.cpa"; } >"$T/reset.cpa"
	run cpa-unwind "$T/reset.cpa"
	[ "$status" -eq 1 ]
	[[ "$output" == *"reset.cpa: byte 16: reset record: input is already symbolized"* ]]
}

@test "--no-demangle, --labels and bad options" {
	"$WL/selfsnap" >"$T/s.cpa"
	run cpa-unwind --folded --labels comm,pid "$T/s.cpa"
	[[ "$output" == "selfsnap;[pid "*"];"*";$CHAIN 1" ]]
	run cpa-unwind --unwind sideways
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --unwind 'sideways'"* ]]
	run cpa-unwind --max-cache lots
	[ "$status" -eq 2 ]
	run cpa-unwind --env ''
	[ "$status" -eq 2 ]
	run cpa-unwind --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--max-cache"* ]]
}

@test "--max-cache bounds the ELF cache: evictions are counted, output unchanged" {
	"$WL/selfsnap" --samples 4 >"$T/a.cpa"
	"$WL/selfsnap" --samples 4 --qsort >"$T/b.cpa"
	# two processes' streams concatenated into one stream
	{ head -c -32 "$T/a.cpa"; tail -c +17 "$T/b.cpa"; } >"$T/ab.cpa"
	# unbounded: the two processes share the program's and libc's objects
	run cpa-unwind --folded --stats "$T/ab.cpa"
	# (each object loaded once, then found again for the second process)
	grep -qE 'elf cache .*objects=([0-9]+) .*loads=\1 hits=[1-9]' <<<"$output"
	# objects bigger than the whole cache, let through by --max-object
	run cpa-unwind --folded --stats --max-cache 1K --max-object 64M "$T/ab.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(grep -c ";$CHAIN_RE 1" <<<"$output")" -eq 4 ]
	[ "$(grep -c ';compare;snap_leaf;grab_registers_\[i\] 1' <<<"$output")" -eq 4 ]
	grep -q 'elf cache .*\(evictions\|unloads\)=[1-9]' <<<"$output"
}

@test "--max-object defaults to --max-cache: an object bigger than the whole cache is refused, counted" {
	"$WL/selfsnap" --samples 4 >"$T/a.cpa"
	run cpa-unwind --folded --stats --max-cache 64K "$T/a.cpa"
	[ "$status" -eq 0 ]
	echo "$output"
	# the program's own tables fit in 64K (its DWARF, for the inlined
	# frames, does not); libc's (about 550 KB) do not
	[ "$(grep -c ";$FUNCS 1" <<<"$output")" -eq 4 ]
	grep -q 'inline tables  objects=0 over-budget=1' <<<"$output"
	grep -Eq 'elf failures .*(symbols|cfi)-over-budget=[1-9]' <<<"$output"
	grep -Eq '^selfsnap;.*libc\.so\.6\+0x' <<<"$output"
}

@test "process state is freed on exit records; objects stay cached for reuse" {
	"$WL/selfsnap" --exit-record >"$T/all.cpa"
	head -c -32 "$T/all.cpa" >"$T/body"
	for _ in $(seq 2 20); do
		"$WL/selfsnap" --exit-record | tail -c +17 | head -c -32 >>"$T/body"
	done
	tail -c 32 "$T/all.cpa" >>"$T/body"
	run cpa-unwind --folded --stats "$T/body"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(grep -c ";$CHAIN_RE 1" <<<"$output")" -eq 20 ]
	grep -q 'processes  *0 live' <<<"$output"
	grep -q 'records  *tasks=20 ' <<<"$output"
	# twenty processes, one load per object
	grep -qE 'elf cache .*objects=([0-9]+) .*loads=\1 ' <<<"$output"
}

@test "--env labels samples with the process's environment value" {
	SERVICE_NAME=checkout "$WL/selfsnap" --no-mmap --hold >"$T/s.cpa" 2>"$T/wl.err" &
	WL_BG_PIDS="$!"
	wait_for 10 grep -q '^ready ' "$T/wl.err"
	run cpa-unwind --folded --env POD,SERVICE_NAME --labels comm,env "$T/s.cpa"
	echo "$output"
	[[ "$output" == "selfsnap;[env checkout];"*";$CHAIN 1" ]]
}

@test "fuzz corpora of the ELF/CFI loader and the perf map parser replay cleanly" {
	run "$CPA_BUILDDIR/tests/fuzz/unwind_elf_replay" "$CPA_SRCDIR/tests/fuzz/corpus/unwind_elf"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
	run "$CPA_BUILDDIR/tests/fuzz/unwind_perfmap_replay" "$CPA_SRCDIR/tests/fuzz/corpus/unwind_perfmap"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
	run "$CPA_BUILDDIR/tests/fuzz/unwind_stream_replay" "$CPA_SRCDIR/tests/fuzz/corpus/unwind_stream"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
}
