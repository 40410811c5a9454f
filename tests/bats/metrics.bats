#!/usr/bin/env bats
# /metrics in Prometheus's text format, read back by Debian's prometheus:
# cpa monitor's textfile (through node_exporter's textfile collector)
# and cpa-serve's /metrics, scraped every second by one prometheus of the
# suite's own (config and data under the suite's directory, loopback
# ports, stopped by pid). Real BPF capture of a known workload, a push
# stage into a ClickHouse of the suite's own; promtool checks each
# exposition.
load helper
load serve_helper
load fleet_helper

F=$BATS_FILE_TMPDIR

prom_url() { cat "$F/prom.url"; }

# prom_value EXPR: the value of the first series EXPR gives now, or
# nothing.
prom_value() {
	curl -sfG "$(prom_url)/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[0].value[1] // empty'
}

# prom_true EXPR: EXPR (a comparison) holds for some series.
prom_true() {
	local v
	v=$(prom_value "$1") || return 1
	[ -n "$v" ]
}

ne_up() { curl -sf "http://127.0.0.1:$(cat "$F/ne.port")/metrics" >/dev/null; }
prom_ready() { curl -sf "$(prom_url)/-/ready" >/dev/null; }

setup_file() {
	require_bpf
	require_serve_tools
	require_clickhouse
	command -v prometheus >/dev/null || skip_missing "prometheus (Debian package prometheus)"
	command -v prometheus-node-exporter >/dev/null ||
		skip_missing "prometheus-node-exporter (Debian package)"
	export CPA_RUN_DIR=$F/run CPA_CONFIG=$F/none.conf CPA_STATS_INTERVAL=1s
	local ne prom
	# the push stage's ClickHouse
	start_server "$F/ch"
	start_workload "$F/wl.out" "$WL/chain_fp" --seconds 120
	echo "$WL_PID" >"$F/wl.pid"
	cpa monitor --dir "$F/store" --flush 1s --push "$(cat "$F/ch/url")" \
		--batch-wait 300ms 2>"$F/monitor.err" 3>&- &
	echo $! >"$F/monitor.pid"
	serve_start "$F/serve"
	echo "$SERVE_PID" >"$F/serve.pid"
	ne=$(free_port)
	echo "$ne" >"$F/ne.port"
	prometheus-node-exporter --web.listen-address="127.0.0.1:$ne" \
		--collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$CPA_RUN_DIR" \
		>"$F/ne.log" 2>&1 3>&- &
	echo $! >"$F/ne.pid"
	prom=$(free_port)
	echo "http://127.0.0.1:$prom" >"$F/prom.url"
	cat >"$F/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: cpa-monitor
    static_configs:
      - targets: ['127.0.0.1:$ne']
  - job_name: cpa-serve
    static_configs:
      - targets: ['${SERVE_URL#http://}']
EOF
	prometheus --config.file="$F/prometheus.yml" \
		--storage.tsdb.path="$F/prom-data" \
		--web.listen-address="127.0.0.1:$prom" >"$F/prom.log" 2>&1 3>&- &
	echo $! >"$F/prom.pid"
	wait_for 20 ne_up
	wait_for 30 prom_ready
	# every stage (and the supervisor) has reported into the textfile,
	# and prometheus has it
	wait_for 60 prom_true 'count(cpa_stage_last_report_timestamp_seconds) == 5'
	wait_for 60 prom_true 'cpa_samples_total{kind="oncpu"} > 0'
}

teardown_file() {
	local p
	for p in prom ne monitor wl serve; do
		[ -f "$F/$p.pid" ] && kill "$(cat "$F/$p.pid")" 2>/dev/null
	done
	for p in prom ne monitor serve; do
		[ -f "$F/$p.pid" ] && wait_for 30 pid_gone "$(cat "$F/$p.pid")"
	done
	ch_stop "$F/ch"
	return 0
}

@test "metrics: cpa monitor's textfile and cpa-serve's /metrics pass promtool" {
	command -v promtool >/dev/null || skip_missing "promtool (Debian package prometheus)"
	promtool check metrics <"$CPA_RUN_DIR/metrics.prom"
	curl -sSf "$SERVE_URL/metrics" >"$BATS_TEST_TMPDIR/serve.prom"
	promtool check metrics <"$BATS_TEST_TMPDIR/serve.prom"
	# the format's conventions: a HELP and a TYPE line before each
	# family's samples, counters in _total, no unit but base units
	for f in "$CPA_RUN_DIR/metrics.prom" "$BATS_TEST_TMPDIR/serve.prom"; do
		run ! grep -E '^cpa_[a-z_]*(_ms|_ns|_kb|_us)(_total)?[{ ]' "$f"
		run ! grep -vE '^(# (HELP|TYPE) cpa_|cpa_)' "$f"
		awk '/^# TYPE .* counter$/ && $3 !~ /_total$/ { print; bad = 1 }
			END { exit bad }' "$f"
	done
}

@test "metrics: samples per second by kind, against the workload's one busy core" {
	local rate busy
	wait_for 30 prom_true 'rate(cpa_samples_total{kind="oncpu"}[5s]) > 0'
	rate=$(prom_value 'rate(cpa_samples_total{kind="oncpu"}[5s])')
	# 49 Hz on each of the CPUs: the workload's core at least (less the
	# share a loaded machine takes from it), at most every CPU's
	busy=$(nproc)
	awk -v r="$rate" -v n="$busy" 'BEGIN { exit !(r >= 49 * 0.4 && r <= 49 * n * 1.2) }'
	# each kind the capture counts is a series of its own
	prom_true 'cpa_samples_total{kind="offcpu-blocked"} >= 0'
	prom_true 'cpa_lost_samples_total{stage="capture",reason="ringbuf"} >= 0'
	prom_true 'cpa_lost_samples_total{stage="store",reason="backlog"} >= 0'
}

@test "metrics: the unwind latency histogram, ring and pipe fill, store bytes" {
	# cumulative buckets, +Inf the count, a median between 1 us and 1 s
	prom_true 'cpa_unwind_latency_seconds_count > 0'
	prom_true 'cpa_unwind_latency_seconds_bucket{le="+Inf"} - ignoring(le) cpa_unwind_latency_seconds_count == 0'
	prom_true 'histogram_quantile(0.5, rate(cpa_unwind_latency_seconds_bucket[10s])) > 1e-6'
	prom_true 'histogram_quantile(0.5, rate(cpa_unwind_latency_seconds_bucket[10s])) < 1'
	prom_true 'cpa_unwind_latency_seconds_sum > 0'
	prom_true 'cpa_ring_size_bytes >= 4194304'
	prom_true 'cpa_ring_used_peak_bytes <= on() cpa_ring_size_bytes'
	prom_true 'cpa_stage_input_pipe_capacity_bytes{stage="unwind"} >= 4096'
	prom_true 'cpa_stage_input_pipe_bytes{stage="store"} <= on(stage) cpa_stage_input_pipe_capacity_bytes{stage="store"}'
	# the store's size, against the files its directory holds (a few
	# seconds' writes apart)
	local bytes disk
	bytes=$(prom_value 'cpa_store_size_bytes')
	disk=$(find "$F/store" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
	awk -v b="$bytes" -v d="$disk" 'BEGIN { exit !(b > 0 && b >= d * 0.5 && b <= d * 1.5) }'
	prom_true 'rate(cpa_store_written_bytes_total[5s]) > 0'
}

@test "metrics: each stage's CPU and RSS, against /proc" {
	local st pid rss kb
	for st in capture unwind store push supervise; do
		prom_true "cpa_stage_cpu_seconds_total{stage=\"$st\"} >= 0"
	done
	prom_true 'cpa_stage_cpu_seconds_total{stage="unwind"} > 0'
	for st in capture unwind; do
		pid=$(sed -n "s/^$st=//p" "$CPA_RUN_DIR/stages")
		kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
		rss=$(prom_value "cpa_stage_resident_memory_bytes{stage=\"$st\"}")
		awk -v r="$rss" -v k="$kb" 'BEGIN { exit !(r >= k * 1024 * 0.5 && r <= k * 1024 * 2) }'
	done
	prom_true 'cpa_stage_up{stage="store"} == 1'
}

@test "metrics: push lag and rows, against ClickHouse's own count" {
	local rows held
	wait_for 60 prom_true 'cpa_push_rows_total > 0'
	rows=$(prom_value 'cpa_push_rows_total')
	held=$(ch_sql "$F/ch" "SELECT count() FROM cpa.samples")
	# what it says it inserted, ClickHouse holds (and more since)
	[ "$rows" -le "$held" ]
	prom_true 'cpa_push_lag_seconds < 30'
	prom_true 'time() - cpa_push_acked_timestamp_seconds < 30'
}

@test "metrics: cpa-serve's requests and process" {
	prom_true 'up{job="cpa-serve"} == 1'
	prom_true 'up{job="cpa-monitor"} == 1'
	wait_for 20 prom_true 'cpa_serve_requests_total{class="2xx"} > 0'
	prom_true 'cpa_serve_resident_memory_bytes > 0'
	prom_true 'cpa_serve_jobs_active == 0'
}

@test "metrics: a stage killed is a restart, and the textfile goes with the monitor" {
	local pid
	pid=$(sed -n 's/^unwind=//p' "$CPA_RUN_DIR/stages")
	kill -KILL "$pid"
	wait_for 30 prom_true 'cpa_monitor_restarts_total == 1'
	# the restarted stages report again
	wait_for 30 prom_true 'cpa_stage_up{stage="unwind"} == 1'
	kill -TERM "$(cat "$F/monitor.pid")"
	wait_for 30 pid_gone "$(cat "$F/monitor.pid")"
	[ ! -e "$CPA_RUN_DIR/metrics.prom" ]
}
