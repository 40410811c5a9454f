#!/usr/bin/env bats
# Stores that CPA wrote (conf, strmap, idsmap, stack.bin in cpa_YYMMDD),
# read by cpa-query as its own: fixtures from tests/tools/gen-cpastore,
# which writes the format from its description, and one real capture
# stored both ways.
load helper

GEN="$CPA_BUILDDIR/tests/tools/gen-cpastore"

# The fixture: two days; the first ends with a window across midnight
# (23:59:59.5 to 00:00:00.5, after a guard record), the second with a
# torn tail (its last zstd frame cut short).
fixture() {
	"$GEN" "$1" <<-'EOF'
	conf version=1.0.0 cpu_num=2 freq=50 record_interval=1 record_env_name=POD_NAME
	day cpa_261129
	record 86398000 86399000
	10	worker	nginx	1234	1	4321	pod-a	main;run;hot
	5	nginx	nginx	1234	0	4321	pod-a	main;idle
	record 86399000 86399500
	3	worker	nginx	1234	1	4321	pod-a	main;run;hot
	guard 86399500
	record 86399500 500
	7	w2	redis	99	1	77		<# OFFCPU SAMPLE: (S) #>;main;sleep;schedule_[k]
	4	w2	redis	99	1	77		<# OFFCPU SAMPLE: (R) #>;main;spin
	2	w2	redis	99	1	77		<# IRQOFF SAMPLE ON CPU 1 #>;main;cli_[k]
	record 500 1500
	2	w2	redis	99	0	77		main;x
	day cpa_261130
	record 36000000 36001000
	4	w2	redis	99	0	77		main;y
	record 36001000 36002000
	6	w2	redis	99	0	77		main;z
	tear 5
	EOF
}

setup_file() {
	fixture "$BATS_FILE_TMPDIR/cpa" >/dev/null
	export CPA_STORE=$BATS_FILE_TMPDIR/cpa
}

setup() {
	T=$BATS_TEST_TMPDIR
	export CPA_CONFIG=/dev/null
}

@test "CPA store: the range of a root and of one day, across midnight, the torn tail said" {
	day1=$(cat "$CPA_STORE"/cpa_261129/* | wc -c)
	both=$(cat "$CPA_STORE"/*/* | wc -c)
	run --separate-stderr cpa-query --dir "$CPA_STORE" --list
	[ "$status" -eq 0 ]
	echo "$output"
	[ "${lines[1]}" = "$(printf '%-40s %-23s %-23s %8s %7s %10s' "$CPA_STORE/cpa_261129" '2026-11-29 23:59:58.000' '2026-11-30 00:00:01.500' 4 4 "$day1")" ]
	[ "${lines[3]}" = "range 2026-11-29 23:59:58.000 .. 2026-11-30 10:00:01.000 (10h0m3s, $both bytes)" ]
	[ "${lines[4]}" = "gap 2026-11-30 00:00:01.500 .. 2026-11-30 10:00:00.000 (9h59m58s)" ]
	[ "$stderr" = "cpa-query: warning: $CPA_STORE/cpa_261130: ignoring a torn tail of 44 bytes (stack.bin: byte 43: zstd frame cut short)" ]
	# CPA's spelling, on the day directory as its README types it
	run cpa show --read "$CPA_STORE/cpa_261129" --show_range 1
	[ "$status" -eq 0 ]
	[ "${lines[2]}" = "range 2026-11-29 23:59:58.000 .. 2026-11-30 00:00:01.500 (3s, $day1 bytes)" ]
}

@test "CPA store: every stack with every label CPA keeps, markers as kinds" {
	cpa-query --dir "$CPA_STORE/cpa_261129" --labels comm,pid,cpu,thread,env >"$T/out"
	cat >"$T/want" <<-'EOF'
	nginx;[pid 4321];[cpu 1];[thread worker];[env pod-a];main;run;hot 13
	nginx;[pid 4321];[cpu 0];[thread nginx];[env pod-a];main;idle 5
	off-CPU blocked;redis;[pid 77];[cpu 1];[thread w2];[env SYSTEM];main;sleep;schedule_[k] 7
	scheduling delay (preempted);redis;[pid 77];[cpu 1];[thread w2];[env SYSTEM];main;spin 4
	IRQ off;redis;[pid 77];[cpu 1];[thread w2];[env SYSTEM];main;cli_[k] 40000000
	redis;[pid 77];[cpu 0];[thread w2];[env SYSTEM];main;x 2
	EOF
	diff "$T/want" "$T/out"
}

@test "CPA store: the filters CPA has, as cpa show's --target_* options" {
	run --separate-stderr cpa show --read "$CPA_STORE" --target_pid 4321 --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'nginx;main;idle 5\nnginx;main;run;hot 13')" ]
	run --separate-stderr cpa show --read "$CPA_STORE" --target_comm nginx --target_cpu 0 --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "nginx;main;idle 5" ]
	run --separate-stderr cpa show --read "$CPA_STORE" --target_env pod-a --target_cpu 1 --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "nginx;main;run;hot 13" ]
	run --separate-stderr cpa show --read "$CPA_STORE" --target_cgroup_id 99 --target_cpu 0 --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'redis;main;x 2\nredis;main;y 4')" ]
	run --separate-stderr cpa-query --dir "$CPA_STORE" --comm redis --kind offcpu-blocked
	[ "$status" -eq 0 ]
	[ "$output" = "off-CPU blocked;redis;main;sleep;schedule_[k] 7" ]
}

@test "CPA store: a window across midnight is on the next day, the torn record left out" {
	cpa-query --dir "$CPA_STORE" --from '2026-11-30 00:00:00' --to '2026-11-30 00:00:01' 2>/dev/null | sort >"$T/out"
	cat >"$T/want" <<-'EOF'
	IRQ off;redis;main;cli_[k] 40000000
	off-CPU blocked;redis;main;sleep;schedule_[k] 7
	redis;main;x 2
	scheduling delay (preempted);redis;main;spin 4
	EOF
	diff "$T/want" "$T/out"
	run --separate-stderr cpa-query --dir "$CPA_STORE" --from '2026-11-30 09:00'
	[ "$status" -eq 0 ]
	[ "$output" = "redis;main;y 4" ]
}

@test "CPA store: what is not a store is refused with one line naming what was found" {
	mkdir "$T/junk"; touch "$T/junk/a.txt"
	run cpa-query --dir "$T/junk"
	[ "$status" -eq 1 ]
	[ "$output" = "cpa-query: $T/junk: not a store: no segment directory of cpa's (YYYYMMDDTHHMMSSZ) nor day directory of CPA's (cpa_YYMMDD) in it, found 'a.txt'" ]
	cp -r "$CPA_STORE/cpa_261129" "$T/d"; rm "$T/d/idsmap"
	run cpa-query --dir "$T/d"
	[ "$status" -eq 1 ]
	[ "$output" = "cpa-query: $T/d: a CPA store without idsmap (CPA writes conf, strmap, idsmap and stack.bin)" ]
	cp -r "$CPA_STORE/cpa_261129" "$T/z"; echo garbage >"$T/z/stack.bin"
	run cpa-query --dir "$T/z"
	[ "$status" -eq 1 ]
	[ "$output" = "cpa-query: $T/z/stack.bin: byte 0: not zstd (Unknown frame descriptor)" ]
	cp -r "$CPA_STORE/cpa_261129" "$T/v"; sed -i 's/^version: .*/version: 2.0.0/' "$T/v/conf"
	run cpa-query --dir "$T/v"
	[ "$status" -eq 1 ]
	[ "$output" = "cpa-query: $T/v/conf: CPA store version 2.0.0; this build reads CPA's version 1 stores" ]
}

@test "CPA store: cpa show --output_prof writes the range as folded text" {
	cd "$T"
	run cpa show --read "$CPA_STORE/cpa_261130" --output_prof x.prof
	[ "$status" -eq 0 ]
	[ "$(cat x.prof)" = "redis;main;y 4" ]
}

@test "CPA store: the same capture stored by cpa and as CPA stores it answers the same" {
	require_bpf
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 20
	local chain=$WL_PID
	start_workload "$T/sl.out" "$WL/sleeper" --sleep 5 --count 100000
	kill -USR1 "$WL_PID"
	cpa-capture --duration 2 --offcpu --pid "$chain,$WL_PID" | cpa-unwind |
		cpa-store --dir "$T/ours"
	kill_workloads
	cpa-query --dir "$T/ours" --format stream | "$GEN" --stream "$T/theirs"
	local q=(--labels comm,pid,cpu,thread --kind oncpu,offcpu-blocked,offcpu-preempted)
	cpa-query --dir "$T/ours" "${q[@]}" | sort >"$T/a"
	cpa-query --dir "$T/theirs" "${q[@]}" | sort >"$T/b"
	grep -q '^chain_fp;.*level_b;hot_leaf ' "$T/a"
	grep -q '^off-CPU blocked;' "$T/a"
	diff "$T/a" "$T/b"
	# window by window too
	cpa-query --dir "$T/ours" "${q[@]}" --split "$T/sa"
	cpa-query --dir "$T/theirs" "${q[@]}" --split "$T/sb"
	n=$(ls "$T/sa" | wc -l)
	[ "$n" -ge 2 ]
	for f in "$T"/sa/*; do sort "$f" >"$f.s"; sort "$T/sb/${f##*/}" >"$T/sb/${f##*/}.s"; done
	diff -r "$T/sa" "$T/sb"
}
