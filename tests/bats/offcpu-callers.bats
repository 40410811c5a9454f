#!/usr/bin/env bats
# Off-CPU stacks through libc's blocking wrappers, which Debian builds
# without frame pointers: under the default options the function that
# called the wrapper is in the chain (cpa-capture copies the first bytes
# of user stack at switch-out, cpa-unwind unwinds libc's frames by CFI and
# continues with the frame-pointer chain). One workload per wrapper, each
# blocking 80 times for about 25 ms through main -> run -> wait_loop ->
# block_in_MODE -> libc, with 4 KiB of stack between run and main; all
# captures run at once.

bats_require_minimum_version 1.5.0

load capture_helper

MODES="nanosleep read mutex epoll poll"

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	local m p
	for m in $MODES; do
		# no leak check at exit under ASan: its stop-the-world waits
		# are off-CPU time outside the loop
		start_bg "$m" env ASAN_OPTIONS=detect_leaks=0 "$WL/blocker" "$m" 25 80
		cap "$m" --offcpu --no-oncpu --pid "$(pidof_wl "$m")"
	done
	# probes in a wrapper: a system call tracepoint, default options too
	cap probe --no-oncpu --pid "$(pidof_wl nanosleep)" \
		--probe tracepoint:syscalls:sys_enter_clock_nanosleep
	# an interval still open when the capture stops
	start_bg open env ASAN_OPTIONS=detect_leaks=0 "$WL/blocker" nanosleep 600000 1
	cap open --offcpu --no-oncpu --pid "$(pidof_wl open)"
	for m in $MODES probe open; do
		wait_for 30 cap_attached "$m"
	done
	for m in $MODES open; do
		kill -USR1 "$(pidof_wl "$m")"
	done
	for m in $MODES; do
		wait_for 60 grep -q '^blocked ' "$T/$m.out"
	done
	local rc
	for m in $MODES probe open; do
		kill -INT "$(cat "$T/$m.cpid")"
		rc=0
		wait "$(cat "$T/$m.cpid")" || rc=$?
		echo "$rc" > "$T/$m.status"
		rc=0
		cpa-unwind --folded --stats < "$T/$m.cpa" > "$T/$m.folded" \
			2> "$T/$m.unwind" || rc=$?
		echo "$rc" > "$T/$m.ustatus"
	done
}

teardown_file() {
	local f
	for f in "$T"/*.bgpid "$T"/*.cpid; do
		[ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	return 0
}

# weight MODE [REGEX]: total folded weight of MODE's capture, of the lines
# matching REGEX if given
weight() {
	awk -v re="${2:-}" 're == "" || $0 ~ re { w += $NF } END { printf "%.0f\n", w }' \
		"$T/$1.folded"
}

# check_mode MODE: the blocking function is under >= 95% of the off-CPU
# weight, right below a libc frame, and the weight is the blocked time
check_mode() {
	local m=$1 total under blocked root=";main;run"
	# Under ASan an interceptor wraps the wrapper and uses rbp as a
	# general register: no frame-pointer chain goes on above the copy,
	# whose frames are then all there is (under a [truncated] root)
	grep -q ";block_in_$m;__interceptor_" "$T/$m.folded" && root=";run"
	total=$(weight "$m")
	under=$(weight "$m" "$root;wait_loop;block_in_$m;[^;]*[^]];")
	blocked=$(awk '/^blocked /{print $2}' "$T/$m.out")
	echo "$m: off-CPU $total ns, $under ns under block_in_$m, blocked $blocked ns"
	sed -n 's/^  *\(chain chosen\|dwarf walks\)/&/p' "$T/$m.unwind"
	awk '{ sub(/ [0-9]+$/, ""); print }' "$T/$m.folded" | sort | uniq -c | sort -rn | sed -n 1,3p
	[ "$total" -gt 0 ]
	[ $(( under * 100 )) -ge $(( total * 95 )) ]
	[ $(( total * 100 )) -ge $(( blocked * 95 )) ]
	[ $(( total * 100 )) -le $(( blocked * 105 )) ]
}

@test "offcpu-callers: every capture and unwind ended cleanly" {
	local m
	for m in $MODES probe open; do
		echo "$m: capture $(cat "$T/$m.status"), unwind $(cat "$T/$m.ustatus")"
		cat "$T/$m.err"
		[ "$(cat "$T/$m.status")" -eq 0 ]
		[ "$(cat "$T/$m.ustatus")" -eq 0 ]
	done
}

@test "offcpu-callers: nanosleep" {
	check_mode nanosleep
	# the wrapper's own frames come from the stack copy
	grep -q ';block_in_nanosleep;__nanosleep;clock_nanosleep;' "$T/nanosleep.folded"
}

@test "offcpu-callers: read on a pipe" {
	check_mode read
}

@test "offcpu-callers: pthread_mutex_lock (futex)" {
	check_mode mutex
}

@test "offcpu-callers: epoll_wait" {
	check_mode epoll
}

@test "offcpu-callers: poll" {
	check_mode poll
}

@test "offcpu-callers: the stack copy is 512 bytes by default" {
	local m n copied
	for m in $MODES; do
		"$CPA_BUILDDIR/tests/tools/cpa-dump" < "$T/$m.cpa" > "$T/$m.dump"
		awk '$1 == "raw" { print $14, $15 }' "$T/$m.dump" | sort | uniq -c
		# every sample with a user chain has registers and 512 bytes
		n=$(awk '$1 == "raw" && $13 != "nu=0" { n++ } END { print n + 0 }' "$T/$m.dump")
		copied=$(awk '$1 == "raw" && $14 == "nregs=3" && $15 == "stack=512" { n++ } END { print n + 0 }' "$T/$m.dump")
		[ "$n" -gt 0 ]
		[ "$copied" -eq "$n" ]
	done
}

@test "offcpu-callers: probe hits in a wrapper keep its caller" {
	local total under
	total=$(weight probe)
	under=$(weight probe ";main;run;wait_loop;block_in_nanosleep;__nanosleep;clock_nanosleep;")
	echo "probe: $total hits, $under under block_in_nanosleep"
	[ "$total" -ge 76 ]
	[ $(( under * 100 )) -ge $(( total * 95 )) ]
}

@test "offcpu-callers: an interval open at stop keeps the caller too" {
	local total under
	total=$(weight open)
	under=$(weight open ";main;run;wait_loop;block_in_nanosleep;__nanosleep;clock_nanosleep;")
	echo "open: $total ns, $under ns under block_in_nanosleep"
	[ "$total" -gt 0 ]
	[ $(( under * 100 )) -ge $(( total * 95 )) ]
}
