#!/usr/bin/env bats
# Each of HUATUO's languages through cpa-serve, on what cpa has: Go
# natively, Python by the BPF walker of CPython's frames, Java CPU from
# the JVM's own memory (the JVMs found by binary_match_path), Java
# object_alloc through cpa's JVMTI agent (the JVM of a pid). Workloads
# with known chains; the jobs run side by side, started in setup_file.
load helper
load serve_helper

F=$BATS_FILE_TMPDIR
JDK17=/usr/lib/jvm/java-17-openjdk-amd64
PYWL=$CPA_SRCDIR/tests/workloads/py_chain.py

post() {	# post NAME JSON: a job, its id in $F/NAME.id
	BATS_TEST_TMPDIR=$F new_job "$2" >"$F/$1.id"
}

ready_pid() {	# ready_pid OUT: the pid a workload printed as "ready PID"
	wait_for 60 grep -q '^ready ' "$1"
	awk '/^ready /{ print $2; exit }' "$1"
}

java_sampling() {	# the job's capture has the JVM's agent sampling
	grep -q "pid $2: Java agent sampling " "$SERVE_DIR/state/jobs/$1/log" 2>/dev/null
}

setup_file() {
	part_built libmicrohttpd || return 0
	require_bpf
	require_serve_tools
	: >"$F/bg.pids"
	serve_start "$F/serve" --max-jobs 8 --max-jobs-per-target 2
	if command -v go >/dev/null; then
		HOME=$F GOCACHE=$F/gocache GOFLAGS=-mod=mod go build -o "$F/go_chain" \
			"$CPA_SRCDIR/tests/workloads/go_chain.go" 2>"$F/go.err"
		"$F/go_chain" 60 >"$F/go.out" 2>&1 3>&- &
		echo $! >>"$F/bg.pids"
		post go "$(job_body cpu go oncpu pid 4 ",\"pid\":$(ready_pid "$F/go.out")")"
	fi
	if [ -x /usr/bin/python3 ]; then
		/usr/bin/python3 "$PYWL" chain 30 >"$F/py.out" 2>&1 3>&- &
		echo $! >>"$F/bg.pids"
		ready_pid "$F/py.out" >"$F/py.pid"
		post py "$(job_body cpu python oncpu pid 4 ",\"pid\":$(cat "$F/py.pid")")"
		wait_for 60 job_attached "$(cat "$F/py.id")"
		kill -USR1 "$(cat "$F/py.pid")"
	fi
	if [ -x "$JDK17/bin/javac" ]; then
		"$JDK17/bin/javac" --release 17 -d "$F/cls" \
			"$CPA_SRCDIR/tests/workloads/JavaChain.java" \
			"$CPA_SRCDIR/tests/workloads/JavaAlloc.java"
		"$JDK17/bin/java" -Xmx64m -XX:+UseSerialGC -XX:CompileCommand=quiet \
			'-XX:CompileCommand=dontinline,cpatest.JavaChain::*' \
			-cp "$F/cls" cpatest.JavaChain 60 >"$F/jc.out" 2>&1 3>&- &
		echo $! >>"$F/bg.pids"
		mkfifo "$F/ja.in"
		( sleep 120 >"$F/ja.in" 3>&- & echo $! >>"$F/bg.pids" )
		"$JDK17/bin/java" -Xmx256m -XX:+UseSerialGC -cp "$F/cls" \
			cpatest.JavaAlloc <"$F/ja.in" >"$F/ja.out" 2>&1 3>&- &
		echo $! >>"$F/bg.pids"
		ready_pid "$F/jc.out" >"$F/jc.pid"
		ready_pid "$F/ja.out" >"$F/ja.pid"
		post jcpu "$(job_body cpu java oncpu host 4 ",\"binary_match_path\":\"$(realpath "$JDK17/bin/java")\"")"
		post jalloc "$(job_body memory java object_alloc pid 10 ",\"pid\":$(cat "$F/ja.pid")")"
		wait_for 60 java_sampling "$(cat "$F/jalloc.id")" "$(cat "$F/ja.pid")"
		echo "ratio 64" >"$F/ja.in"
		wait_for 60 grep -q '^done ratio' "$F/ja.out"
	fi
}

teardown_file() {
	serve_stop
	kill_pids_in "$F/bg.pids"
}

setup() {
	serve_setup
}

@test "languages: go oncpu, natively unwound: the workload's chain in its raw windows" {
	[ -s "$F/go.id" ] || skip_missing "no go toolchain"
	id=$(cat "$F/go.id")
	wait_job "$id" completed
	raw_folded "$id" >"$T/go.folded"
	grep -qE '(^|;)main\.run;main\.levelA;main\.levelB;main\.hotLeaf [0-9]+$' "$T/go.folded"
}

@test "languages: python oncpu, by the BPF walker: the interpreter's own frames" {
	[ -s "$F/py.id" ] || skip_missing "no /usr/bin/python3"
	id=$(cat "$F/py.id")
	wait_job "$id" completed
	raw_folded "$id" >"$T/py.folded"
	grep -qE 'handler \([^)]*py_chain\.py:[0-9]+\)_\[py\];parse \([^)]*py_chain\.py:[0-9]+\)_\[py\]' "$T/py.folded"
	# one window: a Python job's is its whole duration
	[ "$(api GET "/v1/profiling/$id/raw")" = 200 ]
	n=$(jqb '.data.items | length')
	[ "$n" -le 2 ]
	[ "$(jqb -r '.data.items[0].profile.duration_nanos')" = 4000000000 ]
}

@test "languages: java oncpu, the JVMs running binary_match_path: the Java chain, and no other process" {
	[ -s "$F/jcpu.id" ] || skip_missing "openjdk-17-jdk-headless not installed"
	id=$(cat "$F/jcpu.id")
	wait_job "$id" completed
	raw_folded "$id" >"$T/jc.folded"
	grep -qE 'cpatest\.JavaChain\.levelA_\[j\];cpatest\.JavaChain\.levelB_\[j\];cpatest\.JavaChain\.hotLeaf_\[j\]' "$T/jc.folded"
	[ "$(BODY_FILE=$T/jc.txt api GET "/v1/profiling/$id/folded")" = 200 ]
	run ! grep -v '^java;' "$T/jc.txt"
}

@test "languages: java object_alloc, through cpa's JVMTI agent: the allocating methods, in bytes" {
	[ -s "$F/jalloc.id" ] || skip_missing "openjdk-17-jdk-headless not installed"
	id=$(cat "$F/jalloc.id")
	wait_job "$id" completed
	[ "$(api GET "/v1/profiling/$id/raw")" = 200 ]
	[ "$(jqb -r '.data.items[0].profile_type')" = memory:alloc_space:bytes:space:bytes ]
	raw_folded "$id" >"$T/ja.folded"
	grep -qE 'cpatest\.JavaAlloc\.threeParts_\[j\]' "$T/ja.folded"
	grep -qE 'cpatest\.JavaAlloc\.onePart_\[j\]' "$T/ja.folded"
}
