#!/usr/bin/env bats
# cpa-supervise and its stage table: every running stage holds exactly its
# row's capabilities, docs/security.md and the systemd units say what the
# table says, options are checked before anything starts, --duration
# bounds a run that keeps restarting, and the watchdog blames the stage
# whose samples stand still while its input waits, not the stage it holds
# up. Real captures of known workloads, as `cpa monitor` runs them.
load helper
load monitor_helper
load serve_helper

teardown() {
	serve_stop
	[ -n "${MON:-}" ] && kill -TERM "$MON" 2>/dev/null && wait "$MON" 2>/dev/null
	kill_workloads
}

# row STAGE FIELD: a field of the stage's line in `cpa-supervise --stages`
# (1 name, 2 tool, 3 capability names, 4 mask, 5 user, 6 stats, 7 restart)
row() { cpa-supervise --stages | awk -v s="$1" -v f="$2" '$1 == s { print $f }'; }

# expected_mask STAGE: the row's mask, less what this test's own bounding
# set lacks (capabilities are only ever reduced)
expected_mask() {
	local bnd
	bnd=$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)
	printf '%016x' $(( 0x$(row "$1" 4) & 0x$bnd ))
}

# check_caps STAGE PID: CapEff, CapPrm and CapBnd of PID are the row's,
# CapAmb is empty, and it runs as the row's user
check_caps() {
	local want set got
	want=$(expected_mask "$1")
	for set in CapEff CapPrm CapBnd; do
		got=$(awk -v k="$set:" '$1 == k { print $2 }' "/proc/$2/status")
		echo "$1 $set $got (table: $want)"
		[ "$got" = "$want" ]
	done
	[ "$(awk '$1 == "CapAmb:" { print $2 }' "/proc/$2/status")" = 0000000000000000 ]
	[ "$1" = supervise ] || grep -qx 'NoNewPrivs:	1' "/proc/$2/status"
	local uid=0
	[ "$(row "$1" 5)" != service ] || ! id -u "${CPA_STORE_USER:-cpa}" >/dev/null 2>&1 ||
		uid=$(id -u "${CPA_STORE_USER:-cpa}")
	[ "$(awk '$1 == "Uid:" { print $2 }' "/proc/$2/status")" = "$uid" ]
}

@test "stages: each running stage of cpa monitor and of a one-shot holds its row's capability sets" {
	require_bpf
	sleep 60 3>&- &
	WL_BG_PIDS=$!
	start_monitor --pid $!
	for stage in capture unwind store; do
		wait_for 10 stage_runs "$stage"
		check_caps "$stage" "$(stage_pid "$stage")"
	done
	check_caps supervise "$MON"
	kill -TERM "$MON"
	wait "$MON"
	MON=""
	# a one-shot's render, while capture records
	cpa monitor --oneshot --pid "$WL_BG_PIDS" -o "$T/one.svg" 2>"$T/one.err" 3>&- &
	MON=$!
	wait_for 10 pgrep -P "$MON" -x cpa-render >/dev/null
	check_caps render "$(pgrep -P "$MON" -x cpa-render)"
}

@test "stages: a cpa-serve job's capture and unwind hold the same rows as cpa monitor's" {
	require_bpf
	require_serve_tools
	sleep 60 3>&- &
	WL_BG_PIDS=$!
	serve_start "$T/serve"
	id=$(new_job "$(job_body cpu c oncpu pid 30 ",\"pid\":$WL_BG_PIDS")")
	wait_for 30 job_attached "$id" || { cat "$SERVE_DIR/state/jobs/$id/log"; false; }
	# server -> launcher -> cpa-supervise -> capture, unwind
	launcher=$(pgrep -P "$SERVE_PID" -x cpa-serve-jobs)
	sup=$(pgrep -P "$launcher" -x cpa-supervise)
	check_caps supervise "$sup"
	for stage in capture unwind; do
		check_caps "$stage" "$(pgrep -P "$sup" -x "cpa-$stage")"
	done
	serve_stop
}

@test "stages: the table's capability names are the kernel's, as setpriv reads them back" {
	require_bpf
	for stage in capture unwind store render query; do
		names=$(row "$stage" 3)
		[ "$names" != - ] || names="[none]"
		run cpa-supervise --exec-as="$stage" setpriv --dump
		[ "$status" -eq 0 ]
		bnd=$(sed -n 's/^Capability bounding set: //p' <<<"$output" | tr , '\n' | sort | paste -sd,)
		want=$(tr , '\n' <<<"$names" | sort | paste -sd,)
		# this machine's own bounding set may lack some
		have=$(setpriv --dump | sed -n 's/^Capability bounding set: //p' | tr , '\n')
		want=$(tr , '\n' <<<"$want" | grep -Fxf <(echo "$have"; echo "[none]") | paste -sd,)
		echo "$stage: setpriv says $bnd, the table $want"
		[ "$bnd" = "${want:-[none]}" ]
	done
}

@test "stages: docs/security.md's table and the units' bounding sets are the stage table" {
	run cpa-supervise --stages=markdown
	[ "$status" -eq 0 ]
	table=$output
	doc=$(sed -n '/^<!-- stage table: /,/^<!-- end of stage table -->/p' "$CPA_SRCDIR/docs/security.md" | sed '1d;$d')
	[ -n "$doc" ]
	if [ "$doc" != "$table" ]; then
		diff <(echo "$doc") <(echo "$table") || true
		echo "docs/security.md: replace the stage table by cpa-supervise --stages=markdown" >&2
		false
	fi
	want=$(row supervise 3 | tr , '\n' | tr a-z A-Z | sed 's/^/CAP_/' | sort | paste -sd' ')
	for unit in cpa.service cpa-serve.service; do
		got=$(sed -n 's/^CapabilityBoundingSet=//p' "$CPA_SRCDIR/scripts/$unit" | tr ' ' '\n' | sort | paste -sd' ')
		echo "$unit: $got"
		[ "$got" = "$want" ]
	done
}

@test "stages: every row's tool takes --check, which a run asks of it before it starts" {
	while read -r name tool _; do
		[ "$name" != supervise ] || continue
		run "$tool" --help
		[ "$status" -eq 0 ]
		echo "$name: $tool"
		[[ "$output" == *"--check "* ]]
	done < <(cpa-supervise --stages)
}

@test "config errors: --freq 0, --record_interval 0, --pid abc and a config's freq: 0 exit 2 at once, nothing started, no restart" {
	for bad in "--freq 0" "--record_interval 0" "--pid abc"; do
		run cpa monitor -s "$STORE" -d 4 $bad
		echo "$bad: $output"
		[ "$status" -eq 2 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "${lines[0]}" == cpa-*": invalid --"* ]]
		[ ! -e "$STORE" ]
		[ ! -e "$CPA_RUN_DIR/stages" ]
	done
	printf 'freq: 0\n' >"$T/cpa.conf"
	run cpa monitor --config "$T/cpa.conf" -s "$STORE" -d 4
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa-capture: invalid --freq '0': expected an integer from 1 to 1000" ]
	[ ! -e "$STORE" ]
}

@test "config errors: CPA's quoted value freq: \"49\" is 49" {
	require_bpf
	printf 'freq: "49"\nstore_dir: '"'%s'"'\n' "$STORE" >"$T/cpa.conf"
	cpa monitor --config "$T/cpa.conf" --flush 1s 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
	[[ " $(stage_args capture) " == *" --freq=49 "* ]]
	[[ " $(stage_args store) " == *" --dir=$STORE "* ]]
}

@test "config errors: a stage that exits 2 at start is reported once and not restarted" {
	require_bpf
	# --no-check: the stage itself meets the bad value, as a stage would
	# one its --check cannot see
	run cpa-supervise --no-check --stage=capture --freq=0 --stage=unwind \
		--stage=store "--dir=$STORE"
	echo "$output"
	[ "$status" -eq 2 ]
	[ "$(grep -c "invalid --freq '0'" <<<"$output")" -eq 1 ]
	[[ "$output" == *"capture stage refused its configuration (status 2); not restarting"* ]]
	run ! grep -q restart <<<"$(grep -v 'not restarting' <<<"$output")"
}

@test "duration: -d bounds a run whose store keeps failing, restarts and back-off included" {
	require_bpf
	# a store that cannot create its directory ends at once, each time
	: >"$T/file"
	start=$(date +%s)
	run timeout 30 cpa monitor -d 4 --dir "$T/file/store" --pid $$
	took=$(( $(date +%s) - start ))
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"store stage ended (status 1); restarting the pipeline"* ]]
	[[ "$output" == *"--duration 4 reached"* ]]
	# backing off 1, 2, 4 s it would have started again past the end
	[ "$took" -lt 10 ]
	[ ! -e "$CPA_RUN_DIR/monitor.pid" ]
}

# fake_unwind DIR: DIR holds a copy of cpa-supervise with the real
# capture and store beside it, and an unwind stage that reports its
# statistics every interval but never reads its input: counters alive,
# samples standing still
fake_unwind() {
	mkdir -p "$1"
	cp "$(command -v cpa-supervise)" "$1/"
	ln -s "$(command -v cpa-capture)" "$1/cpa-capture"
	ln -s "$(command -v cpa-store)" "$1/cpa-store"
	cat >"$1/cpa-unwind" <<'EOF'
#!/bin/bash
for a; do case $a in --stats-file=*) f=${a#*=} ;; --check) exit 0 ;; esac; done
trap 'exit 0' INT TERM
while [ ! -e "${0%/*}/../quit" ]; do
	printf 'tool=cpa-unwind\npid=%d\ntime_ns=%s\nsamples=0\nsamples_in=0\nsamples_out=0\n' $$ "$(date +%s%N)" >"$f.tmp"
	mv "$f.tmp" "$f"
	sleep 0.5
done
EOF
	chmod +x "$1/cpa-unwind"
}

@test "watchdog: a stage that reports but moves no samples while its input waits is the one restarted" {
	require_bpf
	fake_unwind "$T/bin"
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	"$T/bin/cpa-supervise" --stats-interval=1s --watchdog=2 \
		--stage=capture --pid="$WL_PID" --freq=199 --stage=unwind \
		--stage=store "--dir=$STORE" 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 30 grep -q 'restarting the pipeline' "$T/monitor.err" || { cat "$T/monitor.err"; false; }
	grep 'hung' "$T/monitor.err"
	grep -q 'unwind stage hung: no samples moved for [0-9]*s while its input waited' "$T/monitor.err"
	run ! grep -q 'capture stage hung' "$T/monitor.err"
	# the stand-in reads nothing, so it never sees its input end
	touch "$T/quit"
	kill -TERM "$MON"
	wait "$MON"
	MON=""
}
