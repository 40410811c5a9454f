# The load test of cpa-serve (serve-load-long.bats, make check-long):
# 50 clients on loopback
# poll the job list, a running job and the capabilities while a real job
# runs; every answer must be 200, the server must live, and its memory
# stay flat. Prints requests per second (docs/performance.md).

setup() {
	serve_setup
}

teardown() {
	serve_stop
	kill_workloads
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# poll_round N: N requests over 50 parallel connections, one status code
# per line in $T/codes.
poll_round() {
	local n=$1 i
	: >"$T/urls"
	for ((i = 0; i < n; i++)); do
		case $((i % 3)) in
		0) echo "url = \"$SERVE_URL/v1/profiling\"" ;;
		1) echo "url = \"$SERVE_URL/v1/profiling/$JOB\"" ;;
		2) echo "url = \"$SERVE_URL/v1/profiling/capabilities\"" ;;
		esac
		echo 'output = "/dev/null"'
	done >>"$T/urls"
	curl -sS -Z --parallel-max 50 -H "Authorization: Bearer $TOKEN" \
		-w '%{http_code}\n' -K "$T/urls" >>"$T/codes"
}

# load_test SECONDS
load_test() {
	local seconds=$1 start end n rss0 rss1
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds $((seconds + 30))
	serve_start "$T/serve" --threads 4
	JOB=$(new_job "$(job_body cpu c oncpu pid $((seconds + 20)) ",\"pid\":$WL_PID")")
	wait_for 60 job_attached "$JOB"
	: >"$T/codes"
	poll_round 500		# warm up: threads, connections, allocator
	rss0=$(rss_kb "$SERVE_PID")
	: >"$T/codes"
	start=$(date +%s%N)
	end=$((start + seconds * 1000000000))
	while [ "$(date +%s%N)" -lt "$end" ]; do
		poll_round 1000
	done
	n=$(wc -l <"$T/codes")
	local ns=$(( $(date +%s%N) - start ))
	rss1=$(rss_kb "$SERVE_PID")
	echo "requests: $n in $((ns / 1000000)) ms: $(( n * 1000000000 / ns )) requests/s; RSS ${rss0} kB -> ${rss1} kB" >&3
	# every answer 200, none lost
	run ! grep -v '^200$' "$T/codes"
	[ "$n" -ge 1000 ]
	kill -0 "$SERVE_PID"
	# memory flat: what the polls cost is freed with each answer
	[ "$rss1" -le $((rss0 + 4096)) ]
	# and the job ran on meanwhile, to its end
	[ "$(api POST "/v1/profiling/$JOB/stop")" = 200 ]
	wait_job "$JOB" stopped 60
}
