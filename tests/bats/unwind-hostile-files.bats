#!/usr/bin/env bats
# cpa-unwind against files a process chooses to be hostile: a
# .gnu_debuglink naming a FIFO, a mapped file swapped for a FIFO, and a
# container whose mapped file becomes an absolute symlink to a host file.
# Each runs the real pipeline (cpa-capture | cpa-unwind) over the hostile
# process and a second workload with a known chain, with cpa-unwind under
# the capabilities cpa monitor gives it (so /proc/PID/map_files is
# refused, as in production), and asserts that the other workload keeps
# flowing, what the profile names, and the counter of what was refused.
# The crafting code is in tests/hostile/, built here.
bats_require_minimum_version 1.5.0
load helper

GOOD_CHAIN='main;run;level_a;level_b;hot_leaf'
# cpa monitor's unwind stage, as the stage table gives it: no CAP_SYS_ADMIN
UNWIND_CAPS=(cpa-supervise --exec-as=unwind)

setup_file() {
	B=$BATS_FILE_TMPDIR
	local src=$CPA_SRCDIR/tests/hostile
	local cflags=(-O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
		-fno-inline -fno-optimize-sibling-calls)
	cc "${cflags[@]}" -o "$B/swap_mapper" "$src/swap_mapper.c" -ldl
	# Both objects carry the same (forged) build id: the mapping record
	# then has the id and no inode, and the id matches the host file, so
	# only where and how the path is opened can protect the profile.
	local id=-Wl,--build-id=0x5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed
	cc "${cflags[@]}" -shared -fPIC "$id" -o "$B/libswap.so" "$src/swap_lib.c"
	cc "${cflags[@]}" -shared -fPIC "$id" -DNAME_PREFIX=host_ \
		-o "$B/libsecret.so" "$src/swap_lib.c"
}

setup() {
	require_bpf
	T=$BATS_TEST_TMPDIR
	B=$BATS_FILE_TMPDIR
	PIPE_PIDS=""
	UNWIND_OPTS=()
}

teardown() {
	local p
	# cpa-unwind outlives SIGTERM (it waits for upstream's end), and a
	# stage stuck on a FIFO would stay so
	for p in $PIPE_PIDS; do kill -KILL "$p" 2>/dev/null || true; done
	for p in $PIPE_PIDS; do wait "$p" 2>/dev/null || true; done
	kill_workloads
}

# weight PATTERN FILE: total weight of the folded lines matching PATTERN
weight() {
	awk -v pat="$1" '$0 ~ pat { n = split($0, f, " "); s += f[n] } END { print s + 0 }' "$2"
}

good_weight() {
	weight "^chain_nofp;.*;$GOOD_CHAIN " "$T/out.folded"
}

# start_pipeline PIDS SECONDS: cpa-capture of PIDS into cpa-unwind, both in
# the background, folded text in $T/out.folded, --stats in $T/unwind.stats.
start_pipeline() {
	mkfifo "$T/pipe"
	cpa-capture --pid "$1" --duration "$2" --freq 199 >"$T/pipe" 2>"$T/capture.err" &
	CAP_PID=$!
	"${UNWIND_CAPS[@]}" cpa-unwind --folded --stats "${UNWIND_OPTS[@]}" <"$T/pipe" \
		>"$T/out.folded" 2>"$T/unwind.stats" &
	UNWIND_PID=$!
	PIPE_PIDS="$CAP_PID $UNWIND_PID"
	wait_for 10 grep -q 'backend' "$T/capture.err"
}

# The hostile object's frames come out (cpa-unwind got past it, where
# before it waited forever), and the other workload's named chain keeps
# coming after them: 10 more samples within 4 s (at 199 Hz, far fewer
# than it gets even on a loaded machine).
assert_flows_past() {
	wait_for 6 grep -q "$1" "$T/out.folded"
	local before
	before=$(good_weight)
	echo "good workload before: $before"
	wait_for 4 test_weight_above "$before"
}

test_weight_above() {
	[ "$(good_weight)" -ge $(($1 + 10)) ]
}

# finish: ends the capture (SIGTERM: a clean end record), waits for the
# pipeline to drain and shows what it wrote
finish() {
	kill -TERM "$CAP_PID"
	wait "$CAP_PID"
	wait "$UNWIND_PID"
	PIPE_PIDS=""
	sort "$T/out.folded" | sed -n 1,20p
	cat "$T/unwind.stats"
}

hostile_start() {
	start_workload "$T/hostile.wl" "$@"
	HOSTILE_PID=$WL_PID
	start_workload "$T/good.wl" "$WL/chain_nofp" --seconds 30
	GOOD_PID=$WL_PID
	start_pipeline "$HOSTILE_PID,$GOOD_PID" 30
	# the hostile mapping appears while capture records (side-band)
	kill -USR1 "$HOSTILE_PID"
	wait_for 5 grep -q '^mapped' "$T/hostile.wl"
}

@test "a .gnu_debuglink naming a FIFO: refused, the object named from itself, the pipeline flows" {
	mkdir "$T/a"
	cp "$B/libswap.so" "$T/a/libswap.so"
	: >"$T/a/libswap.debug"
	objcopy --add-gnu-debuglink="$T/a/libswap.debug" "$T/a/libswap.so"
	rm "$T/a/libswap.debug"
	mkfifo "$T/a/libswap.debug"
	hostile_start "$B/swap_mapper" --seconds 30 "$T/a/libswap.so"
	assert_flows_past '^swap_mapper;.*;main;run_lib;spin_outer;spin_leaf '
	finish
	grep -Eq 'files refused .*not-regular=[1-9]' "$T/unwind.stats"
}

@test "a mapped file swapped for a FIFO: refused, module+offset frames, the pipeline flows" {
	mkdir "$T/b"
	cp "$B/libswap.so" "$T/b/libswap.so"
	hostile_start "$B/swap_mapper" --seconds 30 --swap-fifo "$T/b/libswap.so"
	assert_flows_past '^swap_mapper;.*;main;run_lib;libswap\.so+0x[0-9a-f]'
	finish
	run ! grep -q 'spin_leaf' "$T/out.folded"
	grep -Eq 'files refused .*not-regular=[1-9]' "$T/unwind.stats"
}

# A root of its own in a mount namespace: the program, its libraries and
# libswap.so exist only there. Once loaded, libswap.so becomes a symlink
# to the host's libsecret.so, which has the same code (and build id) under
# host_* names.
container_symlink_case() {
	command -v unshare >/dev/null || skip_missing "unshare (util-linux) not installed"
	mkdir "$T/croot"
	hostile_start unshare --mount --propagation private bash -c '
		set -eo pipefail
		mount -t tmpfs none "$0"
		mkdir -p "$0/bin" "$0/lib"
		cp "$1/swap_mapper" "$0/bin/swap_mapper"
		cp "$1/libswap.so" "$0/lib/libswap.so"
		libs=$(ldd "$1/swap_mapper" | grep -o "/[^ ]*")
		for f in $libs; do
			mkdir -p "$0${f%/*}"
			cp "$f" "$0$f"
		done
		exec chroot "$0" /bin/swap_mapper --seconds 30 --swap-link "$2" /lib/libswap.so
	' "$T/croot" "$B" "$B/libsecret.so"
	# nothing of the container's root is visible on the host
	[ ! -e "$T/croot/bin/swap_mapper" ]
	assert_flows_past '^swap_mapper;.*;main;run_lib;libswap\.so+0x[0-9a-f]'
	finish
	# the host file's symbols never appear
	run ! grep -q 'host_' "$T/out.folded"
	# the program itself, inside its root, is named
	[ "$(weight '^swap_mapper;.*;main;run_lib;' "$T/out.folded")" -ge 20 ]
	grep -Eq 'elf failures .*elf-open=[1-9]' "$T/unwind.stats"
}

@test "a container's absolute symlink to a host file: resolved in its root, no host symbols" {
	container_symlink_case
}

@test "the same without openat2: the component walk keeps the path in the root" {
	export CPA_UNWIND_RESOLVE_WALK=1
	container_symlink_case
}

# slow_object_start UNWIND_OPTION...: a process spinning in an object of
# 2M symbols (allowed by --max-object: seconds to load) and the other
# workload, captured for 60 s into cpa-unwind with these options
slow_object_start() {
	"$CPA_BUILDDIR/tests/hostile/hostile-elf" --symbols 2000000 "$T/syms.so"
	start_workload "$T/hostile.wl" "$CPA_BUILDDIR/tests/hostile/hostile-spin" "$T/syms.so"
	HOSTILE_PID=$WL_PID
	start_workload "$T/good.wl" "$WL/chain_nofp" --seconds 60
	GOOD_PID=$WL_PID
	UNWIND_OPTS=(--max-object 1G --load-wait 50ms "$@")
	start_pipeline "$HOSTILE_PID,$GOOD_PID" 60
}

@test "an object slow to load delays only its own names: unnamed while loading, named after" {
	slow_object_start
	# its frames come out unnamed while it loads: the sample path did
	# not wait for it, and the other workload keeps its names
	assert_flows_past '^hostile-spin;.*syms\.so+0x1000[ ;]'
	# later samples get its names
	wait_for 60 grep -q '^hostile-spin;.*main;enter_hostile;hostile_spin ' "$T/out.folded"
	finish
	grep -Eq 'elf cache .*still-loading=[1-9]' "$T/unwind.stats"
	grep -Eq 'elf cache .*loads=[1-9]' "$T/unwind.stats"
}

@test "an object slow to load, unloaded by --max-cache, loads again off the sample path" {
	# a cache smaller than the slow object alone: every sample that used
	# it is followed by its unloading, and the next one reloads it
	slow_object_start --max-cache 16M
	# loaded once (and unloaded at once)
	wait_for 60 grep -q '^hostile-spin;.*main;enter_hostile;hostile_spin ' "$T/out.folded"
	# while it loads again, for seconds each time, the other workload
	# keeps its names: 10 more samples in each of the next three 2 s
	local i before
	for i in 1 2 3; do
		before=$(good_weight)
		echo "good workload before span $i: $before"
		wait_for 2 test_weight_above "$before"
	done
	finish
	grep -Eq 'elf cache .*unloads=[1-9]' "$T/unwind.stats"
	grep -Eq 'elf cache .*reloads=[1-9]' "$T/unwind.stats"
	grep -Eq 'elf cache .*still-loading=[1-9]' "$T/unwind.stats"
}
