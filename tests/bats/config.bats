#!/usr/bin/env bats
# The installed config against the command line, as a user types it: the
# command line replaces a config value whatever name either gives it, and
# a config option that does not apply to the command given is ignored,
# where the same option typed is refused. Stores written from folded text;
# the monitor's run is a real capture.
load helper
load monitor_helper

# store DIR WHEN FOLDED: one window of FOLDED at WHEN in the store DIR
store() { printf '%s\n' "$3" | cpa-store --dir "$1" --time "$2"; }

@test "config: cpa show --read OTHER -p lists OTHER alone, not the config's dir too" {
	store "$T/mine" "$(date -d '-30 min' '+%F %T')" 'mine;main;leaf 3'
	store "$T/other" "$(date -d '-10 min' '+%F %T')" 'other;main;leaf 5'
	printf 'dir = %s\n' "$T/mine" >"$T/cpa.conf"
	export CPA_CONFIG=$T/cpa.conf
	run cpa show --read "$T/other" -p
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"$T/other/"* ]]
	[[ "$output" != *"$T/mine"* ]]
	run cpa show -r "$T/other" --last 1h --format folded
	[ "$status" -eq 0 ]
	[ "$output" = "other;main;leaf 5" ]
	# and without one on the command line, the config's
	run cpa show --last 1h --format folded
	[ "$output" = "mine;main;leaf 3" ]
}

@test "config: the one-shot's output options in the config are ignored by cpa monitor; typed, refused" {
	require_bpf
	printf 'dir = %s\nflush = 1s\noutput_prof = p.prof\ntitle = mine\nformat = folded\n' "$STORE" >"$T/cpa.conf"
	export CPA_CONFIG=$T/cpa.conf
	cd "$T"
	run cpa monitor -d 2 --pid $$
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"--duration 2 reached"* ]]
	[ ! -e p.prof ]
	test -d "$STORE"
	run cpa monitor -d 2 --title mine
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "cpa: -o, --output, --output_prof, --format and --title need --oneshot" ]
}

@test "config: a value typed under another name than the config's replaces it" {
	require_bpf
	# the config says dir, the command line CPA's store_dir (and -F for freq)
	printf 'dir = %s\nfreq = 10\nflush = 1s\n' "$T/config-store" >"$T/cpa.conf"
	export CPA_CONFIG=$T/cpa.conf
	start_monitor_args -s "$STORE" -F 19 --pid $$
	sto=$(stage_args store) cap=$(stage_args capture)
	[[ " $sto " == *" --dir=$STORE "* ]]
	[[ "$sto" != *config-store* ]]
	[[ " $cap " == *" --freq=19 "* ]]
	[[ "$cap" != *--freq=10* ]]
}

start_monitor_args() {
	cpa monitor "$@" 2>"$T/monitor.err" 3>&- &
	MON=$!
	wait_for 20 test -s "$CPA_RUN_DIR/stages"
}
