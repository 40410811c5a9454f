#!/usr/bin/env bats
# cpa-render: exact geometry, options, formats and bad input.

load helper

setup() {
	T=$BATS_TEST_TMPDIR
	MKSTREAM="$CPA_BUILDDIR/tests/tools/mkstream"
	DATA="$CPA_SRCDIR/tests/data/render"
	printf '%s\n' 'main;run;level_a;hot 70' 'main;run;level_b 20' \
		'main;idle 10' > "$T/p.folded"
}

# frames SVG: one line per frame, "title|x|y|width|fill|label"
frames() {
	sed -n 's|^<g><title>\(.*\)</title><rect x="\([^"]*\)" y="\([^"]*\)" width="\([^"]*\)" height="[^"]*" fill="\([^"]*\)".*<text[^>]*>\(.*\)</text></g>$|\1\|\2\|\3\|\4\|\5\|\6|p' "$1"
}

# need TOOL: skips the test without TOOL (fails under CI, see skip_missing)
need() {
	command -v "$1" >/dev/null || skip_missing "no $1"
}

@test "svg: exact frames, widths and order as flamegraph.pl lays them out" {
	cpa-render "$T/p.folded" > "$T/p.svg"
	xmllint --noout "$T/p.svg"
	run frames "$T/p.svg"
	[ "${lines[0]}" = "all (100 samples, 100%)|10.00|101.00|1180.00|rgb(250,250,250)|all" ]
	fill=$(echo "${lines[1]}" | cut -d'|' -f5)
	[ "${lines[1]}" = "main (100 samples, 100.00%)|10.00|85.00|1180.00|$fill|main" ]
	# children left to right in name order: idle before run
	[[ "${lines[2]}" == "idle (10 samples, 10.00%)|10.00|69.00|118.00|"* ]]
	[[ "${lines[3]}" == "run (90 samples, 90.00%)|128.00|69.00|1062.00|"* ]]
	[[ "${lines[4]}" == "level_a (70 samples, 70.00%)|128.00|53.00|826.00|"* ]]
	[[ "${lines[5]}" == "hot (70 samples, 70.00%)|128.00|37.00|826.00|"* ]]
	[[ "${lines[6]}" == "level_b (20 samples, 20.00%)|954.00|53.00|236.00|"* ]]
	[ "${#lines[@]}" -eq 7 ]
	grep -q '<svg version="1.1" width="1200" height="150"' "$T/p.svg"
	grep -q '<text id="title" x="600.00" y="24">Flame Graph</text>' "$T/p.svg"
	# hot palette: red 205-255, green 0-230, blue 0-55
	for l in "${lines[@]:1}"; do
		rgb=$(echo "$l" | cut -d'|' -f5 | tr -dc '0-9,')
		IFS=, read -r r g b <<< "$rgb"
		[ "$r" -ge 205 ]
		[ "$r" -le 255 ]
		[ "$g" -le 230 ]
		[ "$b" -le 55 ]
	done
}

@test "svg: the same input always gives the same file" {
	cpa-render "$T/p.folded" > "$T/a.svg"
	sort -r "$T/p.folded" | cpa-render > "$T/b.svg"
	cmp "$T/a.svg" "$T/b.svg"
}

@test "svg: equal stacks merge and counts add up" {
	printf '%s\n' 'a;b 1' 'a;c 2' 'a;b 3' 'x 4' > "$T/m.folded"
	cpa-render "$T/m.folded" > "$T/m.svg"
	run frames "$T/m.svg"
	[[ "${lines[0]}" == "all (10 samples, 100%)|"* ]]
	[[ "${lines[1]}" == "a (6 samples, 60.00%)|"* ]]
	[[ "${lines[2]}" == "b (4 samples, 40.00%)|"* ]]
	[[ "${lines[3]}" == "c (2 samples, 20.00%)|"* ]]
	[[ "${lines[4]}" == "x (4 samples, 40.00%)|"* ]]
}

@test "svg: --title, --subtitle, --width, --height, --countname" {
	cpa-render --title 'CPU <all> & more' --subtitle 'host: db1' --width 600 \
		--height 20 --countname events "$T/p.folded" > "$T/p.svg"
	xmllint --noout "$T/p.svg"
	grep -q '>CPU &lt;all&gt; &amp; more</text>' "$T/p.svg"
	grep -q '<text id="subtitle" x="300.00" y="48">host: db1</text>' "$T/p.svg"
	# 4 levels of 20 px + 36 + 24 (subtitle) + 34
	grep -q '<svg version="1.1" width="600" height="194"' "$T/p.svg"
	run frames "$T/p.svg"
	[[ "${lines[3]}" == "run (90 events, 90.00%)|68.00|"*"|522.00|"* ]]
	grep -q 'height="19.0"' "$T/p.svg"
}

@test "svg: --minwidth in pixels and in percent leaves narrow frames out" {
	printf '%s\n' 'a;big 990' 'a;tiny 1' 'a;small 9' > "$T/w.folded"
	cpa-render "$T/w.folded" > "$T/w.svg"
	got=$(frames "$T/w.svg" | wc -l)
	[ "$got" -eq 5 ]
	# tiny is 1.18 px wide: gone at 2 px, small (10.62 px) stays
	cpa-render --minwidth 2 "$T/w.folded" > "$T/w.svg"
	run frames "$T/w.svg"
	[ "${#lines[@]}" -eq 4 ]
	must_fail grep -q '<title>tiny' "$T/w.svg"
	cpa-render --minwidth 1% "$T/w.folded" > "$T/w.svg"
	got=$(frames "$T/w.svg" | wc -l)
	[ "$got" -eq 3 ]
	grep -q '<title>big' "$T/w.svg"
	run cpa-render --minwidth 1x "$T/w.folded"
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --minwidth '1x'"* ]]
}

@test "svg: --inverted draws an icicle graph, root at the top" {
	cpa-render --inverted "$T/p.folded" > "$T/i.svg"
	run frames "$T/i.svg"
	[[ "${lines[0]}" == "all (100 samples, 100%)|10.00|36.00|"* ]]
	[[ "${lines[5]}" == "hot (70 samples, 70.00%)|128.00|100.00|"* ]]
	grep -q '>Icicle Graph</text>' "$T/i.svg"
}

@test "svg: --reverse puts the leaves at the root and merges them" {
	printf '%s\n' 'a;b;leaf 1' 'x;b;leaf 2' 'a;other 4' > "$T/r.folded"
	cpa-render --reverse --format folded "$T/r.folded" > "$T/r.out"
	run cat "$T/r.out"
	[ "${lines[0]}" = "leaf;b;a 1" ]
	[ "${lines[1]}" = "leaf;b;x 2" ]
	[ "${lines[2]}" = "other;a 4" ]
	cpa-render --reverse "$T/r.folded" > "$T/r.svg"
	grep -q '<title>leaf (3 samples, 42.86%)' "$T/r.svg"
}

@test "svg: annotations _[k] _[j] _[i] color frames (java palette) and are stripped" {
	printf '%s\n' 'java;Lcom/x/Foo:::run_[j] 5' 'java;inl_[i] 5' \
		'java;sys_read_[k] 5' 'java;Interp::call 5' 'java;libc_start 5' \
		> "$T/j.folded"
	cpa-render --colors java "$T/j.folded" > "$T/j.svg"
	xmllint --noout "$T/j.svg"
	run frames "$T/j.svg"
	for l in "${lines[@]}"; do
		title=${l%%|*}; fill=$(echo "$l" | cut -d'|' -f5)
		label=${l##*|}
		rgb=$(echo "$fill" | tr -dc '0-9,')
		IFS=, read -r r g b <<< "$rgb"
		case $title in
		"Lcom/x/Foo:::run ("*)	# green
			[ "$g" -ge 200 ]
			[ "$r" = "$b" ] ;;
		"inl ("*)	# aqua
			[ "$r" -le 110 ]
			[ "$g" = "$b" ] ;;
		"sys_read ("*)	# orange
			[ "$b" = 0 ]
			[ "$r" -ge 190 ] ;;
		"Interp::call ("*)	# yellow
			[ "$r" = "$g" ]
			[ "$b" -le 70 ] ;;
		"libc_start ("*)	# red
			[ "$r" -ge 200 ]
			[ "$g" = "$b" ] ;;
		esac
		[[ "$label" != *'_['* ]]
		[[ "$title" != *'_['* ]]
	done
	grep -q '<title>sys_read (5 samples' "$T/j.svg"
}

@test "svg: every palette is accepted and colors one name the same way" {
	for c in hot mem io wakeup java js perl chain red green blue aqua yellow purple orange; do
		cpa-render --colors "$c" "$T/p.folded" > "$T/c.svg"
		xmllint --noout "$T/c.svg"
	done
	cpa-render --colors blue "$T/p.folded" | frames /dev/stdin > "$T/b1"
	run frames "$T/c.svg"
	# --hash: alike names get alike colors, and runs agree
	cpa-render --hash "$T/p.folded" > "$T/h1.svg"
	cpa-render --hash "$T/p.folded" > "$T/h2.svg"
	cmp "$T/h1.svg" "$T/h2.svg"
	cpa-render "$T/p.folded" > "$T/h0.svg"
	must_fail cmp -s "$T/h1.svg" "$T/h0.svg"
	run cpa-render --colors rainbow "$T/p.folded"
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --colors 'rainbow'"* ]]
}

@test "svg: two-column input draws a differential graph (red grew, blue shrank)" {
	printf '%s\n' 'a;grew 5 10' 'a;shrank 10 2' 'a;same 4 4' > "$T/d.folded"
	cpa-render "$T/d.folded" > "$T/d.svg"
	xmllint --noout "$T/d.svg"
	run frames "$T/d.svg"
	# widths from the second column, colors from the change
	[[ "${lines[0]}" == "all (16 samples, 100%)|"* ]]
	grep -q '<title>grew (10 samples, 62.50%; +31.25%)</title>.*fill="rgb(255,78,78)"' "$T/d.svg"
	grep -q '<title>shrank (2 samples, 12.50%; -50.00%)</title>.*fill="rgb(0,0,255)"' "$T/d.svg"
	grep -q '<title>same (4 samples, 25.00%; 0.00%)</title>.*fill="rgb(255,255,255)"' "$T/d.svg"
	cpa-render --negate "$T/d.folded" > "$T/n.svg"
	grep -q '<title>grew (10 samples, 62.50%; -31.25%)</title>.*fill="rgb(78,78,255)"' "$T/n.svg"
	grep -q '<title>shrank (2 samples, 12.50%; +50.00%)</title>.*fill="rgb(255,0,0)"' "$T/n.svg"
	# a file mixing one- and two-column lines is an error, with its line
	printf '%s\n' 'a 1 2' 'b 3' > "$T/x.folded"
	run cpa-render "$T/x.folded"
	[ "$status" -eq 1 ]
	[[ "$output" == *"x.folded: line 2: one counts, but line(s) before had two"* ]]
}

@test "svg: names with markup, control bytes and bad UTF-8 stay well-formed" {
	printf 'a<b>&"c";\x01ctl;caf\xc3\xa9;bad\xff\xfe 5\n' > "$T/u.folded"
	cpa-render "$T/u.folded" > "$T/u.svg"
	xmllint --noout "$T/u.svg"
	grep -q '<title>a&lt;b&gt;&amp;&quot;c&quot; (5 samples' "$T/u.svg"
	grep -q '<title>café (5 samples' "$T/u.svg"
	# names are made clean on the way in (lib/base/name.h): a byte that is
	# not UTF-8, or a control byte, becomes '_'
	grep -q '<title>bad__ (5 samples' "$T/u.svg"
	grep -q '<title>_ctl (5 samples' "$T/u.svg"
	cpa-render --format html "$T/u.folded" | grep 'bad__' >/dev/null
}

@test "svg: long names are cut to fit with .." {
	printf '%s\n' "main;$(printf 'x%.0s' $(seq 300)) 1" 'main;other 30' > "$T/l.folded"
	cpa-render --width 300 "$T/l.folded" > "$T/l.svg"
	# 9 px wide: no room for a label; other (271 px) is whole
	run frames "$T/l.svg"
	label=$(frames "$T/l.svg" | grep '^x' | cut -d'|' -f6)
	[ -z "$label" ]
	frames "$T/l.svg" | grep '^other (30 samples, 96.77%)|.*|other$' >/dev/null
	cpa-render --width 3000 "$T/l.folded" > "$T/l.svg"
	label=$(frames "$T/l.svg" | grep '^x' | cut -d'|' -f6)
	[[ "$label" == xxxxxxxx*.. ]]
	[ "${#label}" -eq 13 ]	# 96.77 px: 13 characters of 7.08 px
}

@test "stream: root labels, units from the kind, time shown in ms" {
	cat > "$T/s.desc" <<-EOF
	1700000000000000000 oncpu 100 100 0 app app 3 main;work
	1700000000100000000 oncpu 100 101 1 app worker 1 main;work
	1700000000200000000 oncpu 200 200 1 db db 2 main;query;sys_read_[k]
	EOF
	"$MKSTREAM" < "$T/s.desc" > "$T/s.cpa"
	cpa-render --format folded "$T/s.cpa" > "$T/s.out"
	run cat "$T/s.out"
	[ "${lines[0]}" = "app;main;work 4" ]
	[ "${lines[1]}" = "db;main;query;sys_read_[k] 2" ]
	cpa-render --format folded --labels comm,pid,thread,cpu "$T/s.cpa" > "$T/s.out"
	grep -qx 'app;\[pid 100\];\[thread worker\];\[cpu 1\];main;work 1' "$T/s.out"
	cpa-render "$T/s.cpa" > "$T/s.svg"
	xmllint --noout "$T/s.svg"
	grep -q '<title>all (6 samples, 100%)' "$T/s.svg"

	cat > "$T/o.desc" <<-EOF
	1700000000000000000 offcpu-blocked 100 100 0 app app 2500000 main;wait;futex_wait_[k]
	1700000001000000000 offcpu-blocked 100 100 0 app app 1500000000 main;sleep
	EOF
	"$MKSTREAM" < "$T/o.desc" > "$T/o.cpa"
	cpa-render "$T/o.cpa" > "$T/o.svg"
	xmllint --noout "$T/o.svg"
	grep -q '<title>all (1.50 s, 100%)' "$T/o.svg"
	grep -q '<title>futex_wait (2.50 ms, 0.17%)' "$T/o.svg"
	grep -q '<title>off-CPU blocked (1.50 s, 100.00%)' "$T/o.svg"
	# off-CPU time gets the io palette's background
	grep -q 'stop-color="#f8f8f8"' "$T/o.svg"
}

@test "stream: one graph has one unit; --kind picks one" {
	cat > "$T/k.desc" <<-EOF
	1700000000000000000 oncpu 1 1 0 app app 1 main;cpu
	1700000000100000000 offcpu-blocked 1 1 0 app app 5000 main;wait
	EOF
	"$MKSTREAM" < "$T/k.desc" > "$T/k.cpa"
	# the other unit's graph needs a file to go to (render.bats has
	# "several kinds")
	run --separate-stderr cpa-render "$T/k.cpa"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"the 5000 ns of the input are not drawn: one graph has one unit; -o FILE writes a graph per unit, --kind picks one"* ]]
	cpa-render --kind oncpu --format folded "$T/k.cpa" > "$T/k.out"
	[ "$(cat "$T/k.out")" = "app;main;cpu 1" ]
	cpa-render --kind offcpu-blocked --format folded "$T/k.cpa" > "$T/k.out"
	[ "$(cat "$T/k.out")" = "off-CPU blocked;app;main;wait 5000" ]
	run cpa-render --kind nosuch "$T/k.cpa"
	[ "$status" -eq 2 ]
}

@test "stream: malformed input names the byte offset; truncation is reported" {
	printf '%s\n' '1700000000000000000 oncpu 1 1 0 app app 1 main;a' \
		'1700000000000000001 oncpu 1 1 0 app app 1 main;b' > "$T/t.desc"
	"$MKSTREAM" < "$T/t.desc" > "$T/t.cpa"
	size=$(stat -c %s "$T/t.cpa")
	# cut inside the last record: an error with the record's offset
	head -c $((size - 3)) "$T/t.cpa" > "$T/cut.cpa"
	run cpa-render "$T/cut.cpa"
	[ "$status" -eq 1 ]
	[[ "$output" =~ cut\.cpa:\ byte\ [0-9]+: ]]
	# a bad header
	printf '\x89CPA\x09\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00' > "$T/h.cpa"
	run cpa-render "$T/h.cpa"
	[ "$status" -eq 1 ]
	[[ "$output" == *"h.cpa"* ]]
	# a clean cut between records (no END): drawn, with a warning
	printf 'noend\n' >> "$T/t.desc"
	"$MKSTREAM" < "$T/t.desc" > "$T/n.cpa"
	run cpa-render "$T/n.cpa"
	[ "$status" -eq 0 ]
	grep -qxF "cpa-render: warning: $T/n.cpa: byte $(stat -c %s "$T/n.cpa"): stream ended without an end record (truncated; drawing what arrived)" <<<"$output"
	# a capture not yet unwound is named as such
	printf 'raw 3\n' | "$MKSTREAM" > "$T/raw.cpa"
	run cpa-render "$T/raw.cpa"
	[ "$status" -eq 1 ]
	[[ "$output" == *"raw.cpa: 3 raw samples but no symbolized ones: pipe cpa-capture through cpa-unwind first"* ]]
	# lost samples upstream are reported
	printf 'lost 7\n' >> "$T/t.desc"
	"$MKSTREAM" < "$T/t.desc" | cpa-render --format folded > /dev/null 2> "$T/err"
	grep -q '7 samples were lost upstream' "$T/err"
}

@test "flamechart: time order, adjacent frames merge, others do not" {
	cat > "$T/f.desc" <<-EOF
	1700000000300000000 oncpu 1 1 0 app app 1 main;a
	1700000000100000000 oncpu 1 1 0 app app 1 main;a
	1700000000200000000 oncpu 1 1 0 app app 1 main;b
	1700000000400000000 oncpu 1 1 0 app app 2 main;b
	EOF
	"$MKSTREAM" < "$T/f.desc" > "$T/f.cpa"
	cpa-render --flamechart "$T/f.cpa" > "$T/f.svg"
	xmllint --noout "$T/f.svg"
	run frames "$T/f.svg"
	# by time: a (0.1) b (0.2) a (0.3) b (0.4, weight 2)
	[[ "${lines[3]}" == "a (1 samples, 20.00%)|10.00|"* ]]
	[[ "${lines[4]}" == "b (1 samples, 20.00%)|246.00|"* ]]
	[[ "${lines[5]}" == "a (1 samples, 20.00%)|482.00|"* ]]
	[[ "${lines[6]}" == "b (2 samples, 40.00%)|718.00|"* ]]
	grep -q '>Flame Chart</text>' "$T/f.svg"
	# folded text: line order is time order
	printf '%s\n' 'm;b 1' 'm;a 1' 'm;a 1' 'm;b 1' > "$T/f.folded"
	cpa-render --flamechart "$T/f.folded" > "$T/f2.svg"
	run frames "$T/f2.svg"
	[[ "${lines[2]}" == "b (1 samples, 25.00%)|10.00|"* ]]
	[[ "${lines[3]}" == "a (2 samples, 50.00%)|305.00|"* ]]
	[[ "${lines[4]}" == "b (1 samples, 25.00%)|895.00|"* ]]
	run cpa-render --flamechart --format text "$T/f.folded"
	[ "$status" -eq 2 ]
}

@test "text: top functions by self and total, and the call tree" {
	printf '%s\n' 'main;run;level_a;hot 70' 'main;run;level_b;hot 20' \
		'main;idle 10' 'main;rec;rec;rec 4' > "$T/t.folded"
	cpa-render --format text --top 3 "$T/t.folded" > "$T/t.txt"
	run cat "$T/t.txt"
	[ "${lines[0]}" = "Total: 104 samples" ]
	got=$(sed -n '/^Top 3 by self/,/^$/p' "$T/t.txt" | sed -n 3p | tr -s ' ')
	[ "$got" = " 90 86.54% 90 86.54% hot" ]
	got=$(sed -n '/^Top 3 by self/,/^$/p' "$T/t.txt" | wc -l)
	[ "$got" -eq 6 ]
	# recursion counts once in a total
	sed -n '/^Top 3 by total/,/^$/p' "$T/t.txt" > "$T/top"
	got=$(sed -n 3p "$T/top" | tr -s ' ')
	[ "$got" = " 0 0.00% 104 100.00% main" ]
	got=$(sed -n 4p "$T/top" | tr -s ' ')
	[ "$got" = " 0 0.00% 90 86.54% run" ]
	sed -n '/^Call tree/,$p' "$T/t.txt" > "$T/tree"
	grep -qx ' 100.00%    0.00%            104    main' "$T/tree"
	grep -qx '  67.31%   67.31%             70          hot' "$T/tree"
	grep -qx '   3.85%    3.85%              4          rec' "$T/tree"
	# the tree's cut
	cpa-render --format text --minwidth 5% "$T/t.folded" > "$T/t2.txt"
	must_fail grep -q ' rec$' <(sed -n '/^Call tree/,$p' "$T/t2.txt")
}

@test "folded: merged, sorted, and rendering it again gives the same graph" {
	"$CPA_SRCDIR/bench/render-gen" -v lines=3000 -v seed=7 > "$T/g.folded"
	cat "$T/g.folded" "$T/g.folded" > "$T/gg.folded"
	cpa-render --format folded "$T/gg.folded" > "$T/m.folded"
	LC_ALL=C sort -c "$T/m.folded"
	[ "$(awk '{ s += $NF } END { print s }' "$T/m.folded")" = \
	  "$(awk '{ s += 2 * $NF } END { print s }' "$T/g.folded")" ]
	got=$(cut -d' ' -f1 "$T/m.folded" | sort | uniq -d | wc -l)
	[ "$got" -eq 0 ]
	cpa-render "$T/gg.folded" > "$T/1.svg"
	cpa-render "$T/m.folded" > "$T/2.svg"
	cmp "$T/1.svg" "$T/2.svg"
	# differential input stays two columns
	printf '%s\n' 'a;b 1 2' 'a;b 3 4' > "$T/d.folded"
	[ "$(cpa-render --format folded "$T/d.folded")" = "a;b 4 6" ]
}

@test "input: perf script | stackcollapse-perf.pl and bpftrace collapses render" {
	cpa-render "$DATA/perf-collapsed.folded" > "$T/perf.svg"
	xmllint --noout "$T/perf.svg"
	grep -q '<title>all (649 samples, 100%)' "$T/perf.svg"
	grep -q '<title>hot_leaf (499 samples, 76.89%)' "$T/perf.svg"
	# kernel frames lose _[k] in labels and tooltips, keep it for color
	grep -q '<title>read_zero (124 samples' "$T/perf.svg"
	must_fail grep -q '_\[k\]' "$T/perf.svg"
	cpa-render --colors java "$DATA/perf-collapsed.folded" |
		grep -q '<title>read_zero (124 samples, 19.11%)</title><rect[^>]*fill="rgb([0-9]*,[0-9]*,0)"'
	cpa-render "$DATA/bpftrace-collapsed.folded" > "$T/bt.svg"
	xmllint --noout "$T/bt.svg"
	grep -q '<title>all (367 samples, 100%)' "$T/bt.svg"
	grep -q '<title>level_b+9 (367 samples, 100.00%)' "$T/bt.svg"
}

@test "input: a malformed line is fatal with its line number, or skipped and counted" {
	printf '%s\n' 'a;b 1' 'a;c 2' 'no count here' 'a;d 3' > "$T/bad.folded"
	run cpa-render "$T/bad.folded"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == "cpa-render: $T/bad.folded: line 3: "* ]]
	run cpa-render --ignore-bad-lines --format folded "$T/bad.folded"
	[ "$status" -eq 0 ]
	[[ "$output" == *"warning: $T/bad.folded: line 3: "*"(skipped)"* ]]
	[[ "$output" == *"1 malformed line(s) skipped"* ]]
	[[ "$output" == *"a;d 3"* ]]
	# comments and blank lines are not errors; CRLF is fine
	printf '# comment\n\na;b 2\r\n' | cpa-render --format folded > "$T/o"
	[ "$(cat "$T/o")" = "a;b 2" ]
	# nothing to draw
	run cpa-render < /dev/null
	[ "$status" -eq 1 ]
	[[ "$output" == *"<stdin>: no samples to draw"* ]]
	run cpa-render "$T/nonexistent"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nonexistent: No such file or directory"* ]]
	# counts too large
	printf 'a 9223372036854775808\nb 9223372036854775808\n' > "$T/big.folded"
	run cpa-render "$T/big.folded"
	[ "$status" -eq 1 ]
	[[ "$output" == *"overflows"* ]]
}

@test "options: bad values exit 2 naming the option; --help lists them" {
	for a in "--width abc" "--width 5" "--height 0" "--format png" \
		 "--unit furlongs" "--labels comm,nosuch" "--top 0" "--freq 0"; do
		run cpa-render $a "$T/p.folded"
		[ "$status" -eq 2 ]
		[[ "$output" == *"${a%% *}"* ]]
	done
	run cpa-render "$T/p.folded" "$T/p.folded"
	[ "$status" -eq 2 ]
	run cpa-render --help
	[ "$status" -eq 0 ]
	for o in --format --output --title --subtitle --width --height --minwidth \
		 --colors --hash --countname --reverse --inverted --flamechart \
		 --negate --unit --kind --labels --ignore-bad-lines --top --freq; do
		[[ "$output" == *"$o"* ]]
	done
}

@test "html: self-contained page, with a heatmap only for stream input" {
	cpa-render --format html --title 'A <b> test' "$T/p.folded" > "$T/p.html"
	grep -q '<title>A &lt;b&gt; test</title>' "$T/p.html"
	must_fail grep -q 'id="heatmap"' "$T/p.html"
	# nothing loaded from elsewhere
	must_fail grep -Eq '(src|href)=' "$T/p.html"
	run grep -Eo 'https?://[^" ]*' "$T/p.html"
	must_fail grep -v '^http://www.w3.org/' <<<"$output"
	printf '%s\n' '1700000000000000000 oncpu 1 1 0 app app 1 main;a' \
		'1700000001500000000 oncpu 1 1 0 app app 1 main;b' | "$MKSTREAM" > "$T/s.cpa"
	cpa-render --format html "$T/s.cpa" > "$T/s.html"
	grep -q 'id="heatmap"' "$T/s.html"
	# two seconds, 50 rows: b falls in cell 1*50+25
	grep -q 'start_ms: 1700000000000, cell_ms: 20, col_ms: 1000, cols: 2, rows: 50,' "$T/s.html"
	grep -q '^cells: \[0,1,[0-9]*,1,$' "$T/s.html"
	grep -q '^75,1,[0-9]*,1\]$' "$T/s.html"
}

@test "pprof: go tool pprof reads it with the same totals" {
	need go
	cpa-render --format pprof -o "$T/p.pb.gz" "$T/p.folded"
	gzip -t "$T/p.pb.gz"
	go tool pprof -top -sample_index=samples "$T/p.pb.gz" > "$T/top" 2>&1
	grep -q 'Showing nodes accounting for 100, 100% of 100 total' "$T/top"
	grep -Eq '^ +70 +70\.00% +70\.00% +70 +70\.00% +hot$' "$T/top"
	grep -Eq '^ +0 +0% +100% +90 +90\.00% +run$' "$T/top"
	# on-CPU: CPU time at the sampling frequency too
	cpa-render --format pprof --freq 100 -o "$T/c.pb.gz" "$T/p.folded"
	go tool pprof -top -sample_index=cpu "$T/c.pb.gz" > "$T/top" 2>&1
	grep -q 'Showing nodes accounting for 1000ms, 100% of 1000ms total' "$T/top"
	go tool pprof -raw "$T/c.pb.gz" > "$T/raw" 2>&1
	grep -q '^samples/count cpu/nanoseconds' "$T/raw"
	grep -q '^PeriodType: cpu nanoseconds' "$T/raw"
	grep -q '^Period: 10000000' "$T/raw"

	# off-CPU nanoseconds from a stream, with its time and duration
	cat > "$T/o.desc" <<-EOF
	1700000000000000000 offcpu-blocked 1 1 0 app app 2000000 main;wait
	1700000002000000000 offcpu-blocked 1 1 0 app app 3000000 main;sleep
	EOF
	"$MKSTREAM" < "$T/o.desc" | cpa-render --format pprof > "$T/o.pb.gz"
	go tool pprof -raw "$T/o.pb.gz" > "$T/raw" 2>&1
	grep -q '^off_cpu/nanoseconds' "$T/raw"
	grep -q '^Duration: 2s' "$T/raw"
	go tool pprof -top "$T/o.pb.gz" > "$T/top" 2>&1
	grep -q 'Showing nodes accounting for 5ms, 100% of 5ms total' "$T/top"
	grep -q '^Time: Nov 14, 2023' "$T/top"

	# memory: bytes
	printf 'app;malloc 4096\napp;mmap 8192\n' |
		cpa-render --unit bytes --format pprof > "$T/m.pb.gz"
	go tool pprof -raw "$T/m.pb.gz" > "$T/raw" 2>&1
	grep -q '^space/bytes' "$T/raw"
	go tool pprof -top "$T/m.pb.gz" > "$T/top" 2>&1
	grep -q 'of 12kB total' "$T/top"

	# module+offset frames get a mapping and an address
	printf 'app;libfoo.so+0x1a2b 3\n' | cpa-render --format pprof > "$T/x.pb.gz"
	go tool pprof -raw "$T/x.pb.gz" > "$T/raw" 2>&1
	grep -q 'libfoo.so' "$T/raw"
	grep -Eq '0x[0-9a-f]*1a2b ' "$T/raw"
}

@test "pprof: one column per unit of a mixed stream; CPU time only at a known frequency" {
	need go
	cat > "$T/mix.desc" <<-EOF
	meta frequency 100
	1700000000000000000 oncpu 1 1 0 app app 7 main;run;hot
	1700000000000000000 offcpu-blocked 1 1 0 app app 5000000 main;wait
	1700000001000000000 oncpu 1 1 0 app app 3 main;run;hot
	EOF
	"$MKSTREAM" < "$T/mix.desc" > "$T/mix.stream"
	cpa-render --format pprof -o "$T/mix.pb.gz" "$T/mix.stream"
	go tool pprof -raw "$T/mix.pb.gz" > "$T/raw" 2>&1
	grep -qx 'samples/count cpu/nanoseconds\[dflt\] off_cpu/nanoseconds' "$T/raw"
	grep -Eq '^ +10 +100000000 +0: ' "$T/raw"
	grep -Eq '^ +0 +0 +5000000: ' "$T/raw"
	go tool pprof -top -sample_index=off_cpu "$T/mix.pb.gz" > "$T/top" 2>&1
	grep -q 'Showing nodes accounting for 5ms, 100% of 5ms total' "$T/top"
	# probe hits under their marker: on-CPU samples' stack is another
	printf '1700000002000000000 probe 1 1 0 app app 2 main;run;hot\n' |
		cat "$T/mix.desc" - | "$MKSTREAM" > "$T/probe.stream"
	cpa-render --format pprof -o "$T/probe.pb.gz" "$T/probe.stream"
	go tool pprof -raw "$T/probe.pb.gz" > "$T/raw" 2>&1
	grep -qx 'samples/count cpu/nanoseconds\[dflt\] off_cpu/nanoseconds events/count' "$T/raw"
	grep -Eq '^ +0 +0 +0 +2: ' "$T/raw"
	# folded text says no frequency: no CPU time, unless --freq gives it
	cpa-render --format pprof -o "$T/p.pb.gz" "$T/p.folded"
	go tool pprof -raw "$T/p.pb.gz" > "$T/raw" 2>&1
	grep -qx 'samples/count' "$T/raw"
	grep -qx 'Period: 1' "$T/raw"
}

@test "several kinds: folded under their markers, a report and a graph per unit, never refused" {
	cat > "$T/mix.desc" <<-EOF
	1700000000000000000 oncpu 1 1 0 app app 7 main;run;hot
	1700000000000000000 offcpu-blocked 1 1 0 app app 5000000 main;wait
	1700000000000000000 offcpu-preempted 1 1 0 app app 1000 main;run;hot
	1700000001000000000 oncpu 1 1 0 app app 3 main;run;hot
	1700000001000000000 probe 1 1 0 app app 2 main;run;hot
	EOF
	"$MKSTREAM" < "$T/mix.desc" > "$T/mix.stream"
	cpa-render --format folded "$T/mix.stream" > "$T/f"
	cat > "$T/want" <<-EOF
	app;main;run;hot 10
	off-CPU blocked;app;main;wait 5000000
	probe hits;app;main;run;hot 2
	scheduling delay (preempted);app;main;run;hot 1000
	EOF
	diff "$T/want" "$T/f"
	# a graph per unit: samples in the output, ns and count beside it
	run cpa-render -o "$T/g.svg" "$T/mix.stream"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "cpa-render: wrote $T/g.ns.svg, the graph in ns (one graph has one unit)" ]
	[ "${lines[1]}" = "cpa-render: wrote $T/g.count.svg, the graph in count (one graph has one unit)" ]
	grep -q '<title>hot (10 samples, 100.00%)</title>' "$T/g.svg"
	run ! grep -q 'wait' "$T/g.svg"
	grep -q '<title>off-CPU blocked (5.00 ms, 99.98%)</title>' "$T/g.ns.svg"
	grep -q '<title>scheduling delay (preempted) (1.00 us, 0.02%)</title>' "$T/g.ns.svg"
	grep -q '<title>probe hits (2 events, 100.00%)</title>' "$T/g.count.svg"
	# each graph is what --kind draws; from a pipe too
	cpa-render --kind probe "$T/mix.stream" > "$T/k.svg"
	cmp "$T/k.svg" "$T/g.count.svg"
	cat "$T/mix.stream" | cpa-render --unit-files "$T/q.svg" > "$T/q.svg"
	cmp "$T/q.count.svg" "$T/g.count.svg"
	cpa-render --unit-files "$T/p.html" --format html < "$T/mix.stream" > "$T/p.html"
	[ -s "$T/p.ns.html" ]
	[ -s "$T/p.count.html" ]
	# standard output with no name for the others: they are said, not drawn
	run --separate-stderr cpa-render "$T/mix.stream"
	[ "$status" -eq 0 ]
	[ "$stderr" = "$(printf '%s\n' 'cpa-render: warning: the 5001000 ns of the input are not drawn: one graph has one unit; -o FILE writes a graph per unit, --kind picks one' 'cpa-render: warning: the 2 count of the input are not drawn: one graph has one unit; -o FILE writes a graph per unit, --kind picks one')" ]
	# text: one report per unit
	cpa-render --format text "$T/mix.stream" > "$T/t"
	grep -c '^Total: ' "$T/t" > "$T/n"
	[ "$(cat "$T/n")" = 3 ]
	grep -qx 'Total: 10 samples over 1.000 s' "$T/t"
}

@test "pprof: the same stacks in another order make the same profile" {
	need go
	printf '%s\n' 'main;a;b 3' 'main;a 2' 'libx.so+0x10;f 1' 'liba.so+0x20;g 4' |
		cpa-render --format pprof > "$T/1.pb.gz"
	printf '%s\n' 'liba.so+0x20;g 4' 'main;a 2' 'libx.so+0x10;f 1' 'main;a;b 3' |
		cpa-render --format pprof > "$T/2.pb.gz"
	go tool pprof -raw "$T/1.pb.gz" > "$T/1.raw" 2>&1
	go tool pprof -raw "$T/2.pb.gz" > "$T/2.raw" 2>&1
	diff "$T/1.raw" "$T/2.raw"
	grep -q 'liba.so' "$T/1.raw"
}

@test "render: output write errors are reported" {
	[ -w /dev/full ] || skip "no /dev/full"
	run cpa-render -o /dev/full "$T/p.folded"
	[ "$status" -eq 1 ]
	[[ "$output" == *"/dev/full: write"* ]]
}

@test "fuzz corpus replays without a crash" {
	run "$CPA_BUILDDIR/tests/fuzz/render_replay" "$CPA_SRCDIR/tests/fuzz/corpus/render"
	[ "$status" -eq 0 ]
	[[ "$output" =~ replayed\ [1-9] ]]
}

@test "a very deep stack renders in every format, in bounded output" {
	awk 'BEGIN { for (i = 0; i < 100000; i++) printf "f%d;", i % 50; print "leaf 5" }' \
		> "$T/in.folded"
	for f in svg html text folded pprof; do
		timeout 20 cpa-render --format "$f" "$T/in.folded" > "$T/out.$f"
	done
	xmllint --noout --huge "$T/out.svg"
	# the tree stops indenting at 64 levels and says the depth instead
	grep -q '^ 100.00%  100.00%              5  *\[100001\] leaf$' "$T/out.text"
	[ "$(stat -c %s "$T/out.text")" -lt 30000000 ]
	cmp "$T/in.folded" "$T/out.folded"
}

@test "stream: samples merge by id, a name never reads as a count" {
	# a leaf that ends in a blank and a number: as folded text it would
	# read as a second count, so it is cleaned to "poll_2" (lib/base/name.h)
	cat > "$T/i.desc" <<-EOF
	1700000000000000000 oncpu 100 100 0 app app 5 main;poll 2
	1700000000100000000 oncpu 100 101 0 app app 3 main;poll 2
	1700000000200000000 oncpu 200 200 1 app app 1 main;run;leaf
	EOF
	"$MKSTREAM" < "$T/i.desc" > "$T/i.cpa"
	cpa-render "$T/i.cpa" > "$T/i.svg"
	grep -q '<title>poll_2 (8 samples, 88.89%)</title>' "$T/i.svg"
	cpa-render --format text "$T/i.cpa" > "$T/i.txt"
	grep -q '^ *8  *88.89%  *8  *88.89%  poll_2$' "$T/i.txt"
	# root labels as cpa-query prints them, leaves first with --reverse
	cpa-render --format folded --labels pid,thread "$T/i.cpa" > "$T/i.folded"
	grep -qx '\[pid 100\];\[thread app\];main;poll_2 8' "$T/i.folded"
	# which reads back as one count a line
	cpa-render --format folded "$T/i.folded" > "$T/again.folded"
	cmp "$T/i.folded" "$T/again.folded"
	run cpa-render --format folded --reverse --labels pid,cpu "$T/i.cpa"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[ "${lines[0]}" = "leaf;run;main;[cpu 1];[pid 200] 1" ]
	[ "${lines[1]}" = "poll_2;main;[cpu 0];[pid 100] 8" ]
}
