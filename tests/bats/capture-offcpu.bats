#!/usr/bin/env bats
# cpa-capture off-CPU intervals, probes and IRQ-off gaps, with real BPF
# against workloads that sleep, contend and call known functions a known
# number of times. The workloads wait for SIGUSR1 so that every capture is
# attached before they start; all captures run at once.

load capture_helper

raw() { dump "$1" | awk '$1 == "raw"'; }

CAPTURES="off1 offsnap offblocked offcpu0 offrq offopen p1 p2 p3 p4 irq"

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	start_bg sleep5 "$WL/sleeper" --sleep 5 --count 1000 --pin 1
	# CPU 1, where the sleeper is pinned too: CPU 0 is left to the
	# spinner whose samples capture.bats counts, if it runs meanwhile
	start_bg contend "$WL/sleeper" --contend 3 --pin 1
	start_bg longsleep "$WL/sleeper" --sleep 600000 --count 1
	start_bg writer "$WL/writer" --writes 1000 --calls 500

	local s c l w
	s=$(pidof_wl sleep5); c=$(pidof_wl contend)
	l=$(pidof_wl longsleep); w=$(pidof_wl writer)
	cap off1 --offcpu --no-oncpu --pid "$s"
	cap offsnap --offcpu --offcpu-stack-size 8K --no-oncpu --pid "$s"
	cap offblocked --offcpu-phase blocked --no-oncpu --pid "$s"
	cap offcpu0 --offcpu --no-oncpu --pid "$s" --cpu 0
	cap offrq --offcpu-phase runqueue --offcpu-min 0 --no-oncpu --pid "$c"
	cap offopen --offcpu --no-oncpu --pid "$l"
	cap p1 --no-oncpu --pid "$w" --probe tracepoint:syscalls:sys_enter_write \
		--probe "uprobe:$WL/writer:counted_call"
	cap p2 --no-oncpu --pid "$w" --probe "uretprobe:$WL/writer:counted_call"
	cap p3 --no-oncpu --pid "$w" --probe tracepoint:syscalls:sys_enter_write \
		--probe-rate 100
	# a ring of 64 KiB holds about 7 hits with their stack copies
	cap p4 --no-oncpu --pid "$w" --probe tracepoint:syscalls:sys_enter_write \
		--ringbuf-size 64K
	cap irq --irqoff --duration 8
	for x in $CAPTURES; do
		wait_for 30 cap_attached $x
	done

	kill -USR1 "$s" "$c" "$l" "$w"
	wait_for 60 gone "$s"
	wait_for 60 gone "$c"
	wait_for 60 gone "$w"
	for x in $CAPTURES; do
		cap_stop $x
	done
}

teardown_file() {
	kill_bg
}

# hex2dec for awk without strtonum; user addresses fit in a double
AWK_HEX='function hex(s,   i, c, v) { v = 0; s = tolower(s); sub(/^0x/, "", s)
	for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
	return v }'

# address range of a function of a workload in one process, from the
# capture's MMAP record of the workload and the symbol table
func_range() {
	local capture=$1 pid=$2 prog=$3 fn=$4 start pgoff value size
	read -r start pgoff < <(dump "$capture" | awk -v p="pid=$pid" -v path="path=$WL/$prog" \
		'$1 == "mmap" && $3 == p && $NF == path && $7 == "prot=5" { sub(/start=/, "", $4); sub(/pgoff=/, "", $6); print $4, $6; exit }')
	read -r value size < <(nm -S "$WL/$prog" | awk -v f="$fn" '$4 == f { print $1, $2 }')
	[ -n "$start" ] && [ -n "$value" ] || { echo "no mapping or symbol for $fn" >&2; return 1; }
	echo "$(( start - pgoff + 0x$value )) $(( start - pgoff + 0x$value + 0x$size ))"
}

@test "offcpu: every capture ran and ended cleanly" {
	for x in $CAPTURES; do
		echo "$x: status $(cat "$T/$x.status")"; cat "$T/$x.err"
		[ "$(cat "$T/$x.status")" -eq 0 ]
		dump $x | tail -1 | grep -q '^end '
	done
}

@test "offcpu: 1000 sleeps of 5 ms are 5 s of off-CPU blocked time, under the sleeping function" {
	local s lo hi total n under
	s=$(pidof_wl sleep5)
	raw off1 | awk '{print $3, $5, $6}' | sort | uniq -c
	n=$(raw off1 | awk -v t="tid=$s" '$4 == t && $6 == "kind=offcpu-blocked"' | wc -l)
	total=$(raw off1 | awk -v t="tid=$s" '$4 == t && $6 == "kind=offcpu-blocked" { sub(/weight=/, "", $7); w += $7 } END { printf "%.0f\n", w }')
	read -r lo hi < <(func_range off1 "$s" sleeper run_sleeps)
	under=$(raw off1 | awk -v t="tid=$s" -v lo="$lo" -v hi="$hi" "$AWK_HEX"'
		$4 == t && $6 == "kind=offcpu-blocked" {
			sub(/weight=/, "", $7); all += $7
			for (i = 1; i <= NF; i++) if ($i ~ /^uips=/) {
				n = split(substr($i, 6), a, ",")
				for (j = 1; j <= n; j++) { v = hex(a[j]); if (v >= lo && v < hi) { hit += $7; break } }
			}
		}
		END { printf "%.0f\n", all ? 100 * hit / all : 0 }')
	echo "blocked: $n intervals, $total ns, $under% under run_sleeps"
	[ "$n" -ge 950 ]
	[ "$n" -le 1010 ]
	[ "$total" -ge 4250000000 ]
	[ "$total" -le 5750000000 ]
	[ "$under" -ge 95 ]
	# kernel stacks taken at switch-out, on the CPU the sleeper is pinned to
	got=$(raw off1 | awk '$12 == "nk=0"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw off1 | awk '$5 != "cpu=1"' | wc -l)
	[ "$got" -eq 0 ]
	# the wait on the runqueue after each wakeup is a separate kind
	raw off1 | grep ' kind=offcpu-delay ' >/dev/null
}

# kallsyms range of a kernel function as "xHEX xHEX": kernel addresses
# are too large for awk's doubles, but fixed-width hex compares as text
ksym_range() {
	cat /proc/kallsyms | awk -v f="$1" '
		{ addr[NR] = $1 }
		$3 == f && ($2 == "t" || $2 == "T") { lo = $1 }
		END {
			if (lo == "") exit
			for (i = 1; i <= NR; i++)
				if (addr[i] > lo && (hi == "" || addr[i] < hi)) hi = addr[i]
			print "x" lo, "x" hi
		}'
}

@test "offcpu: kernel stacks start where the task left the CPU, not in BPF" {
	local lo hi
	read -r lo hi < <(ksym_range __schedule)
	echo "__schedule: $lo..$hi"
	[ -n "$hi" ]
	raw off1 | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^kips=/) { split(substr($i, 6), a, ","); print a[1] } }' | sort | uniq -c | sed -n 1,3p
	got=$(raw off1 | awk -v lo="$lo" -v hi="$hi" '{ for (i = 1; i <= NF; i++) if ($i ~ /^kips=/) { split(substr($i, 6), a, ","); v = "x" substr(a[1], 3); if (length(v) != 17 || v < lo || v >= hi) print } }' | wc -l)
	[ "$got" -eq 0 ]
}

@test "offcpu: --offcpu-stack-size adds registers and a stack copy for DWARF unwinding" {
	local s
	s=$(pidof_wl sleep5)
	raw offsnap | awk '{print $6, $14}' | sort | uniq -c
	got=$(raw offsnap | awk '$6 == "kind=offcpu-blocked"' | wc -l)
	[ "$got" -ge 950 ]
	got=$(raw offsnap | awk '$14 != "nregs=3" || $15 == "stack=0"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw offsnap | awk '{ sub(/stack=/, "", $15); if ($15 + 0 > 8192) print }' | wc -l)
	[ "$got" -eq 0 ]
	# the registers are the user ones: sp lies within the copied stack's
	# start, ip in user space
	got=$(raw offsnap | awk "$AWK_HEX"'{ for (i = 1; i <= NF; i++) if ($i ~ /^regs=/) { split(substr($i, 6), r, ","); if (hex(r[1]) >= 2^47 || hex(r[2]) >= 2^47 || hex(r[2]) == 0) print } }' | wc -l)
	[ "$got" -eq 0 ]
	# the default copy is the first 512 bytes (offcpu-callers.bats)
	got=$(raw off1 | awk '$14 != "nregs=3" || $15 != "stack=512"' | wc -l)
	[ "$got" -eq 0 ]
}

@test "offcpu: --offcpu-phase blocked records only blocked intervals" {
	got=$(raw offblocked | wc -l)
	[ "$got" -ge 950 ]
	got=$(raw offblocked | awk '$6 != "kind=offcpu-blocked"' | wc -l)
	[ "$got" -eq 0 ]
}

@test "offcpu: --cpu attributes an interval to the CPU the task left" {
	# the sleeper is pinned to CPU 1
	got=$(raw offcpu0 | wc -l)
	[ "$got" -eq 0 ]
}

@test "offcpu: preempted and yielded waits of two threads sharing a CPU" {
	local c
	c=$(pidof_wl contend)
	raw offrq | awk '{print $3, $6}' | sort | uniq -c
	got=$(raw offrq | awk -v p="pid=$c" '$3 == p && $6 == "kind=offcpu-preempted"' | wc -l)
	[ "$got" -gt 10 ]
	got=$(raw offrq | awk -v p="pid=$c" '$3 == p && $6 == "kind=offcpu-yielded"' | wc -l)
	[ "$got" -gt 10 ]
	got=$(raw offrq | awk '$6 == "kind=offcpu-blocked"' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw offrq | awk -v p="pid=$c" '$3 != p' | wc -l)
	[ "$got" -eq 0 ]
}

@test "offcpu: an interval still open at stop is flushed, not dropped" {
	local l
	l=$(pidof_wl longsleep)
	raw offopen | cut -c1-200
	got=$(raw offopen | awk -v t="tid=$l" '$4 == t && $6 == "kind=offcpu-blocked"' | wc -l)
	[ "$got" -eq 1 ]
	# it slept from SIGUSR1 until the capture stopped, seconds later
	got=$(raw offopen | awk '$6 == "kind=offcpu-blocked" { sub(/weight=/, "", $7); print $7 }')
	[ "$got" -ge 2000000000 ]
}

@test "probes: 1000 write() calls and 500 calls of a function, counted exactly" {
	local w lo hi
	w=$(pidof_wl writer)
	raw p1 | awk '{print $3, $6, $9}' | sort | uniq -c
	# the tracepoint hits are in the kernel, the uprobe hits in user mode
	# (the in-kernel flag, 0x10; a sanitized build's deeper stack may also
	# set the truncated one, 0x1, which is not what is counted here)
	got=$(raw p1 | awk '$6 == "kind=probe" && $9 ~ /^flags=0x1[0-9a-f]$/' | wc -l)
	[ "$got" -eq 1000 ]
	got=$(raw p1 | awk '$6 == "kind=probe" && $9 ~ /^flags=0x[0-9a-f]$/' | wc -l)
	[ "$got" -eq 500 ]
	got=$(raw p1 | wc -l)
	[ "$got" -eq 1500 ]
	got=$(raw p1 | awk -v p="pid=$w" '$3 != p' | wc -l)
	[ "$got" -eq 0 ]
	got=$(dump p1 | awk '$1 == "lost"' | wc -l)
	[ "$got" -eq 0 ]
	# each tracepoint hit has the kernel's syscall stack
	got=$(raw p1 | awk '$9 == "flags=0x10" && $12 == "nk=0"' | wc -l)
	[ "$got" -eq 0 ]
	# each uprobe hit's leaf, its IP register (the FP chain is left to
	# cpa-unwind where the snapshot holds the stack), is the entry of
	# counted_call
	read -r lo hi < <(func_range p1 "$w" writer counted_call)
	got=$(raw p1 | awk -v lo="$lo" "$AWK_HEX"'$9 == "flags=0x0" { for (i = 1; i <= NF; i++) if ($i ~ /^regs=/) { split(substr($i, 6), a, ","); if (hex(a[1]) != lo) print } }' | wc -l)
	[ "$got" -eq 0 ]
}

@test "probes: a uretprobe fires once per return" {
	got=$(raw p2 | awk '$6 == "kind=probe"' | wc -l)
	[ "$got" -eq 500 ]
}

@test "probes: --probe-rate drops the excess and counts it" {
	local n lost
	n=$(raw p3 | wc -l)
	lost=$(dump p3 | awk '$1 == "lost" && $3 == "reason=probe-rate" { sub(/count=/, "", $4); s += $4 } END { print s + 0 }')
	echo "kept $n, dropped $lost"
	[ "$n" -ge 100 ]
	[ "$n" -le 200 ]
	[ $(( n + lost )) -eq 1000 ]
	dump p3 | tail -1 | grep -q "^end samples=$n lost=$lost "
}

@test "probes: a full ring buffer loses samples, and says how many" {
	local n lost
	n=$(raw p4 | wc -l)
	lost=$(dump p4 | awk '$1 == "lost" && $3 == "reason=ringbuf" { sub(/count=/, "", $4); s += $4 } END { print s + 0 }')
	echo "kept $n, lost $lost"
	[ "$lost" -gt 0 ]
	[ $(( n + lost )) -eq 1000 ]
	dump p4 | tail -1 | grep -q "^end samples=$n lost=$lost "
}

@test "irqoff: gaps reported are longer than 1.1 timer periods" {
	local n
	n=$(raw irq | awk '$6 == "kind=irqoff"' | wc -l)
	echo "$n IRQ-off gaps"
	raw irq | awk '$6 == "kind=irqoff"' | cut -c1-160 | sed -n 1,5p
	# 1.1 / 49 Hz = 22448979 ns
	got=$(raw irq | awk '$6 == "kind=irqoff" { sub(/weight=/, "", $7); if ($7 + 0 <= 22448979) print }' | wc -l)
	[ "$got" -eq 0 ]
	got=$(raw irq | awk '$6 == "kind=oncpu"' | wc -l)
	[ "$got" -gt 100 ]
	dump irq | grep -x 'meta mode=oncpu,irqoff' >/dev/null
}
