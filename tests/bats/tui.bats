#!/usr/bin/env bats
# cpa-render --tui and `cpa show --tui`, driven in tmux: keys sent with
# send-keys, the screen read with capture-pane, every change awaited by
# polling the screen for what it must show. Stores are generated
# (gen-stream | cpa-store, known processes and stacks) or recorded (real
# capture of chain_fp, whose chain is main;run;level_a;level_b;hot_leaf).
load helper

setup_file() {
	part_built ncurses || return 0
	export TZ=UTC
	export GS=$BATS_FILE_TMPDIR/gen
	# Two processes, proc0 (pid 1000) and proc1 (pid 1001), two minutes
	# from 2026-01-01 10:00:00 UTC, a third of their time off-CPU.
	"$CPA_BUILDDIR/tests/tools/gen-stream" --start 1767261600 --duration 120 \
		--rate 50 --procs 2 --stacks 3 --offcpu 30 --seed 5 |
		cpa-store --dir "$GS"
}

setup() {
	require_part ncurses
	command -v tmux >/dev/null || skip_missing "tmux not installed"
	T=$BATS_TEST_TMPDIR
	SOCK=cpa-tui-$$-$BATS_TEST_NUMBER
}

teardown() {
	tmux -L "$SOCK" kill-server 2>/dev/null || true
	kill_workloads
}

# tui W H CMD...: runs CMD in a W x H tmux window; when it ends, the
# window keeps its exit status and whether the terminal's modes came back.
tui() {
	local w=$1 h=$2; shift 2
	printf '%q ' "$@" >"$T/cmd"
	cat >"$T/run" <<-EOF
		s0=\$(stty -g)
		$(cat "$T/cmd")
		rc=\$?
		[ "\$(stty -g)" = "\$s0" ] && echo "terminal modes restored"
		echo "tui-exit=\$rc"
		exec sleep 600
	EOF
	tmux -L "$SOCK" -f /dev/null new-session -d -s t -x "$w" -y "$h" \
		"env TZ=UTC PATH='$PATH' bash $T/run"
}
screen() { tmux -L "$SOCK" capture-pane -p -t t; }
has() { screen | grep -E -- "$1" >/dev/null; }
# row_has N PATTERN: line N of the screen matches PATTERN.
row_has() { screen | sed -n "$1p" | grep -E -- "$2" >/dev/null; }
# The end of the history, as the status line says it.
range_end() { screen | sed -n 's/^ range [0-9:]*-\([0-9:]*\) .*/\1/p'; }
# see PATTERN: waits until the screen shows PATTERN (extended regex).
see() {
	if ! wait_for 10 has "$1"; then
		screen >&2
		return 1
	fi
}
keys() { tmux -L "$SOCK" send-keys -t t "$@"; }
# The flame graph rows: between the time axis and the detail line.
flame() { screen | sed -n '/^ *[0-9:]\{8\} .* [0-9:]\{8\}$/,$p' | sed '1d;$d' | sed '$d'; }

# stacked FILE FRAME...: FILE's rows have the frames one under the
# other, each at the same column, as a caller above its callee.
stacked() {
	local f=$1; shift
	awk -v chain="$*" '
		{ row[NR] = $0 }
		END {
			n = split(chain, c, " ")
			for (i = 1; i <= NR; i++) {
				col = index(" " row[i] " ", " " c[1] " ")
				if (!col) continue
				ok = 1
				for (k = 2; k <= n && ok; k++)
					ok = substr(row[i + k - 1] " ", col, length(c[k]) + 1) == c[k] " "
				if (ok) exit 0
			}
			exit 1
		}' "$f"
}

# two_procs_drawn: the trend has a bottom row, the flame graph all, then
# the processes of the generated stores, then main.
two_procs_drawn() {
	has '^ +0C [|#]+'
	run flame
	[ "${lines[0]}" = all ]
	[[ "${lines[1]}" == *proc0*proc1* ]]
	[[ "${lines[2]}" == main*main* ]]
}

@test "tui: the trend, the window's flame graph, detail and status lines" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see '^ range 10:00:00-10:02:00 \| window 10:00:00 \+2m \| oncpu'
	# CPU trend with cores on the axis and the window marked under it
	has '^CPU trend: user \| and system # \(oncpu\)  Sel: 2026-01-01 10:00:00 - 10:02:00 \(2m\)'
	has '^ +2\.00C'
	has '^ +\[=+\]$'
	two_procs_drawn
	# detail of the selection (all): samples, shares, cores
	has '^all +[0-9,]+ samples \| View:100\.0% All:[0-9.]+% \| [0-9.]+C \| D:0/'
	keys q
	see 'tui-exit=0'
}

@test "tui: the hot function of a recorded workload appears; moving the window past the workload's end makes it disappear" {
	require_bpf
	# the whole host, stored; chain_fp spins 4 s once the capture has
	# attached, and the capture runs until the store has 5 s after that
	( cpa-capture 2>"$T/capture.err" 3>&- & echo $! >"$T/cpid"; wait ) |
		cpa-unwind 2>"$T/unwind.err" | cpa-store --dir "$T/rec" --flush 1s &
	pipeline=$!
	WL_BG_PIDS="$pipeline"
	wait_for 60 grep -q '^cpa-capture: kernel ' "$T/capture.err"
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 4
	ws=$(date +%s)
	wait_for 60 stored_after "$T/rec" $((ws + 9))
	kill -INT "$(cat "$T/cpid")"
	wait "$pipeline"
	tui 160 45 cpa-render --tui -- cpa-query --dir "$T/rec"
	see '^ range '
	# only the workload; a two-second window while it spins
	keys : "pid $WL_PID" Enter
	see "filters pid $WL_PID"
	# (its first second may still be unnamed: cpa-unwind loads the
	# program's symbols off the samples' path)
	keys R "@$((ws + 2)) @$((ws + 4))" Enter
	see "window [0-9:]+ \\+2s"
	see 'hot_leaf'
	run flame
	[[ "${lines[1]}" == chain_fp* ]]
	flame >"$T/flame"
	stacked "$T/flame" main run level_a level_b hot_leaf
	# two spans on: the workload ended four seconds after it started
	keys t t
	see "window $(date -d "@$((ws + 6))" +%T) \\+2s"
	see 'no oncpu samples in this window .* that pass the filters'
	run ! has 'hot_leaf'
	keys q
	see 'tui-exit=0'
}

@test "tui: a filter hides another process, its negation the other, unset both" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see 'proc0.*proc1'
	keys : "commv proc1" Enter
	see 'filters commv proc1'
	run flame
	[[ "${lines[1]}" == proc0* ]]
	[[ "${lines[1]}" != *proc1* ]]
	keys : "unset comm" Enter
	see 'filters none'
	keys : "pid 1001" Enter
	see 'filters pid 1001'
	run flame
	[[ "${lines[1]}" == proc1* ]]
	[[ "${lines[1]}" != *proc0* ]]
	# a bad command says so, and changes nothing
	keys : "pid x1" Enter
	see "^ pid: 'x1' is not a list of process ids \| range"
	run flame
	[[ "${lines[1]}" == proc1* ]]
	[[ "${lines[1]}" != *proc0* ]]
	keys : unset Enter
	see 'filters none'
	see 'proc0.*proc1'
}

@test "tui: Enter zooms into the selected frame, Esc restores the view" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see 'proc0.*proc1'
	flame >"$T/before"
	# down to the widest process, along to the other one, zoom
	keys j
	see '^proc[01] +[0-9,]+ samples \| View:'
	keys l
	keys h
	first=$(screen | awk '/samples \| View:/ { print $1 }')
	keys Enter
	see "^$first +[0-9,]+ samples \\| View:100\\.0%"
	run flame
	[[ "${lines[1]}" == "$first"* ]]
	[ "$(grep -c proc "$T/before")" -ge 1 ]
	[[ "${lines[1]}" != *proc0*proc1* ]]
	keys Escape
	see 'proc0.*proc1'
	flame >"$T/after"
	diff "$T/before" "$T/after"
}

@test "tui: a resize redraws to the new size" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see '^ range '
	row_has 40 '^ range'
	tmux -L "$SOCK" resize-window -t t -x 70 -y 25
	wait_for 10 row_has 25 '^ range'
	# the status line fills the new width, the axis ends at its edge
	screen >"$T/screen"
	status_line=$(sed -n 25p "$T/screen")
	[ "${#status_line}" -eq 70 ]
	has '^ +[0-9:]{8} +10:02:00$'
	widest=$(wc -L <"$T/screen")
	[ "$widest" -le 70 ]
}

@test "tui: q exits 0 and gives the terminal back" {
	tui 100 30 cpa-render --tui -- cpa-query --dir "$GS"
	see '^ range '
	keys q
	see 'tui-exit=0'
	has 'terminal modes restored'
	# the UI's screen is gone: the shell's lines are on a plain screen
	run ! has 'CPU trend'
}

@test "tui: a bad store is a message on the screen, not a crash" {
	echo junk >"$T/notadir"
	tui 100 30 cpa-render --tui -- cpa-query --dir "$T/notadir"
	see "cpa-query: $T/notadir: Not a directory"
	keys q
	see 'tui-exit=1'
	has 'terminal modes restored'
}

@test "tui: an empty range and an empty store say so on the screen" {
	tui 100 30 cpa-render --tui --from '2026-01-01 11:00' --to '2026-01-01 11:05' -- \
		cpa-query --dir "$GS"
	see 'no oncpu samples in this window \(11:00:00 \.\. 11:05:00\)'
	keys q
	see 'tui-exit=0'
	tmux -L "$SOCK" kill-server
	mkdir "$T/empty"
	tui 100 30 cpa-render --tui -- cpa-query --dir "$T/empty"
	see 'no samples: the store holds nothing yet'
}

@test "tui: every kind in its unit: off-CPU in seconds per second" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see 'oncpu \| labels'
	keys e
	see 'offcpu-blocked \| labels'
	has '^trend \(offcpu-blocked\)'
	# the root is the kind's marker; weights are times
	run flame
	[[ "${lines[1]}" == "off-CPU blocked"* ]]
	has '^all +[0-9.]+ (s|ms) \| View:100\.0% All:100\.00% \| [0-9.]+ s/s \|'
	keys : "kind oncpu" Enter
	see 'oncpu \| labels'
	has '^all +[0-9,]+ samples'
}

@test "tui: memory in bytes, frees netted against their stack; a stream read from a file" {
	# app1 allocates 4 KiB and frees 1 KiB of it, app2 holds 8 KiB;
	# on-CPU samples too, so e has a kind to move to
	printf '%s\n' \
		'1767261600000000000 mem-usage 1 1 0 app1 app1 4096 main;grow' \
		'1767261600100000000 mem-usage+free 1 1 0 app1 app1 1024 main;grow' \
		'1767261600200000000 mem-usage 2 2 0 app2 app2 8192 main;leak' \
		'1767261601200000000 oncpu 2 2 0 app2 app2 3 main;spin' |
		"$CPA_BUILDDIR/tests/tools/mkstream" >"$T/mem.cpa"
	tui 100 30 cpa-render --tui "$T/mem.cpa"
	see '^all +3 samples \|'
	keys e
	see '^trend \(mem-usage\)'
	run flame
	[ "${lines[1]}" = "memory usage" ]
	[[ "${lines[2]}" == app1*app2 ]]
	[[ "${lines[4]}" == grow*leak ]]
	has '^all +11\.00 KiB \| View:100\.0% All:100\.00% \| [0-9.]+ B/s \|'
	# the widest process first, then the one to its left
	keys j j
	see '^app2 +8\.00 KiB \|'
	keys h
	see '^app1 +3\.00 KiB \|'
	keys q
	see 'tui-exit=0'
}

@test "tui: root labels toggle, the callee view inverts, kernel-only keeps kernel frames" {
	tui 160 40 cpa-render --tui -- cpa-query --dir "$GS"
	see 'labels comm \|'
	keys P
	see 'labels comm,pid \|'
	run flame
	[[ "${lines[2]}" == "[pid 1000]"*"[pid 1001]"* ]]
	keys M
	see 'labels pid \|'
	run flame
	[[ "${lines[1]}" == "[pid 1000]"*"[pid 1001]"* ]]
	keys C H
	see 'labels pid,thread,cpu \|'
	keys I
	see 'oncpu callee \|'
	# leaves at the root: no process or main right under all
	run flame
	[[ "${lines[1]}" != *main* ]]
	[[ "${lines[1]}" != *"[pid"* ]]
	keys I C H O
	see 'oncpu kernel-only \| labels pid \|'
	# under each process its kernel frames, and [user] for the samples
	# that had none
	run flame
	[[ "${lines[2]}" == *"[user]"* ]]
	[[ "${lines[2]}" == *"ksys_fn_"*"_[k]"* ]]
	run ! has '(^| )(main|fn_[0-9]+) '
}

@test "tui: / highlights frames and says how much matched; ? shows the keys" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see '^ range '
	keys / "^proc1$" Enter
	see 'matched [0-9.]+%'
	pct=$(screen | sed -n 's/.*matched \([0-9.]*\)%.*/\1/p')
	# proc1 is about half of the samples
	awk -v p="$pct" 'BEGIN { exit !(p > 30 && p < 70) }'
	keys '?'
	see 'cpa-render --tui: keys'
	has 'caller / callee \(inverted\) view'
	keys x
	gone 'cpa-render --tui: keys'
}

# gone PATTERN: waits until the screen no longer shows PATTERN.
gone() {
	local i
	for i in $(seq 200); do
		if ! has "$1"; then
			return 0
		fi
		sleep 0.05
	done
	screen >&2
	return 1
}

@test "tui: c shows the store's conf, o the filters set" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see '^ range '
	keys c
	see "conf: the store's meta"
	has '\| history 2026-01-01 10:00:00 \.\. 2026-01-01 10:02:00 +\|'
	has '\| [0-9]+ CPUs, windows of 1 s +\|'
	has '\| +frequency 100 +\|'
	has '\| +interval_ns 1000000000 +\|'
	keys x
	gone "conf: the store's meta"
	keys o
	see "filters, as the ':' commands that set them"
	has 'none: every sample of the kind is shown'
	keys x
	gone 'filters, as the'
	keys : "commv proc1" Enter
	see 'filters commv proc1'
	keys : "cpu 0-3" Enter
	see 'filters comm.*cpu 0-3'
	keys o
	see '\| +commv proc1 +\|'
	has '\| +cpu 0-3 +\|'
	run ! has 'none: every sample'
	keys q
	see 'tui-exit=0'
}

@test "tui: X merges a module's unnamed addresses, U merges IRQ-off gaps across CPUs" {
	{
		t=1767261600000000000
		echo "$t oncpu 1 1 0 app app 5 main;libfoo.so+0x1a2b"
		echo "$t oncpu 1 1 0 app app 3 main;libfoo.so+0x2c00"
		echo "$t oncpu 1 1 0 app app 1 main;named_fn"
		echo "$t irqoff 1 1 0 app app 4000000 main;spin_lock_irq_[k]"
		echo "$t irqoff 1 1 1 app app 6000000 main;spin_lock_irq_[k]"
	} | "$CPA_BUILDDIR/tests/tools/mkstream" >"$T/x.cpa"
	tui 120 40 cpa-render --tui "$T/x.cpa"
	see '^all +9 samples \|'
	has 'libfoo\.so\+0x1a2b'
	keys X
	see 'unnamed addresses merged per module'
	see 'libfoo\.so\+<\.\.\.>'
	run ! has 'libfoo\.so\+0x'
	# the merged frame holds both addresses' samples
	keys j j j
	see '^libfoo\.so\+<\.\.\.> +8 samples \|'
	keys X
	see 'libfoo\.so\+0x1a2b'
	# IRQ-off gaps under their CPU, as CPA draws them, until U
	keys e
	see '^trend \(irqoff\)'
	run flame
	[ "${lines[1]}" = "IRQ off" ]
	[[ "${lines[3]}" == *"[cpu 0]"* ]]
	[[ "${lines[3]}" == *"[cpu 1]"* ]]
	keys U
	see 'IRQ-off gaps merged across CPUs'
	run flame
	[[ "${lines[3]}" == main* ]]
	run ! has '\[cpu [01]\]'
	keys U
	see 'IRQ-off gaps parted by CPU'
	see '\[cpu 0\]'
	keys q
	see 'tui-exit=0'
}

@test "tui: the window moves by its span, narrows, widens, jumps, shows all" {
	tui 120 40 cpa-render --tui -- cpa-query --dir "$GS"
	see 'window 10:00:00 \+2m'
	keys S
	see 'window 10:00:00 \+1m \|'
	keys t
	see 'window 10:01:00 \+1m \|'
	keys S S
	see 'window 10:01:00 \+15s \|'
	keys T
	see 'window 10:00:45 \+15s \|'
	keys J 10:01:30 Enter
	see 'window 10:01:30 \+15s \|'
	keys s
	see 'window 10:01:30 \+30s \|'
	keys 0
	see 'window 10:00:00 \+2m \|'
	keys R "10:00:10 10:00:20" Enter
	see 'window 10:00:10 \+10s \|'
	keys 9
	see 'window 10:00:00 \+2m \|'
}

@test "tui: 0 on hours of history draws them from cpa-query's sums, not from every sample" {
	set -o pipefail
	# three hours from 2026-01-01 10:00:00 UTC, two processes; the query
	# command is logged, so the test sees what the UI asked for
	"$CPA_BUILDDIR/tests/tools/gen-stream" --start 1767261600 --duration 10800 \
		--rate 20 --procs 2 --stacks 3 --offcpu 30 --seed 9 |
		cpa-store --dir "$T/long"
	printf '#!/bin/sh\necho "$*" >>"%s"\nexec cpa-query "$@"\n' "$T/log" >"$T/q"
	chmod +x "$T/q"
	# the samples of all on-CPU stacks, and of proc0's, as 151,264
	sum() { cpa-query --dir "$T/long" --kind oncpu --labels none "$@" |
		awk '{ n += $NF } END { print n }' |
		sed ':a; s/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/; ta'; }
	oncpu=$(sum)
	p0=$(sum --pid 1000)
	tui 120 40 cpa-render --tui -- "$T/q" --dir "$T/long"
	see 'window 12:50:00 \+10m \|'
	keys 0
	see 'window 10:00:00 \+3h \|'
	two_procs_drawn
	see "^all +$oncpu samples \| View:100\.0%"
	# the trend in sums per column (23 s) and side, the window in one
	# sum per stack cut to what 120 columns draw: samples were asked for
	# the first screen's half hour alone
	grep -- '--split-every 23000000000ns --labels none --stacks side$' "$T/log"
	grep -- '--to @1767272400.000000000 --split-every 10800000000000ns --labels comm --prune 240$' "$T/log"
	run grep -v -e --split-every -e --list "$T/log"
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == *"--from @1767270600.000000000 --to @1767272400.000000000" ]]
	# zoomed into one of the two processes, half the width is what the
	# cut sums had: the window is asked for again, cut finer
	keys j Enter
	see '^proc[01] +[0-9,]+ samples \| View:100\.0%'
	wait_for 10 grep -q -- '--labels comm --prune 1024$' "$T/log"
	keys Escape k
	see 'proc0.*proc1'
	see "^all +$oncpu samples"
	# a filter asks again with the field it tests
	keys : "pid 1000" Enter
	see "^all +$p0 samples"
	grep -- '--labels pid --stacks side' "$T/log"
	run flame
	[[ "${lines[1]}" == *proc0* ]]
	[[ "${lines[1]}" != *proc1* ]]
	# the callee view's sums are cut from the leaf, and add up the same
	keys I
	see 'oncpu callee \|'
	grep -E -- '--prune [0-9]+ --callee$' "$T/log"
	see "^all +$p0 samples"
	# and the kernel-only view's from the stacks' kernel frames alone
	keys I O
	see 'oncpu kernel-only \|'
	grep -E -- '--stacks kernel --prune [0-9]+$' "$T/log"
	see "^all +$p0 samples"
	run flame
	[[ "${lines[2]}" == *"[user]"* ]]
	[[ "${lines[2]}" == *"_[k]"* ]]
	keys q
	see 'tui-exit=0'
}

@test "tui: --follow shows new windows as cpa-store commits them" {
	start=$(( $(date +%s) - 5 ))
	"$CPA_BUILDDIR/tests/tools/gen-stream" --start "$start" --duration 60 \
		--rate 20 --procs 1 --stacks 2 --pace 1000 2>/dev/null |
		cpa-store --dir "$T/live" --flush 1s 2>"$T/store.err" &
	WL_BG_PIDS="$!"
	wait_for 20 store_has_range "$T/live"
	tui 120 40 cpa-render --tui --follow -- cpa-query --dir "$T/live"
	see 'oncpu follow \|'
	end1=$(range_end)
	[ -n "$end1" ]
	# the end of the history moves on as windows are committed
	wait_for 20 end_moved
	has 'proc0'
}

# stored_after DIR EPOCH: the store has samples from EPOCH on.
stored_after() {
	local out
	out=$(cpa-query --dir "$1" --from "@$2") || return 1
	[ -n "$out" ]
}

store_has_range() {
	local out
	out=$(cpa-query --dir "$1" --list) || return 1
	grep '^range ' <<<"$out" >/dev/null
}

end_moved() {
	local e
	e=$(range_end)
	[ -n "$e" ] || return 1
	[ "$e" != "$end1" ]
}

@test "cpa show --tui, and CPA's --use_cui and -G, open the terminal UI" {
	printf 'dir = %s\n' "$GS" >"$T/cpa.conf"
	for form in --tui -G "--use_cui 1"; do
		# shellcheck disable=SC2086
		tui 120 40 env CPA_CONFIG="$T/cpa.conf" cpa show $form --from '2026-01-01 10:00:30' --pid 1000
		see 'window 10:00:30 \+1m30s'
		run flame
		[[ "${lines[1]}" == proc0* ]]
		[[ "${lines[1]}" != *proc1* ]]
		keys q
		see 'tui-exit=0'
		tmux -L "$SOCK" kill-server
	done
	run cpa show --tui -o x.svg
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "cpa: --tui draws on the terminal; it takes no -o or --output_prof" ]]
}

@test "tui: cpa-render refuses what --tui cannot do, with status 2" {
	run cpa-render --tui --format html
	[ "$status" -eq 2 ]
	[[ "$output" == *"--tui draws on the terminal; it takes no --output or --format"* ]]
	run cpa-render --tui --follow
	[ "$status" -eq 2 ]
	[[ "$output" == *"--follow needs the query command after --"* ]]
	run cpa-render -- cpa-query --dir x
	[ "$status" -eq 2 ]
	[[ "$output" == *"arguments after -- are the query command of --tui"* ]]
}
