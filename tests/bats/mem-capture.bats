#!/usr/bin/env bats
# cpa-capture --mem virt, phys and usage with real BPF, against a workload
# (tests/workloads/memory.c) that maps and touches known numbers of bytes
# from known functions. The workloads wait for SIGUSR1 so that every
# capture is attached before they start, and again before they exit, so
# usage can be looked at while the memory is held and after the exit. All
# captures run at once.

load capture_helper

MiB=1048576

done_line() { grep -q '^done ' "$T/$1.out"; }
later_than() { [ "$(date +%s)" -ge "$1" ]; }

# NAME.folded: the capture through cpa-unwind, one line per sample, and
# NAME.dump: its records as text, both written once in setup_file

# count FILE REGEX: lines of FILE that match
count() { awk -v r="$2" '$0 ~ r { n++ } END { print n + 0 }' "$1"; }

# sum_under NAME ROOT FRAME: bytes of the samples under root frame ROOT
# (a kind's marker, or "[freed]") whose stack holds FRAME
sum_under() {
	awk -v root="$2" -v f=";$3;" '
		{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s) }
		index(s, root ";") == 1 && index(s ";", f) { t += n }
		END { printf "%.0f\n", t }' "$T/$1.folded"
}

# net NAME FRAME: mem-usage allocations minus frees under FRAME
net() {
	local a f
	a=$(sum_under "$1" "memory usage" "$2")
	f=$(sum_under "$1" "[freed];memory usage" "$2")
	echo $(( a - f ))
}

CAPTURES="virt virtcomm phys prob live exited"

# drain_lru_batches: runs a process that exits on each online CPU
drain_lru_batches() {
	local c
	for c in $(seq 0 $(( $(nproc --all) - 1 ))); do
		taskset -c "$c" true 2>/dev/null || echo "# CPU $c is offline"
	done
}

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	start_bg virt "$WL/memory" --virt 8M --brk 1M --remap 4M
	start_bg virtcomm "$WL/memory" --name memvirtcomm --virt 2M
	start_bg phys "$WL/memory" --touch 16M
	start_bg prob "$WL/memory" --touch 32M
	start_bg usage "$WL/memory" --leak 16M --churn 8M

	local v c p q u
	v=$(pidof_wl virt); c=$(pidof_wl virtcomm); p=$(pidof_wl phys)
	q=$(pidof_wl prob); u=$(pidof_wl usage)
	cap virt --no-oncpu --mem virt --pid "$v"
	cap virtcomm --no-oncpu --mem virt --comm memvirtcomm
	cap phys --no-oncpu --mem phys --pid "$p"
	cap prob --no-oncpu --mem phys --mem-probability 10 --pid "$q"
	cap live --no-oncpu --mem usage --pid "$u"
	cap exited --no-oncpu --mem usage --pid "$u"
	for x in $CAPTURES; do
		wait_for 30 cap_attached $x
	done

	kill -USR1 "$v" "$c" "$p" "$q" "$u"
	for x in virt virtcomm phys prob usage; do
		wait_for 60 done_line $x
	done
	# usage while the memory is still held, then after the exit; the
	# exit starts two seconds later, so a second holds only what was held
	date +%s > "$T/held.s"
	cap_stop live
	wait_for 5 later_than $(( $(cat "$T/held.s") + 2 ))
	kill -USR1 "$v" "$c" "$p" "$q" "$u"
	for x in $v $c $p $q $u; do
		wait_for 60 gone $x
	done
	# An exited process's last pages can sit in the LRU batch of a CPU it
	# ran on, which holds a reference to them until that CPU drains it:
	# on a quiet host that can be long after the capture stops. A process
	# exiting drains the batches of the CPU it exits on, so one short
	# process pinned to each CPU hands every such page to its free.
	drain_lru_batches
	for x in $CAPTURES; do
		[ -e "$T/$x.status" ] || cap_stop $x
		cpa-unwind --folded < "$T/$x.cpa" > "$T/$x.folded"
		dump $x > "$T/$x.dump"
	done
	# the whole life of the usage workload through the store
	cpa-unwind < "$T/exited.cpa" | cpa-store --dir "$T/store"
}

teardown_file() {
	kill_bg
}

@test "mem: every capture ran, ended cleanly and lost nothing" {
	for x in $CAPTURES; do
		echo "$x: status $(cat "$T/$x.status")"; cat "$T/$x.err"
		[ "$(cat "$T/$x.status")" -eq 0 ]
		[[ "$(tail -n 1 "$T/$x.dump")" == "end "*" lost=0 "* ]]
	done
}

@test "mem virt: mmap, brk and mremap growth are the exact bytes under the calling function" {
	grep '^memory virtual;' "$T/virt.folded"
	[ "$(sum_under virt "memory virtual" map_region)" -eq $((8 * MiB)) ]
	[ "$(sum_under virt "memory virtual" grow_heap)" -eq $((1 * MiB)) ]
	# the mmap of 4 MiB and its growth to 8 MiB
	[ "$(sum_under virt "memory virtual" grow_mapping)" -eq $((8 * MiB)) ]
	# nothing but virt samples
	[ "$(count "$T/virt.folded" '^memory virtual;')" -eq "$(count "$T/virt.folded" .)" ]
}

@test "mem virt: --comm selects the process by its name" {
	grep '^memory virtual;' "$T/virtcomm.folded"
	[ "$(sum_under virtcomm "memory virtual" map_region)" -eq $((2 * MiB)) ]
	# the other workloads (named memory) are not in it
	[ "$(count "$T/virtcomm.folded" '^memory virtual;memory;')" -eq 0 ]
}

@test "mem phys: 16 MiB of touched 4 KiB pages, within 2%, under the touching function" {
	local got
	got=$(sum_under phys "memory physical" touch_pages)
	echo "touch_pages: $got bytes"
	[ "$got" -ge $((16 * MiB * 98 / 100)) ]
	[ "$got" -le $((16 * MiB * 102 / 100)) ]
	# every sample is a multiple of a page, and none is an estimate
	awk '$1 == "raw" && / kind=mem-phys /' "$T/phys.dump" > "$T/phys.raw"
	[ "$(wc -l < "$T/phys.raw")" -ge 4096 ]
	[ "$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^weight=/) { sub(/weight=/, "", $i); if ($i % 4096) bad++ } } END { print bad + 0 }' "$T/phys.raw")" -eq 0 ]
	[ "$(count "$T/phys.raw" 'flags=0x[0-9a-f]*[89a-f][0-9a-f] ')" -eq 0 ]
}

@test "mem phys: --mem-probability 10 estimates 32 MiB within 15%, marked as estimates" {
	local got n
	got=$(sum_under prob "memory physical" touch_pages)
	awk '$1 == "raw" && / kind=mem-phys /' "$T/prob.dump" > "$T/prob.raw"
	n=$(count "$T/prob.raw" .)
	echo "touch_pages: $got bytes from $n samples"
	[ "$got" -ge $((32 * MiB * 85 / 100)) ]
	[ "$got" -le $((32 * MiB * 115 / 100)) ]
	# about a tenth of the 8192 pages, each weighing ten
	[ "$n" -ge 500 ]
	[ "$n" -le 1200 ]
	[ "$(count "$T/prob.raw" ' weight=40960 ')" -eq "$n" ]
	# every sample has the estimate flag (0x80)
	[ "$(count "$T/prob.raw" 'flags=0x[0-9a-f]*[89a-f][0-9a-f] ')" -eq "$n" ]
}

@test "mem usage: what the leak path keeps stays, what the churn path frees goes" {
	local leak churn
	leak=$(net live leak_path)
	churn=$(net live churn_path)
	echo "leak_path $leak churn_path $churn"
	[ "$leak" -ge $((16 * MiB * 95 / 100)) ]
	[ "$leak" -le $((16 * MiB * 105 / 100)) ]
	[ "$churn" -lt $((8 * MiB * 5 / 100)) ]
	# the churn path did allocate its 8 MiB: the frees took it back
	[ "$(sum_under live "memory usage" churn_path)" -ge $((8 * MiB)) ]
}

@test "mem usage: after the process exits its usage returns to zero" {
	local leak total alloc
	leak=$(net exited leak_path)
	total=$(net exited main)
	alloc=$(sum_under exited "memory usage" main)
	echo "leak_path $leak all $total of $alloc allocated"
	[ "$alloc" -ge $((24 * MiB)) ]
	[ "$leak" -eq 0 ]
	[ "$total" -eq 0 ]
}

@test "mem usage: cpa-unwind gives each free its allocation's stack, and counts a free it does not know" {
	# the same capture with the allocations cut out: every free is unknown
	cpa-unwind --stats < "$T/exited.cpa" > "$T/exited.sym" 2> "$T/exited.stats"
	grep 'allocations' "$T/exited.stats"
	grep -q 'allocations    held=0 frees=[1-9][0-9]* evicted=0 unknown-frees=0' "$T/exited.stats"
	run cpa-unwind --max-allocs 100 --folded --stats < "$T/exited.cpa"
	[ "$status" -eq 0 ]
	[[ "$output" == *"evicted="[1-9]* ]]
	# evictions and unknown frees are lost records of reason alloc-table
	cpa-unwind --max-allocs 100 < "$T/exited.cpa" > "$T/evict.sym"
	"$CPA_BUILDDIR/tests/tools/cpa-dump" < "$T/evict.sym" > "$T/evict.dump"
	[ "$(count "$T/evict.dump" '^lost .*reason=alloc-table')" -gt 0 ]
}

@test "mem usage: allocations keep their stacks across dictionary resets" {
	# a reset after every few samples: the allocations held are interned
	# again, so every free still names its allocation's stack
	cpa-unwind --folded --max-dict 4K < "$T/exited.cpa" > "$T/reset.folded"
	sort "$T/exited.folded" > "$T/a.sorted"
	sort "$T/reset.folded" > "$T/b.sorted"
	cmp "$T/a.sorted" "$T/b.sorted"
	[ "$(count "$T/reset.folded" '^\\[freed\\];memory usage;memory;.*;leak_path;')" -ge 4096 ]
	# and in the stream, with its reset records, through the store
	cpa-unwind --max-dict 4K < "$T/exited.cpa" > "$T/reset.sym"
	"$CPA_BUILDDIR/tests/tools/cpa-dump" < "$T/reset.sym" > "$T/reset.dump"
	[ "$(count "$T/reset.dump" '^reset')" -gt 10 ]
	cpa-store --dir "$T/reset-store" < "$T/reset.sym"
	cpa-query --dir "$T/reset-store" --kind mem-usage --to "@$(( $(cat "$T/held.s") + 1 ))" > "$T/reset.query"
	cpa-query --dir "$T/store" --kind mem-usage --to "@$(( $(cat "$T/held.s") + 1 ))" > "$T/plain.query"
	cat "$T/reset.query"
	cmp "$T/reset.query" "$T/plain.query"
	[ "$(count "$T/reset.query" 'leak_path')" -eq 1 ]
}

# query_under FRAME ARGS...: cpa-query --kind mem-usage's bytes under FRAME
query_under() {
	local f=$1; shift
	cpa-query --dir "$T/store" --kind mem-usage "$@" > "$T/query.out"
	cat "$T/query.out"
	awk -v f=";$f;" '{ n = $NF; s = $0; sub(/ [0-9]+$/, "", s) }
		index(s ";", f) { t += n } END { printf "%.0f\n", t }' "$T/query.out"
}

@test "mem usage: through the store, cpa-query answers what was resident at --to, and nothing after the exit" {
	local held leak churn after
	held=$(( $(cat "$T/held.s") + 1 ))
	leak=$(query_under leak_path --to "@$held" | tail -n 1)
	churn=$(query_under churn_path --to "@$held" | tail -n 1)
	echo "at $held: leak_path $leak churn_path $churn"
	[ "$leak" -ge $((16 * MiB * 95 / 100)) ]
	[ "$leak" -le $((16 * MiB * 105 / 100)) ]
	[ "$churn" -lt $((8 * MiB * 5 / 100)) ]
	# at the end of the store, after the exit: nothing is held
	after=$(query_under main | tail -n 1)
	[ "$after" -eq 0 ]
	[ "$(count "$T/query.out" .)" -eq 0 ]
}
