#!/usr/bin/env bats
# A process that poses as a JVM (tests/hostile/fake_jvm.c): it loads a
# libjvm.so whose vmStructs tables describe a code cache over the memory
# it runs in, forged. cpa-unwind reads every JVM's memory it samples
# (docs/unwinding.md, "Java"), so what such a process forges must cost it
# bounded work and show nothing of what it wrote: its samples are cut
# ([truncated]) where its tables stop holding, never named by its forged
# strings, and cpa-unwind goes on. One capture takes both modes, 2 s.
load helper

setup_file() {
	require_bpf
	export T=$BATS_FILE_TMPDIR
	local src=$CPA_SRCDIR/tests/hostile/fake_jvm.c
	cc -O1 -g -DFAKE_LIB -shared -fPIC -o "$T/libjvm.so" "$src"
	cc -O1 -g -o "$T/fake_jvm" "$src" -ldl
	local m
	for m in segmap blob; do
		"$T/fake_jvm" "$T/libjvm.so" "$m" > "$T/$m.out" 2>&1 3>&- &
		echo $! > "$T/$m.pid"
	done
	for m in segmap blob; do
		wait_for 10 grep -q '^ready ' "$T/$m.out"
	done
	cpa-capture --comm fake_jvm --freq 199 --duration 2 2> "$T/cap.err" |
		/usr/bin/time -f '%U %S' -o "$T/cpu" cpa-unwind --folded \
			--labels pid --stats -v --load-wait 2s \
			> "$T/out.folded" 2> "$T/unwind.err"
}

teardown_file() {
	local f
	for f in "$T"/*.pid; do
		[ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
	done
	return 0
}

setup() {
	require_bpf
	[ -x /usr/bin/time ] || skip_missing "GNU time (/usr/bin/time) not installed"
}

# samples_of MODE: the folded lines of that fake JVM, its label cut
samples_of() {
	awk -v pre="[pid $(cat "$T/$1.pid")];" \
		'index($0, pre) == 1 { print substr($0, length(pre) + 1) }' \
		"$T/out.folded" > "$T/$1.folded"
	cat "$T/$1.folded"
}

# cut_roots MODE: samples, and those rooted at [truncated]
cut_roots() {
	samples_of "$1" > /dev/null
	awk '{ t += $NF } /^\[truncated\];/ { c += $NF }
	     END { print t + 0, c + 0 }' "$T/$1.folded"
}

@test "java-hostile: both fake JVMs read as JVMs, cpa-unwind to its end within a second of CPU" {
	cat "$T/unwind.err"
	grep -q "pid $(cat "$T/segmap.pid"): JDK 0 layout read" "$T/unwind.err"
	grep -q "pid $(cat "$T/blob.pid"): JDK 0 layout read" "$T/unwind.err"
	# user and system seconds, for some 800 samples
	awk '{ exit !($1 + $2 < 1) }' "$T/cpu"
}

# (the counters are of both: the blob mode reads its one blob)
@test "java-hostile: a segment map that never reaches a block: every sample cut, no blob read" {
	local t c
	read -r t c < <(cut_roots segmap)
	echo "$c of $t cut"
	[ "$t" -ge 20 ]
	[ "$c" -eq "$t" ]
	grep -E '^  java code +blobs-read=1 ' "$T/unwind.err"
}

@test "java-hostile: a forged nmethod (its frame, debug information and names): cut, unnamed" {
	local t c
	read -r t c < <(cut_roots blob)
	echo "$c of $t cut"
	[ "$t" -ge 20 ]
	[ "$c" -eq "$t" ]
	# the debug information refused, the method's names not read
	grep -E '^  java code .* debug-failures=1 ' "$T/unwind.err"
	run ! grep -q 'Forged' "$T/out.folded"
	sort "$T/blob.folded" | uniq -c | sort -rn | sed -n 1,5p
	# the forged frame's leaf, unnamed (what the frame-pointer chain
	# splices below it, where the capture cut the stack, is no frame)
	grep -q '^\[truncated\];\(.*;\)\?\[unknown\]_\[j\]\( \|;\)' "$T/blob.folded"
}
