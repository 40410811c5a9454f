#!/usr/bin/env bats
# cpa-capture --mem malloc: real uprobes on the C library's allocator
# against a workload with known totals from two call paths (leak_path
# keeps 8 MiB it allocated in 4 KiB blocks by malloc and calloc;
# churn_path allocates 8 MiB in 8 KiB blocks by malloc and
# posix_memalign, grows each by realloc and frees it; then the workload
# exits holding the leak). Both captures run at once: one probes the libc
# of --pid alone and stops while the leak is held, the other every process
# mapping that libc, filtered by --comm, and sees the exit.

load capture_helper

MIB=1048576
# leak_path also allocates the array of its kept pointers (8 bytes each)
LEAK_TRUTH=$((8 * MIB + 8 * MIB / 4096 * 8))
# churn_path: 8 KiB blocks grown to 16 KiB: 3 x its 8 MiB
CHURN_TRUTH=$((24 * MIB))

cap_stop() {
	kill -INT "$(cat "$T/$1.cpid")" 2>/dev/null || true
	wait "$(cat "$T/$1.cpid")"
}

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	# a name no other test's process has, for --comm
	local comm=heap$(( RANDOM % 100000 ))
	cp "$WL/heap" "$T/$comm"
	start_bg wl "$T/$comm" 8 8
	local p
	p=$(pidof_wl wl)
	cap bypid --mem malloc --mem-sample-bytes 4K --no-oncpu --pid "$p" -v
	cap bycomm --mem malloc --mem-sample-bytes 4K --no-oncpu --comm "$comm" -v
	wait_for 20 cap_attached bypid
	wait_for 20 cap_attached bycomm
	kill -USR1 "$p"
	wait_for 60 grep -q '^done' "$T/wl.out"
	# every call has returned and sent its sample to the ring, which a
	# capture drains as it stops; and the exit has run once wait returns
	cap_stop bypid
	kill -USR1 "$p"
	wait "$(cat "$T/wl.bgpid")"
	cap_stop bycomm
	for c in bypid bycomm; do
		cpa-unwind <"$T/$c.cpa" >"$T/$c.sym" 2>"$T/$c.unwind.err"
	done
}

teardown_file() {
	# a set-up that failed half-way leaves the workload waiting for its
	# signal, and a capture running
	kill_bg
	local f
	for f in "$T"/*.cpid; do
		[ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null
	done
	return 0
}

setup() {
	T=$BATS_FILE_TMPDIR
}

# heap_counts NAME: "ALLOCS FREES NET" of a capture's heap-inuse samples
heap_counts() {
	dump "$1" | awk '$1 == "raw" && / kind=heap-inuse / {
		w = 0; f = 0
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^weight=/) w = substr($i, 8)
			if ($i ~ /^flags=/) f = strtonum(substr($i, 7))
		}
		if (and(f, 0x40)) { n_f++; net -= w } else { n_a++; net += w }
	} END { printf "%d %d %d\n", n_a, n_f, net }'
}


# per_path CAPTURE KIND: "leak BYTES churn BYTES" of that kind
per_path() {
	cpa-render --format folded --kind "$2" <"$T/$1.sym" |
		awk '/;leak_path( |;)/ { l += $NF } /;churn_path( |;)/ { c += $NF }
			END { printf "%d %d\n", l, c }'
}

# within GOT WANT PCT: |GOT - WANT| <= PCT% of WANT
within() {
	local d=$(($1 - $2))
	[ "${d#-}" -le $(($2 * $3 / 100)) ] || {
		echo "$1 is not within $3% of $2" >&2
		return 1
	}
}

@test "heap: --pid probes that process's libc; allocated bytes per call path within 10% of the truth" {
	read -r leak churn < <(per_path bypid heap-alloc)
	within "$leak" "$LEAK_TRUTH" 10
	within "$churn" "$CHURN_TRUTH" 10
	grep -q "probing /proc/$(pidof_wl wl)/root/.*libc.* for one process" "$T/bypid.err"
}

@test "heap: --comm probes the libc file for every process, the filters choose; allocated bytes within 10%" {
	read -r leak churn < <(per_path bycomm heap-alloc)
	within "$leak" "$LEAK_TRUTH" 10
	within "$churn" "$CHURN_TRUTH" 10
	grep -q "probing /proc/[0-9]*/root/.*libc.* for every process" "$T/bycomm.err"
	# no process but the workload was sampled
	dump bycomm | awk '$1 == "raw"' >"$T/bycomm.raw"
	[ -s "$T/bycomm.raw" ]
	run grep -vc " pid=$(pidof_wl wl) " "$T/bycomm.raw"
	[ "$output" -eq 0 ]
}

@test "heap: sampled weights are marked estimates; frees carry the allocation id and no stack" {
	dump bypid | awk '$1 == "raw"' >"$T/bypid.raw"
	# every heap sample is an estimate (0x80)
	run awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^flags=/) {
			f = strtonum(substr($i, 7)); if (and(f, 0x80) == 0) bad++ } }
		END { print bad + 0 }' "$T/bypid.raw"
	[ "$output" -eq 0 ]
	# frees: heap-inuse with flags free|estimate|alloc id, no stack
	frees=$(grep -c 'kind=heap-inuse .*flags=0x1c0 .* nk=0 nu=0 nregs=0 stack=0 ' "$T/bypid.raw" || true)
	[ "$frees" -gt 100 ]
	allocs=$(grep -c 'kind=heap-alloc ' "$T/bypid.raw")
	[ "$allocs" -gt 1000 ]
}

@test "heap: in use is what the workload never freed: leak_path within 15%, churn_path under 5% of what it allocated" {
	read -r leak churn < <(per_path bypid heap-inuse)
	within "$leak" "$((8 * MIB))" 15
	[ "$churn" -lt $((CHURN_TRUTH * 5 / 100)) ]
}

@test "heap: when the process exits, every block it still held is freed: in use falls to zero" {
	read -r a f net < <(heap_counts bycomm)
	[ "$a" -gt 1000 ]
	[ "$f" -eq "$a" ]
	[ "$net" -eq 0 ]
	# while it ran, the leak was held
	read -r a f net < <(heap_counts bypid)
	[ "$f" -lt "$a" ]
	within "$net" "$((8 * MIB))" 15
}

@test "heap: invalid --mem-sample-bytes values, and the option without --mem malloc, exit 2 naming the value" {
	run cpa-capture --mem malloc --mem-sample-bytes 0
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --mem-sample-bytes '0'"* ]]
	run cpa-capture --mem malloc --mem-sample-bytes 12xyz
	[ "$status" -eq 2 ]
	[[ "$output" == *"--mem-sample-bytes"*"12xyz"* ]]
	run cpa-capture --mem-sample-bytes 1M
	[ "$status" -eq 2 ]
	[[ "$output" == *"--mem-sample-bytes samples heap allocations: it needs --mem malloc"* ]]
}
