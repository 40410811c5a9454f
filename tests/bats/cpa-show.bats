#!/usr/bin/env bats
# `cpa show`, `cpa options` and `cpa --version`: the routing table, every
# documented `cpa show` example, and CPA's show options, on stores written
# by cpa-store from folded text (no BPF needed).
load helper

setup() {
	T=$BATS_TEST_TMPDIR
	midday_tz	# the examples name times of day 25 minutes back
	STORE=$T/store
	# The documented commands name no directory: the config file does.
	printf 'dir = %s\n' "$STORE" >"$T/cpa.conf"
	export CPA_CONFIG=$T/cpa.conf
	# Two processes five minutes apart, and one just now.
	printf 'nginx;main;serve;parse 5\nredis;main;loop 3\n' |
		cpa-store --dir "$STORE" --time "$(date -d '-20 min' '+%F %T')"
	printf 'app;main;run;leaf 7\n' | cpa-store --dir "$STORE"
}

# sorted FILE: the lines of FILE, sorted, for exact comparison.
sorted() { sort "$1"; }

# config_rejected LINES MESSAGE: cpa show with a config file of LINES
# exits 2 with MESSAGE, which names the file and the line.
config_rejected() {
	printf "$1\n" >"$T/bad.conf"
	run cpa show --config "$T/bad.conf"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: $T/$2"* ]]
}

@test "show: every target of the routing table is an option of its stage" {
	run cpa options
	[ "$status" -eq 0 ]
	checked=0
	while read -r cmd opt value stages as; do
		[ "$cmd" != command ] || continue
		case "$as" in -|!) continue ;; esac
		name=${opt#--}
		[ "$as" = = ] || name=${as%%=*}
		IFS=, read -ra list <<<"$stages"
		for s in "${list[@]}"; do
			[ "$s" != cpa ] || continue
			help=$("cpa-$s" --help)
			if ! grep -qE -- "--$name([=[ ,]|$)" <<<"$help"; then
				echo "cpa options routes $opt to cpa-$s as --$name, which cpa-$s does not take" >&2
				false
			fi
			checked=$((checked + 1))
		done
	done <<<"$output"
	[ "$checked" -gt 80 ]
}

@test "show: README's examples: --last 5m -o FILE, --list" {
	cd "$T"
	run cpa show --last 5m -o last5m.svg
	[ "$status" -eq 0 ]
	[[ "$output" == *"wrote last5m.svg"* ]]
	xmllint --noout last5m.svg
	grep -q '<title>leaf (7 samples' last5m.svg
	# Older than 5 minutes: not in it.
	run ! grep -q '<title>parse ' last5m.svg
	run cpa show --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"$STORE/"*" 1 "* ]]
	[[ "$output" == *"range "* ]]
	[[ "$output" == *"gap "* ]]
}

@test "show: cpa(1)'s example: --format html -o FILE, with the time heatmap" {
	cd "$T"
	from=$(date -d '-25 min' +%H:%M) to=$(date -d '-15 min' +%H:%M)
	run cpa show --from "$from" --to "$to" --comm nginx --format html -o nginx.html
	[ "$status" -eq 0 ]
	grep -q '^<!DOCTYPE html>' nginx.html
	grep -q '"parse"' nginx.html
	run ! grep -q '"loop"' nginx.html
	# Query handed render the stream: the page has the samples' seconds.
	grep -q 'id="heat"' nginx.html
	[[ "$(grep -o 'cols: [0-9]*' nginx.html)" == "cols: 1" ]]
}

@test "show: --top goes to render alone and picks its text view" {
	run cpa show --top 2
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "Total: 15 samples over "* ]]
	[[ "$output" == *"Top 2 by self (samples):"* ]]
	# Two rows under the self heading: leaf (7) then parse (5).
	rows=$(sed -n '/by self/,/^$/p' <<<"$output" | awk 'NR > 2 && NF { print $NF }')
	[ "$(echo $rows)" = "leaf parse" ]
	run cpa show --top 1 --format folded
	[ "$status" -eq 0 ]
	[[ "$output" == *"app;main;run;leaf 7"* ]]
}

@test "show: the same folded output as the equivalent cpa-query pipeline" {
	cpa show --format folded -o "$T/show.folded"
	cpa-query --dir "$STORE" | cpa-render --format folded >"$T/query.folded"
	[ -s "$T/query.folded" ]
	cmp <(sorted "$T/show.folded") <(sorted "$T/query.folded")
}

@test "show: unknown options, and options of monitor, are named in the error" {
	run cpa show --bogus-option
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: unknown option '--bogus-option' (cpa options lists them)" ]]
	run cpa show --retain 3d
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: '--retain' is an option of cpa monitor, not of cpa show" ]]
	run cpa monitor --last 5m
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: '--last' is an option of cpa show, not of cpa monitor" ]]
	run cpa show -Z
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: unknown option '-Z' for cpa show" ]]
	run cpa show --last
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: --last needs a value" ]]
	run cpa show --list=maybe
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: invalid --list 'maybe': expected 1 or 0" ]]
	run cpa show stray
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: unexpected argument 'stray'" ]]
}

@test "show: a failing stage fails cpa show and leaves no output file" {
	run cpa show --from garbage -o "$T/x.svg"
	[ "$status" -eq 1 ]
	[[ "$output" == *"--from"*"garbage"* ]]
	[ ! -e "$T/x.svg" ]
}

@test "config: CPA's 'name: value' lines as well as 'key = value'; the installed default works for show" {
	printf '# CPA style\nread: %s\nshow_range: 1\n' "$STORE" >"$T/cpa-style.conf"
	run cpa show --config "$T/cpa-style.conf"
	[ "$status" -eq 0 ]
	[[ "$output" == *"range "* ]]
	# CPA's -C FILE, and the command line wins over the file.
	run cpa show -C "$T/cpa-style.conf" --show_range 0 --format folded
	[ "$status" -eq 0 ]
	[[ "$output" == *"app;main;run;leaf 7"* ]]
	# The file `make install` puts in /etc/cpa serves monitor and show.
	run cpa show --config "$CPA_SRCDIR/scripts/cpa.conf" --dir "$STORE" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"range "* ]]
	config_rejected "dir = $STORE\nfrobnicate: 3" "bad.conf:2: unknown key 'frobnicate'"
	config_rejected 'list = maybe' "bad.conf:1: invalid value 'maybe' for 'list': expected true or false"
	printf 'debug_option: 1,49,/tmp/x\n' >"$T/bad.conf"
	run cpa monitor --config "$T/bad.conf"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: $T/bad.conf:1: 'debug_option' (CPA) is not available: "* ]]
	config_rejected 'just words' "bad.conf:1: expected 'key = value' or 'key: value'"
}

@test "CPA: --read DIR, -r DIR are --dir" {
	run cpa show --config /dev/null --read "$STORE" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"$STORE/"* ]]
	run cpa show --config /dev/null -r "$STORE" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *"$STORE/"* ]]
}

@test "CPA: --starttime, --endtime (-B, -E) are --from, --to" {
	from=$(date -d '-25 min' +%H:%M:%S) to=$(date -d '-15 min' +%H:%M:%S)
	run cpa show --starttime "$from" --endtime "$to" --format folded
	[ "$status" -eq 0 ]
	folded=$(sort <<<"$output")
	[ "$(paste -sd, <<<"$folded")" = "nginx;main;serve;parse 5,redis;main;loop 3" ]
	run cpa show -B "$from" -E "$to" --format folded
	[ "$status" -eq 0 ]
	folded=$(sort <<<"$output")
	[ "$(paste -sd, <<<"$folded")" = "nginx;main;serve;parse 5,redis;main;loop 3" ]
}

@test "CPA: --show_range, -p, --show_range 1 list the range; --show_range 0 does not" {
	for form in --show_range -p "--show_range 1" --show_range=1; do
		run cpa show $form
		[ "$status" -eq 0 ]
		[[ "${lines[-2]}" == "range "* ]]
	done
	run cpa show --show_range 0 --format folded
	[ "$status" -eq 0 ]
	[[ "$output" == *"app;main;run;leaf 7"* ]]
}

@test "CPA: --output_prof FILE (-o in CPA's docs is cpa's -o) writes folded text as CPA did" {
	cd "$T"
	run cpa show --output_prof cpa.prof
	[ "$status" -eq 0 ]
	folded=$(sort cpa.prof)
	[ "$(paste -sd, <<<"$folded")" = "app;main;run;leaf 7,nginx;main;serve;parse 5,redis;main;loop 3" ]
	# An explicit --format wins.
	cpa show --output_prof p.svg --format svg
	xmllint --noout p.svg
	# -o is cpa's --output: SVG unless --format says otherwise.
	cpa show -o o.svg
	xmllint --noout o.svg
}

@test "CPA: --split_path DIR writes one folded file per window and exits 0" {
	run cpa show --split_path "$T/split"
	[ "$status" -eq 0 ]
	files=("$T"/split/*.folded)
	[ "${#files[@]}" -eq 2 ]
	folded=$(sort "${files[@]}")
	[ "$(paste -sd, <<<"$folded")" = "app;main;run;leaf 7,nginx;main;serve;parse 5,redis;main;loop 3" ]
}

@test "CPA: --use_cui and -G are cpa show --tui (driven in tmux by tui.bats)" {
	run cpa options
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\n'"show     --use_cui            flag   render                 tui"* ]]
	[[ "$output" == *$'\n'"show     --tui                flag   render                 ="* ]]
	# the terminal UI takes no output file, under any of its names
	for form in --tui --use_cui -G "--use_cui 1"; do
		run cpa show $form -o x.svg
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "cpa: --tui draws on the terminal; it takes no -o or --output_prof" ]
	done
	run cpa show --follow
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: --follow goes with --tui" ]
}

@test "CPA: --no_pid, --no_env (-P, -V) are the default; the rest without an equivalent exit 2 saying why" {
	run cpa show --no_pid --no_env -P -V --format folded
	[ "$status" -eq 0 ]
	[[ "$output" == *"app;main;run;leaf 7"* ]]
	# cpa needs no cache of its own (cpa-options.bats has the others)
	run cpa show --use_cache -u --format folded
	[ "$status" -eq 0 ]
	[[ "$output" == *"app;main;run;leaf 7"* ]]
	for opt in "--debug_option 1,2,f"; do
		run cpa monitor $opt
		[ "$status" -eq 2 ]
		[[ "${lines[0]}" == "cpa: --"*" (CPA) is not available: "?* ]]
	done
}

@test "help: cpa CMD --help prints the usage and that command's options, exit 0" {
	run cpa show --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "cpa: run the cpa tools"* ]]
	[[ "$output" == *"show     --last"* ]]
	[[ "$output" != *"monitor  --"* ]]
	run cpa monitor -h
	[ "$status" -eq 0 ]
	[[ "$output" == *"monitor  --freq"* ]]
	[[ "$output" != *"show     --"* ]]
	run cpa --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"cpa show --list"* ]]
}

@test "version: cpa --version is configure's version, in the tree and installed" {
	want=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$CPA_BUILDDIR/config.h")
	[ -n "$want" ]
	run cpa --version
	[ "$status" -eq 0 ]
	[ "$output" = "cpa $want" ]
	make -s -C "$CPA_BUILDDIR" install-exec-local bindir="$T/bin" >/dev/null
	grep -q "^version=$want\$" "$T/bin/cpa"
	run "$T/bin/cpa" --version
	[ "$status" -eq 0 ]
	[ "$output" = "cpa $want" ]
}
