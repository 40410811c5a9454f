#!/usr/bin/env bats
# Memory kinds through store, query and render, on streams of known
# samples: allocations and frees (flag free) net to what a stack still
# held at --to, or with --growth to what grew in the range; sampled
# weights stay marked as estimates; bytes read as KiB/MiB/GiB.

load helper
load store_helper

MKSTREAM="$CPA_BUILDDIR/tests/tools/mkstream"

# ns TIME_S: the epoch nanoseconds of T0 + TIME_S
ns() { echo "$(((T0 + $1) * 1000000000))"; }

setup_file() {
	export MS=$BATS_FILE_TMPDIR/s
	# app (pid 10) leaks through main;leak, gives back what main;churn
	# took, and frees 500 bytes main;gone allocated before the store;
	# mem-phys has no frees and simply sums
	{
		echo "$(ns 0) mem-usage 10 10 0 app app 4096 main;leak"
		echo "$(ns 0) mem-usage 10 10 0 app app 8192 main;churn"
		echo "$(ns 0) mem-phys 10 10 0 app app 700 main;fault"
		echo "$(ns 10) mem-usage+free 10 10 0 app app 8192 main;churn"
		echo "$(ns 20) mem-usage 10 10 0 app app 1000 main;leak"
		echo "$(ns 20) mem-usage 10 10 0 app app 2000 main;late"
		echo "$(ns 20) mem-phys 10 10 0 app app 300 main;fault"
		echo "$(ns 30) mem-usage+free 10 10 0 app app 1000 main;leak"
		echo "$(ns 40) mem-usage+free 10 10 0 app app 500 main;gone"
	} | "$MKSTREAM" | cpa-store --dir "$MS" --segment 20s
}

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "mem-query: the default answer is what each stack still held at --to" {
	run cpa-query --dir "$MS" --kind mem-usage
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "memory usage;app;main;leak 4096" ]
	[ "${lines[1]}" = "memory usage;app;main;late 2000" ]
	# before the churn was freed, it was held
	run cpa-query --dir "$MS" --kind mem-usage --to "@$((T0 + 5))"
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "memory usage;app;main;leak 4096" ]
	[ "${lines[1]}" = "memory usage;app;main;churn 8192" ]
	# at T0+25: what was allocated at T0, in another segment, still counts
	run cpa-query --dir "$MS" --kind mem-usage --from "@$((T0 + 15))" --to "@$((T0 + 25))"
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "memory usage;app;main;leak 5096" ]
	[ "${lines[1]}" = "memory usage;app;main;late 2000" ]
}

@test "mem-query: --growth is allocations minus frees within the range; shrunk stacks are counted with --verbose" {
	run cpa-query --dir "$MS" --kind mem-usage --growth --from "@$((T0 + 15))" --to "@$((T0 + 25))"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "memory usage;app;main;leak 1000" ]
	[ "${lines[1]}" = "memory usage;app;main;late 2000" ]
	# in [T0+5, T0+35) churn shrank by 8192 and leak grew by 1000 - 1000:
	# nothing grew, two stacks are left out
	run --separate-stderr cpa-query --dir "$MS" --kind mem-usage --growth -v \
		--from "@$((T0 + 5))" --to "@$((T0 + 35))"
	[ "$status" -eq 0 ]
	[ "$output" = "memory usage;app;main;late 2000" ]
	[[ "$stderr" == *"stacks left out, their frees reaching their allocations: 2"* ]]
}

@test "mem-query: kinds without frees sum the range alone, beside a netting kind" {
	run cpa-query --dir "$MS" --from "@$((T0 + 15))" --to "@$((T0 + 25))"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = "memory usage;app;main;leak 5096" ]
	[ "${lines[1]}" = "memory usage;app;main;late 2000" ]
	[ "${lines[2]}" = "memory physical;app;main;fault 300" ]
	run cpa-query --dir "$MS" --kind mem-phys
	[ "$output" = "memory physical;app;main;fault 1000" ]
	# --top nets by function across segments too
	run cpa-query --dir "$MS" --kind mem-usage --top 2
	[ "$status" -eq 0 ]
	[[ "${lines[1]}" =~ ^\ +4096\ +67\.19%\ +4096\ +67\.19%\ +leak$ ]]
	[[ "${lines[2]}" =~ ^\ +2000\ +32\.81%\ +2000\ +32\.81%\ +late$ ]]
}

@test "mem-query: the stream keeps the free flag, and cpa-render nets it as cpa-query does" {
	cpa-query --dir "$MS" --kind mem-usage --format stream >"$T/m.stream"
	"$DUMP" <"$T/m.stream" >"$T/dump"
	[ "$(grep -c '^sample .* flags=0x40$' "$T/dump")" -eq 3 ]
	[ "$(grep -c '^sample ' "$T/dump")" -eq 7 ]
	cpa-render --format folded <"$T/m.stream" >"$T/got"
	printf '%s\n' 'memory usage;app;main;late 2000' \
		'memory usage;app;main;leak 4096' >"$T/want"
	diff -u "$T/want" "$T/got"
	run cpa-render --format text <"$T/m.stream"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Total: 5.95 KiB over "* ]]
}

@test "mem-query: estimated weights say so in folded output and render titles" {
	printf '%s\n' "$(ns 0) heap-inuse+estimate 7 7 0 svc svc 1048576 main;big" \
		"$(ns 0) heap-inuse+estimate 7 7 0 svc svc 524288 main;small" \
		"$(ns 1) heap-inuse+estimate+free 7 7 0 svc svc 524288 main;small" |
		"$MKSTREAM" | cpa-store --dir "$T/s"
	run cpa-query --dir "$T/s"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "# estimate" ]
	[ "${lines[1]}" = "heap in use;svc;main;big 1048576" ]
	# folded text with the mark, and the stream: both titled as estimates
	cpa-query --dir "$T/s" | cpa-render >"$T/f.svg"
	grep -q '<text id="title" [^>]*>Flame Graph (estimated)</text>' "$T/f.svg"
	grep -q '<title>big (1.00 MiB, 100.00%)</title>' "$T/f.svg"
	cpa-query --dir "$T/s" --format stream | cpa-render >"$T/s.svg"
	grep -q '<text id="title" [^>]*>Flame Graph (estimated)</text>' "$T/s.svg"
	cpa-query --dir "$T/s" --format stream | cpa-render --format folded >"$T/f"
	[ "$(head -1 "$T/f")" = "# estimate" ]
	# an exact profile says nothing of the kind
	cpa-query --dir "$MS" --kind mem-usage | cpa-render >"$T/m.svg"
	grep -q '<text id="title" [^>]*>Flame Graph</text>' "$T/m.svg"
	# the memory palette: flamegraph.pl's mem hues, no red at all
	grep -q '<title>leak (4.00 KiB, 67.19%)</title><rect [^>]* fill="rgb(0,' "$T/m.svg"
}

@test "mem-query: bytes read as bytes, KiB, MiB and GiB" {
	local v want
	for v in 1023:'1,023 bytes' 1536:'1.50 KiB' 3145728:'3.00 MiB' 5368709120:'5.00 GiB'; do
		want=${v#*:}
		echo "main;leaf ${v%%:*}" | cpa-render --unit bytes >"$T/b.svg"
		grep -qF "<title>leaf ($want, 100.00%)</title>" "$T/b.svg"
	done
}

@test "mem-query: pprof of heap-inuse is in bytes and go tool pprof reads what is held" {
	command -v go >/dev/null || skip_missing "no go"
	printf '%s\n' "$(ns 0) heap-inuse 7 7 0 svc svc 1048576 main;big" \
		"$(ns 0) heap-inuse 7 7 0 svc svc 4096 main;small" \
		"$(ns 1) heap-inuse+free 7 7 0 svc svc 4096 main;small" |
		"$MKSTREAM" | cpa-store --dir "$T/s"
	cpa-query --dir "$T/s" --format pprof -o "$T/h.pb.gz"
	go tool pprof -raw "$T/h.pb.gz" >"$T/raw" 2>&1
	grep -qx 'inuse_space/bytes' "$T/raw"
	total=$(awk '/^Samples:/ { on = 1; getline; next }
		/^Locations/ { on = 0 } on && /:/ { s += $1 } END { print s + 0 }' "$T/raw")
	[ "$total" -eq 1048576 ]
}

@test "mem-query: every memory kind is a --kind of cpa-query and cpa-render; mem-rss is the old name of mem-usage" {
	for k in mem-virt mem-phys mem-usage heap-alloc heap-inuse mem-rss; do
		run cpa-query --dir "$MS" --kind "$k"
		[ "$status" -eq 0 ]
	done
	run cpa-query --dir "$MS" --kind mem-rss
	[ "${lines[0]}" = "memory usage;app;main;leak 4096" ]
	run cpa-query --dir "$MS" --kind mem-bogus
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --kind 'mem-bogus'"* ]]
}

@test "mem-query: cpa show routes --growth to cpa-query; held and grown graphs as cpa-query draws them" {
	printf 'dir = %s\n' "$MS" >"$T/cpa.conf"
	CPA_CONFIG=$T/cpa.conf cpa show --kind mem-usage --format folded -o "$T/held"
	printf '%s\n' 'memory usage;app;main;late 2000' \
		'memory usage;app;main;leak 4096' >"$T/want"
	diff -u "$T/want" "$T/held"
	CPA_CONFIG=$T/cpa.conf cpa show --kind mem-usage --growth --from "@$((T0 + 15))" \
		--to "@$((T0 + 25))" --format folded -o "$T/grew"
	printf '%s\n' 'memory usage;app;main;late 2000' \
		'memory usage;app;main;leak 1000' >"$T/want"
	diff -u "$T/want" "$T/grew"
}
