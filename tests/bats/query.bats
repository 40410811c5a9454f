#!/usr/bin/env bats
# cpa-query's outputs and time forms on a store of generated samples.
load helper
load store_helper

setup_file() {
	# Two stretches of history with a gap: 10:00:00-10:02:00 and
	# 10:05:00-10:06:00 UTC, in 1-minute segments.
	export QS=$BATS_FILE_TMPDIR/s QT=$BATS_FILE_TMPDIR/truth
	"$GEN" --duration 120 --rate 100 --truth "$QT.a" | cpa-store --dir "$QS" --segment 1m
	"$GEN" --start $((T0 + 300)) --seed 2 --duration 60 --rate 100 --truth "$QT.b" |
		cpa-store --dir "$QS" --segment 1m
	cat "$QT.a" "$QT.b" >"$QT"
}

setup() {
	T=$BATS_TEST_TMPDIR
}

@test "query: --list shows segments, the available range and the gap" {
	run cpa-query --dir "$QS" --list
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 6 ]	# header, 3 segments, range, gap
	[[ "${lines[1]}" == "$QS/20251130T100000Z "* ]]
	[[ "${lines[1]}" == *" 60 "* ]]	# windows
	local first last gap_a gap_b
	first=$(TZ=${TZ:-} date -d @$T0 '+%Y-%m-%d %H:%M:%S')
	last=$(date -d @$((T0 + 360)) '+%Y-%m-%d %H:%M:%S')
	gap_a=$(date -d @$((T0 + 120)) '+%Y-%m-%d %H:%M:%S')
	gap_b=$(date -d @$((T0 + 300)) '+%Y-%m-%d %H:%M:%S')
	[[ "${lines[4]}" == "range $first.000 .. $last.000 (6m0s, "* ]]
	[ "${lines[5]}" = "gap $gap_a.000 .. $gap_b.000 (3m0s)" ]
}

hms() { date -d "@$1" '+%Y-%m-%d %H:%M:%S'; }

@test "query: --list marks a 30 s stall in which every sample was lost" {
	# 60 s of samples, of which seconds 20 to 49 were all lost upstream
	"$GEN" --duration 60 --rate 100 --lost-from 20 --lost-for 30 --truth "$T/truth" |
		cpa-store --dir "$T/s"
	run cpa-query --dir "$T/s" --list
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 4 ]	# header, segment, range, lost
	[[ "${lines[2]}" == "range $(hms $T0).000 .. $(hms $((T0 + 60))).000 (1m0s, "* ]]
	[ "${lines[3]}" = "lost $(hms $((T0 + 20))).000 .. $(hms $((T0 + 50))).000 (30s, 3000 samples lost)" ]
	# nothing of the stall was stored; the seconds around it were
	got=$(awk '$1 >= T0 + 20 && $1 < T0 + 50' T0=$T0 "$T/truth" | wc -l)
	[ "$got" -eq 0 ]
	[ -z "$(cpa-query --dir "$T/s" --from @$((T0 + 20)) --to @$((T0 + 50)))" ]
	expect "$T/truth" 0 99999999999 1 comm >"$T/want"
	cpa-query --dir "$T/s" >"$T/got"
	same_lines "$T/got" "$T/want"
}

@test "query: --list shows lost windows of a segment that stored no sample, after a restart too" {
	"$GEN" --duration 30 --rate 10 --lost-from 0 --lost-for 30 | cpa-store --dir "$T/s"
	run cpa-query --dir "$T/s" --list
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "range empty" ]
	[ "${lines[2]}" = "lost $(hms $T0).000 .. $(hms $((T0 + 30))).000 (30s, 300 samples lost)" ]
	# the next writer keeps that segment, and the runs of both are joined
	"$GEN" --start $((T0 + 30)) --duration 10 --rate 10 --lost-from 0 --lost-for 5 | cpa-store --dir "$T/s"
	run cpa-query --dir "$T/s" --list
	echo "$output"
	[ "${lines[-1]}" = "lost $(hms $T0).000 .. $(hms $((T0 + 35))).000 (35s, 350 samples lost)" ]
	# a damaged lost value is named and skipped, the rest still listed
	local meta
	meta=$(ls "$T"/s/*Z/meta | sed -n 1p)
	sed -i 's/^lost=.*/lost=5-3:1/' "$meta"
	run cpa-query --dir "$T/s" --list
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qxF "cpa-query: warning: $meta: lost run 1: expected FROM-TO:COUNT with FROM < TO; its lost windows are not listed" <<<"$output"
}

@test "query: times as HH:MM:SS, dates, ISO 8601, epoch and --last select the same windows" {
	local from=$((T0 + 30)) to=$((T0 + 45))
	expect "$QT" $from $to 1 comm >"$T/want"
	cpa-query --dir "$QS" --from "@$from" --to "@$to" >"$T/a"
	same_lines "$T/a" "$T/want"
	cpa-query --dir "$QS" --from 2025-11-30T10:00:30Z --to 2025-11-30T10:00:45Z >"$T/b"
	same_lines "$T/b" "$T/want"
	cpa-query --dir "$QS" --from "$(date -d @$from '+%Y-%m-%d %H:%M:%S')" \
		--to "$(date -d @$to '+%Y-%m-%d %H:%M:%S')" >"$T/c"
	same_lines "$T/c" "$T/want"
	cpa-query --dir "$QS" --from $from --to $to >"$T/d"
	same_lines "$T/d" "$T/want"
	# HH:MM:SS means today: a store written now answers to it (not in
	# the first minute after midnight, when 15 s ago was yesterday)
	local now; now=$(date +%s)
	[ $((now - $(date -d 'today 00:00' +%s))) -gt 60 ] || return 0
	"$GEN" --start $((now - 20)) --duration 10 --rate 50 --truth "$T/truth" | cpa-store --dir "$T/s"
	cpa-query --dir "$T/s" --from "$(date -d @$((now - 15)) +%H:%M:%S)" \
		--to "$(date -d @$((now - 12)) +%H:%M:%S)" >"$T/e"
	expect "$T/truth" $((now - 15)) $((now - 12)) 1 comm >"$T/want2"
	[ -s "$T/want2" ]
	same_lines "$T/e" "$T/want2"
	# relative: the last minute holds all of it; -1h..-30m none
	cpa-query --dir "$T/s" --last 1m >"$T/f"
	expect "$T/truth" 0 99999999999 1 comm >"$T/want3"
	same_lines "$T/f" "$T/want3"
	cpa-query --dir "$T/s" --from -1h --to -30m >"$T/g"
	[ ! -s "$T/g" ]
	cpa-query --dir "$T/s" --from -1m --to now >"$T/h"
	same_lines "$T/h" "$T/want3"
}

@test "query: several stores are read as one" {
	"$GEN" --start $((T0 + 200)) --seed 3 --duration 30 --rate 50 --truth "$T/truth" |
		cpa-store --dir "$T/s2"
	cat "$QT" "$T/truth" >"$T/all"
	cpa-query --dir "$QS" --dir "$T/s2" --labels comm,pid >"$T/got"
	expect "$T/all" 0 99999999999 1 comm,pid >"$T/want"
	same_lines "$T/got" "$T/want"
}

@test "query: --format stream keeps window times and labels, and reads back the same" {
	cpa-query --dir "$QS" --from "@$((T0 + 10))" --to "@$((T0 + 13))" --format stream >"$T/out"
	"$DUMP" <"$T/out" >"$T/dump"
	# a clean end, the capture's meta kept, and samples only at the
	# three window starts
	grep -q '^end samples=' "$T/dump"
	grep -qx 'meta frequency=100' "$T/dump"
	grep -qx 'meta source=cpa-query' "$T/dump"
	got=$(grep '^sample' "$T/dump" | grep -o 'time=[0-9]*' | sort -u | wc -l)
	[ "$got" -eq 3 ]
	grep '^sample' "$T/dump" | grep "time=$((T0 + 10))000000000 " >/dev/null
	# the stream stores again and queries to the same folded lines
	cpa-store --dir "$T/s" <"$T/out"
	for labels in comm,pid,tid,cpu thread,container,env; do
		cpa-query --dir "$T/s" --labels "$labels" >"$T/got"
		expect "$QT" $((T0 + 10)) $((T0 + 13)) 1 "$labels" >"$T/want"
		same_lines "$T/got" "$T/want"
	done
}

@test "query: --format stream --split-every sums each stretch per kept labels and stack; --stacks side per leaf side" {
	set -o pipefail
	cpa-query --dir "$QS" --from "@$T0" --to "@$((T0 + 120))" --format stream \
		--split-every 30s --labels comm,pid >"$T/sums"
	"$DUMP" <"$T/sums" >"$T/dump"
	grep -q '^end samples=' "$T/dump"
	grep '^sample' "$T/dump" >"$T/samples"
	grep -o 'time=[0-9]*' "$T/samples" | sort -u >"$T/times"
	run cat "$T/times"
	[ "${lines[*]}" = "time=${T0}000000000 time=$((T0 + 30))000000000 time=$((T0 + 60))000000000 time=$((T0 + 90))000000000" ]
	# tid and cpu dropped: one sample per stretch, comm, pid and stack,
	# as many as the folded lines of that stretch
	cpa-store --dir "$T/s" <"$T/sums"
	for s in 0 30 60 90; do
		cpa-query --dir "$T/s" --from "@$((T0 + s))" --to "@$((T0 + s + 1))" \
			--labels comm,pid,tid,cpu | sed 's/;\[tid 0\];\[cpu 0\];/;/' >"$T/got"
		expect "$QT" $((T0 + s)) $((T0 + s + 30)) 1 comm,pid >"$T/want"
		same_lines "$T/got" "$T/want"
	done
	# side: [user] or [kernel]_[k] under the kind's marker, same total
	cpa-query --dir "$QS" --from "@$T0" --to "@$((T0 + 120))" --format stream \
		--split-every 1m --labels none --stacks side | cpa-store --dir "$T/side"
	cpa-query --dir "$T/side" --labels none >"$T/side.folded"
	run grep -v -E '(^|;)(\[user\]|\[kernel\]_\[k\]) [0-9]+$' "$T/side.folded"
	[ "$status" -eq 1 ]
	want=$(expect "$QT" "$T0" $((T0 + 120)) 1 none | awk '{ n += $NF } END { print n }')
	got=$(awk '{ n += $NF } END { print n }' "$T/side.folded")
	[ "$got" = "$want" ]
	run cpa-query --dir "$QS" --format stream --stacks side
	[ "$status" -eq 2 ]
	[[ "$output" == *"--stacks needs --format stream and --split-every"* ]]
}

# pruned N: folded lines (labels comm) cut as --prune N cuts them: a
# frame under 1/N of the total of the lines goes, with all below it,
# into one [other] under its caller; the root label is never cut.
pruned() {
	awk -v N="$1" '
		{ n = $NF; sub(/ [0-9]+$/, ""); line[NR] = $0; w[NR] = n; T += n
		  k = split($0, f, ";"); p = f[1]
		  for (i = 2; i <= k; i++) { p = p ";" f[i]; tot[p] += n } }
		END { for (r = 1; r <= NR; r++) {
			k = split(line[r], f, ";"); p = f[1]; out = ""
			for (i = 2; i <= k; i++) {
				q = p ";" f[i]
				if (tot[q] * N < T) { out = p ";[other]"; break }
				p = q
			}
			sum[out == "" ? p : out] += w[r]
		  }
		  for (o in sum) print o, sum[o] }'
}

@test "query: --prune N sums the frames under 1/N of their kind into [other] under their caller; --callee cuts from the leaf; --stacks kernel keeps kernel frames" {
	set -o pipefail
	# app: hot paths and a tail of cold ones over three seconds; tiny is
	# narrow as a whole; the off-CPU seconds are another kind's total
	{
		for s in 0 1 2; do
			t=$(( (T0 + s) * 1000000000 ))
			echo "$t oncpu 1 1 0 app app 20 main;hot;leaf_a"
			echo "$t oncpu 1 1 0 app app 10 main;hot;leaf_b"
			echo "$t oncpu 1 1 0 app app 1 main;hot;leaf_c"
			for c in 1 2 3 4 5 6; do
				echo "$t oncpu 1 1 1 app app 1 main;cold_$c;x"
			done
			echo "$t oncpu 2 2 1 tiny tiny 1 main;spin"
			echo "$t offcpu-blocked 1 1 0 app app 1000000000 main;sleep"
		done
	} | "$CPA_BUILDDIR/tests/tools/mkstream" | cpa-store --dir "$T/p"
	cpa-query --dir "$T/p" --labels comm --kind oncpu >"$T/whole"
	cpa-query --dir "$T/p" --format stream --split-every 3s --labels comm \
		--prune 20 >"$T/sums"
	cpa-render --format folded --kind oncpu <"$T/sums" >"$T/got"
	pruned 20 <"$T/whole" >"$T/want"
	same_lines "$T/got" "$T/want"
	# as the tree says: of 114 samples, 5.7 is the least kept
	cat >"$T/expected" <<-EOF
		app;main;hot;leaf_a 60
		app;main;hot;leaf_b 30
		app;main;hot;[other] 3
		app;main;[other] 18
		tiny;[other] 3
	EOF
	same_lines "$T/got" "$T/expected"
	# the callee view's tree, from the leaf across processes: the six
	# cold callers of x are one wide x, cut above it
	cpa-query --dir "$T/p" --format stream --split-every 3s --labels comm \
		--prune 20 --callee | cpa-render --format folded --kind oncpu >"$T/callee"
	cat >"$T/expected" <<-EOF
		app;main;hot;leaf_a 60
		app;main;hot;leaf_b 30
		app;[other];x 18
		app;[other] 3
		tiny;[other] 3
	EOF
	same_lines "$T/callee" "$T/expected"
	# the off-CPU kind is cut against its own total: kept whole
	cpa-render --format folded --kind offcpu-blocked <"$T/sums" >"$T/off"
	[ "$(cat "$T/off")" = "off-CPU blocked;app;main;sleep 3000000000" ]
	run cpa-query --dir "$QS" --format stream --prune 40
	[ "$status" -eq 2 ]
	[[ "$output" == *"--prune needs --format stream and --split-every"* ]]
	# kernel frames alone, [user] for stacks with none; then cut
	cpa-query --dir "$QS" --from "@$T0" --to "@$((T0 + 120))" --format stream \
		--split-every 2m --labels comm --stacks kernel |
		cpa-render --format folded --kind oncpu >"$T/kernel"
	run grep -v -E '^proc[0-9]+;(\[user\]|([a-z_0-9]+_\[k\];)*[a-z_0-9]+_\[k\]) [0-9]+$' "$T/kernel"
	[ "$status" -eq 1 ]
	grep -q '_\[k\] [0-9]*$' "$T/kernel"
	grep -q ';\[user\] [0-9]*$' "$T/kernel"
	want=$(cpa-query --dir "$QS" --from "@$T0" --to "@$((T0 + 120))" --kind oncpu |
		awk '{ n += $NF } END { print n }')
	[ "$(awk '{ n += $NF } END { print n }' "$T/kernel")" = "$want" ]
	run cpa-query --dir "$QS" --format stream --split-every 1m --callee
	[ "$status" -eq 2 ]
	[[ "$output" == *"--callee needs --prune"* ]]
	run cpa-query --dir "$QS" --format stream --split-every 1m --prune 0
	[ "$status" -eq 2 ]
	[[ "$output" == *"--prune"* ]]
}

@test "query: stream sums added a window at a time are byte for byte those added entry by entry" {
	set -o pipefail
	# the gap, three segments, groups that cross segments; held kinds
	# come through scan_held entry by entry in both
	local args
	for args in "--split-every 30s --labels comm,pid" \
		"--split-every 50s --labels none --stacks side" \
		"--split-every 7m --labels comm --prune 20" \
		"--split-every 7m --labels comm,cpu --prune 20 --callee" \
		"--split-every 1m --labels pid --stacks kernel --prune 8"; do
		# shellcheck disable=SC2086
		cpa-query --dir "$QS" --format stream $args >"$T/batched"
		# shellcheck disable=SC2086
		CPA_QUERY_ENTRYWISE=1 cpa-query --dir "$QS" --format stream \
			$args >"$T/entrywise"
		"$DUMP" <"$T/batched" >"$T/batched.dump"
		grep -q '^end samples=[1-9]' "$T/batched.dump"
		cmp "$T/batched" "$T/entrywise"
	done
}

@test "query: --prune's pairs found by id are byte for byte the hashed ones, also when their cells are given up midway" {
	set -o pipefail
	local args max
	for args in "--split-every 7m --labels comm --prune 20" \
		"--split-every 1h --labels comm,pid,cpu --prune 20 --callee"; do
		# shellcheck disable=SC2086
		CPA_QUERY_ENTRYWISE=1 cpa-query --dir "$QS" --format stream \
			$args >"$T/hashed"
		"$DUMP" <"$T/hashed" >"$T/hashed.dump"
		grep -q '^end samples=[1-9]' "$T/hashed.dump"
		# all cells kept, none, and given up after some pairs
		for max in "" 0 10 100; do
			# shellcheck disable=SC2086
			CPA_QUERY_CELLS_MAX=$max cpa-query --dir "$QS" \
				--format stream $args >"$T/cells"
			cmp "$T/cells" "$T/hashed"
		done
	done
}

# summed ERR: "BLOCKS SUMMED" of cpa-query -v's range line in ERR
summed() {
	sed -n 's/^cpa-query: range: [0-9]* segments, \([0-9]*\) blocks, .* entries, \([0-9]*\) blocks by their sums$/\1 \2/p' "$1"
}

@test "query: a trend's totals come from the segments' sums, byte for byte what decoding every entry gives" {
	set -o pipefail
	local args b s got
	for args in "--split-every 50s --labels none --stacks side" \
		"--split-every 7s --labels none --stacks side --from @$((T0 + 13)) --to @$((T0 + 333))"; do
		# shellcheck disable=SC2086
		cpa-query -v --dir "$QS" --format stream $args >"$T/sums" 2>"$T/sums.err"
		# shellcheck disable=SC2086
		CPA_QUERY_NO_SUMS=1 cpa-query -v --dir "$QS" --format stream $args \
			>"$T/decoded" 2>"$T/decoded.err"
		"$DUMP" <"$T/sums" >"$T/dump"
		grep -q '^end samples=[1-9]' "$T/dump"
		cmp "$T/sums" "$T/decoded"
		# every block was read by its sums, none on the slow path
		read -r b s < <(summed "$T/sums.err")
		[ "$b" -gt 0 ]
		[ "$s" -eq "$b" ]
		[ "$(summed "$T/decoded.err")" = "$b 0" ]
	done
	# the sums hold both kinds and both sides
	grep -q 'kind=offcpu-blocked' "$T/dump"
	grep -q '\[kernel\]_\[k\]' "$T/dump"
	# a label kept or a filter needs the entries
	cpa-query -v --dir "$QS" --format stream --split-every 50s --labels none \
		--stacks side --comm proc3 >/dev/null 2>"$T/f.err"
	got=$(summed "$T/f.err" | cut -d' ' -f2)
	[ "$got" -eq 0 ]
	cpa-query -v --dir "$QS" --format stream --split-every 50s --labels comm \
		--stacks side >/dev/null 2>"$T/l.err"
	got=$(summed "$T/l.err" | cut -d' ' -f2)
	[ "$got" -eq 0 ]
}

@test "query: a trend's totals from the sums keep kinds that net (older windows too) and sample flags apart" {
	set -o pipefail
	local i t args got
	for i in $(seq 0 59); do
		t=$((T0 + i))000000000
		echo "$t mem-usage 7 7 0 app app 4096 main;alloc;mmap_[k]"
		echo "$t mem-usage+free 7 7 0 app app 1024 main;alloc;mmap_[k]"
		echo "$t oncpu+estimate 8 8 1 db db 3 main;work"
		echo "$t oncpu 8 8 1 db db 2 main;read_[k]"
	done | "$CPA_BUILDDIR/tests/tools/mkstream" | cpa-store --dir "$T/mem" --segment 1m
	for args in "--from @$((T0 + 30)) --split-every 10s" "--split-every 1m"; do
		# shellcheck disable=SC2086
		cpa-query -v --dir "$T/mem" --format stream --labels none \
			--stacks side $args >"$T/sums" 2>"$T/sums.err"
		# shellcheck disable=SC2086
		CPA_QUERY_NO_SUMS=1 cpa-query --dir "$T/mem" --format stream \
			--labels none --stacks side $args >"$T/decoded"
		cmp "$T/sums" "$T/decoded"
		got=$(summed "$T/sums.err" | cut -d' ' -f2)
		[ "$got" -gt 0 ]
	done
	# a minute's allocations, its frees and its estimated samples apart
	"$DUMP" <"$T/sums" >"$T/dump"
	grep -q 'kind=mem-usage weight=245760 .* env=0$' "$T/dump"
	grep -q 'kind=mem-usage weight=61440 .* flags=0x40$' "$T/dump"
	grep -q 'kind=oncpu weight=180 .* flags=0x80$' "$T/dump"
}

@test "query: segments without sums (format 1.2) or with damaged ones are decoded, to the same trend" {
	set -o pipefail
	local args="--format stream --split-every 50s --labels none --stacks side"
	# shellcheck disable=SC2086
	CPA_QUERY_NO_SUMS=1 cpa-query --dir "$QS" $args >"$T/want"
	cp -r "$QS" "$T/s"
	ls -d "$T"/s/*/ >"$T/segs"
	# the first segment as a 1.2 writer left it: no sums file
	old=$(sed -n 1p "$T/segs")
	rm "$old/sums"
	sed -i 's/^format=1\.3$/format=1.2/' "$old/meta"
	# the second's sums damaged inside a block, the third's cut short
	bad=$(sed -n 2p "$T/segs")
	printf 'XXXX' | dd of="$bad/sums" bs=1 seek=100 conv=notrunc status=none
	short=$(sed -n 3p "$T/segs")
	truncate -s 500 "$short/sums"
	# shellcheck disable=SC2086
	cpa-query -v --dir "$T/s" $args >"$T/got" 2>"$T/err"
	cat "$T/err"
	cmp "$T/got" "$T/want"
	grep -q "^cpa-query: warning: ${bad}sums: byte 64: block checksum mismatch; reading the data blocks instead$" "$T/err"
	grep -q "^cpa-query: warning: ${short}sums: byte [0-9]*: the file ends inside the sums of index entry [0-9]*; reading the data blocks instead$" "$T/err"
	# the rest of the damaged and the short segments' blocks by their sums
	read -r b s < <(summed "$T/err")
	[ "$s" -gt 0 ]
	[ "$s" -lt "$b" ]
	[ "$(grep -c warning "$T/err")" -eq 2 ]
}

@test "query: a range of several segments read ahead on a second thread is answered byte for byte as on one" {
	set -o pipefail
	local args
	for args in "" "--labels comm,pid,tid,cpu" "--format stream" \
		"--format stream --split-every 40s --labels comm --prune 20" \
		"--format stream --split-every 40s --labels pid" \
		"--format stream --split-every 1m --stacks kernel --prune 8" \
		"--format stream --split-every 1m --labels none --stacks side --kind oncpu" \
		"--top 20" "--format pprof" "--comm proc3 --kind oncpu" \
		"--from @$((T0 + 30)) --to @$((T0 + 320)) --grep fn_4" \
		"--diff-from @$T0 --diff-to @$((T0 + 60))"; do
		# shellcheck disable=SC2086
		cpa-query --dir "$QS" $args >"$T/ahead"
		# shellcheck disable=SC2086
		CPA_QUERY_NO_AHEAD=1 cpa-query --dir "$QS" $args >"$T/one"
		[ -s "$T/one" ]
		cmp "$T/ahead" "$T/one"
	done
	# the damaged block of a segment is skipped, as on one thread
	cp -r "$QS" "$T/bad"
	ls -d "$T"/bad/*/ >"$T/segs"
	data=$(sed -n 2p "$T/segs")data
	printf 'XXXX' | dd of="$data" bs=1 seek=200 conv=notrunc status=none
	cpa-query --dir "$T/bad" 2>"$T/ahead.err" >"$T/ahead"
	CPA_QUERY_NO_AHEAD=1 cpa-query --dir "$T/bad" 2>"$T/one.err" >"$T/one"
	cmp "$T/ahead" "$T/one"
	cmp "$T/ahead.err" "$T/one.err"
	grep -q 'skipping its windows' "$T/one.err"
}

@test "query: --split writes one folded file per window, or per --split-every" {
	cpa-query --dir "$QS" --from "@$((T0 + 58))" --to "@$((T0 + 62))" --split "$T/split"
	run ls "$T/split"
	[ "${lines[*]}" = "20251130T100058Z.folded 20251130T100059Z.folded 20251130T100100Z.folded 20251130T100101Z.folded" ]
	for s in 58 59 60 61; do
		expect "$QT" $((T0 + s)) $((T0 + s + 1)) 1 comm >"$T/want"
		same_lines "$T/split/$(date -u -d @$((T0 + s)) +%Y%m%dT%H%M%SZ).folded" "$T/want"
	done
	cpa-query --dir "$QS" --from "@$T0" --to "@$((T0 + 120))" --split "$T/split2" --split-every 30s
	got=$(ls "$T/split2" | wc -l)
	[ "$got" -eq 4 ]
	expect "$QT" $((T0 + 30)) $((T0 + 60)) 1 comm >"$T/want"
	same_lines "$T/split2/20251130T100030Z.folded" "$T/want"
}

@test "query: --top lists functions by self weight, with total weight" {
	run cpa-query --dir "$QS" --kind oncpu --top 5
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 6 ]
	[[ "${lines[0]}" == *self*total*function ]]
	# recompute from the truth: self is the leaf, total any frame (once per stack)
	awk -F'\t' '$3 == 0 {
		n = split($12, f, ";"); self[f[n]] += $13; delete seen
		for (i = 1; i <= n; i++) if (!(f[i] in seen)) { seen[f[i]] = 1; tot[f[i]] += $13 }
	} END { for (k in self) print self[k], tot[k], k }' "$QT" | sort -k1,1nr -k2,2nr -k3 | sed -n 1,5p >"$T/want"
	printf '%s\n' "${lines[@]:1}" | awk '{ print $1, $3, $5 }' >"$T/got"
	diff "$T/got" "$T/want"
	# main is in every stack: its total is everything
	run cpa-query --dir "$QS" --kind oncpu --top 100000
	total=$(awk -F'\t' '$3 == 0 {s+=$13} END {print s}' "$QT")
	echo "$output" | awk -v t="$total" '$5 == "main" && $3 == t {ok=1} END {exit !ok}'
}

@test "query: --diff-from/--diff-to write baseline and range as two columns" {
	cpa-query --dir "$QS" --from "@$((T0 + 300))" --to "@$((T0 + 330))" \
		--diff-from "@$T0" --diff-to "@$((T0 + 30))" >"$T/got"
	expect "$QT" $T0 $((T0 + 30)) 1 comm >"$T/base"
	expect "$QT" $((T0 + 300)) $((T0 + 330)) 1 comm >"$T/new"
	# full outer join on the stack, 0 where a side lacks it
	awk 'FNR == NR { c = $NF; $NF = ""; sub(/ $/, ""); b[$0] = c; k[$0] = 1; next }
	     { c = $NF; $NF = ""; sub(/ $/, ""); n[$0] = c; k[$0] = 1 }
	     END { for (s in k) printf "%s %d %d\n", s, b[s], n[s] }' "$T/base" "$T/new" >"$T/want"
	same_lines "$T/got" "$T/want"
	# both columns are there and both sides have weight
	awk '{ a += $(NF-1); b += $NF } END { exit !(a > 0 && b > 0) }' "$T/got"
}

@test "query: --format pprof writes a gzipped profile of the range" {
	cpa-query --dir "$QS" --kind oncpu --format pprof -o "$T/p.pb.gz"
	got=$(head -c 2 "$T/p.pb.gz" | od -An -tx1 | tr -d ' ')
	[ "$got" = 1f8b ]
	gzip -dc "$T/p.pb.gz" >"$T/p.pb"
	[ -s "$T/p.pb" ]
	# function names of the store are in the profile's string table
	grep -q fn_1 "$T/p.pb"
	grep -q proc3 "$T/p.pb"
}

@test "query: --format pprof is the profile cpa-render makes of --format stream" {
	command -v go >/dev/null || skip_missing "no go"
	local range=(--dir "$QS" --from "@$((T0 + 10))" --to "@$((T0 + 40))")
	cpa-query "${range[@]}" --format pprof -o "$T/q.pb.gz"
	cpa-query "${range[@]}" --format stream | cpa-render --format pprof -o "$T/r.pb.gz"
	for f in q r; do
		go tool pprof -raw "$T/$f.pb.gz" >"$T/$f.raw" 2>&1
		go tool pprof -top -nodecount=1000 "$T/$f.pb.gz" >"$T/$f.top" 2>&1
	done
	diff "$T/q.raw" "$T/r.raw"
	diff "$T/q.top" "$T/r.top"
	# the 30 windows of the range, at the store's 100 Hz
	grep -qx 'Duration: 30s' "$T/q.raw"
	grep -qx 'Period: 10000000' "$T/q.raw"
	grep -q 'fn_1$' "$T/q.top"
}

# Sums column c (1 on-CPU samples, 2 CPU ns, 3 off-CPU ns) of go tool
# pprof -raw's samples.
raw_column() {
	awk -v c="$2" '/^Samples:/ { on = 1; getline; next }
		/^Locations/ { on = 0 } on && /:/ { s += $c } END { print s + 0 }' "$1"
}

@test "query and render: pprof keeps each unit of a mixed range in its own column" {
	command -v go >/dev/null || skip_missing "no go"
	local range=(--dir "$QS" --from "@$((T0 + 10))" --to "@$((T0 + 40))")
	oncpu=$(awk -F'\t' '$1 >= T0 + 10 && $1 < T0 + 40 && $3 == 0 { s += $13 }
		END { print s + 0 }' T0=$T0 "$QT")
	offcpu=$(awk -F'\t' '$1 >= T0 + 10 && $1 < T0 + 40 && $3 == 1 { s += $13 }
		END { print s + 0 }' T0=$T0 "$QT")
	[ "$oncpu" -gt 0 ]
	[ "$offcpu" -gt 0 ]
	cpa-query "${range[@]}" --format pprof -o "$T/q.pb.gz" 2>"$T/err"
	cpa-query "${range[@]}" --format stream | cpa-render --format pprof -o "$T/r.pb.gz"
	# nothing dropped, so nothing to warn about
	[ ! -s "$T/err" ]
	for f in q r; do
		go tool pprof -raw "$T/$f.pb.gz" >"$T/raw" 2>&1
		grep -qx 'samples/count cpu/nanoseconds\[dflt\] off_cpu/nanoseconds' "$T/raw"
		[ "$(raw_column "$T/raw" 1)" -eq "$oncpu" ]
		[ "$(raw_column "$T/raw" 2)" -eq "$((oncpu * 10000000))" ]
		[ "$(raw_column "$T/raw" 3)" -eq "$offcpu" ]
	done
	# a kind picked: one unit, one column
	cpa-query "${range[@]}" --kind offcpu-blocked --format pprof -o "$T/o.pb.gz"
	go tool pprof -raw "$T/o.pb.gz" >"$T/raw" 2>&1
	grep -qx 'off_cpu/nanoseconds' "$T/raw"
	[ "$(raw_column "$T/raw" 1)" -eq "$offcpu" ]
	# probe hits under their marker: on the stack of on-CPU samples too
	printf '%s\n' '1700000000000000000 oncpu 1 1 0 app app 7 main;hot' \
		'1700000000000000000 probe 1 1 0 app app 1 main;hot' |
		"$CPA_BUILDDIR/tests/tools/mkstream" | cpa-store --dir "$T/p"
	cpa-query --dir "$T/p" --format pprof -o "$T/p.pb.gz"
	go tool pprof -raw "$T/p.pb.gz" >"$T/raw" 2>&1
	grep -qx 'samples/count\[dflt\] events/count' "$T/raw"
	cpa-query --dir "$T/p" --format pprof --kind probe -o "$T/p.pb.gz"
	go tool pprof -raw "$T/p.pb.gz" >"$T/raw" 2>&1
	grep -qx 'events/count' "$T/raw"
}

@test "query: bad options exit 2 with the option named; an empty range is not an error" {
	run cpa-query --dir "$QS" --from 25:99
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --from '25:99'"* ]]
	run cpa-query --dir "$QS" --from "@$((T0 + 10))" --to "@$T0"
	[ "$status" -eq 2 ]
	run cpa-query --dir "$QS" --labels comm,bogus
	[ "$status" -eq 2 ]
	[[ "$output" == *"unknown label 'bogus'"* ]]
	run cpa-query --dir "$QS" --kind nosuchkind
	[ "$status" -eq 2 ]
	run cpa-query --dir "$QS" --grep '('
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --grep '('"* ]]
	run cpa-query --dir "$QS" --cpu 3-1
	[ "$status" -eq 2 ]
	run cpa-query --dir "$QS" --diff-from "@$T0"
	[ "$status" -eq 2 ]
	run cpa-query --dir "$QS" --top 3 --format stream
	[ "$status" -eq 2 ]
	run cpa-query
	[ "$status" -eq 2 ]
	[[ "$output" == *"--dir is required"* ]]
	run cpa-query --dir "$QS" --from "@$((T0 + 200))" --to "@$((T0 + 250))"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run cpa-query --help
	[ "$status" -eq 0 ]
	[[ "$output" == *--diff-from* && "$output" == *--split-every* ]]
}

@test "query: --top is the list cpa-render --format text draws from the same range" {
	# every function, those that are never a leaf too
	cpa-query --dir "$QS" --kind oncpu --top 100000 >"$T/q.txt"
	cpa-query --dir "$QS" --kind oncpu --labels none >"$T/n.folded"
	cpa-render --format text --top 100000 "$T/n.folded" >"$T/r.txt"
	# the same rows; render writes 1,234 where query writes 1234
	sed 1d "$T/q.txt" | tr -s ' ' >"$T/q"
	sed -n '/^Top 100000 by self/,/^$/p' "$T/r.txt" | sed '1,2d;/^$/d' | tr -d , | tr -s ' ' >"$T/r"
	grep -q ' 0 0.00% [0-9]* 100.00% main$' "$T/q"
	diff "$T/q" "$T/r"
}
