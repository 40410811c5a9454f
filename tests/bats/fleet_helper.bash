# Shared by fleet*.bats: ClickHouse servers of the suite's own (config,
# ports and data directory under the suite's temporary directory, stopped
# by their pids), hosts that capture known workloads into their own
# stores and push them, and ClickHouse's own answers to compare with.

# require_clickhouse: skips without clickhouse-server, except under CI,
# where scripts/install-deps installs it.
require_clickhouse() {
	command -v clickhouse-server >/dev/null ||
		skip_missing "clickhouse-server (Debian package clickhouse-server)"
	command -v curl >/dev/null || skip_missing "curl"
}

# free_port: a TCP port nothing listens on now, below the kernel's
# ephemeral range, where an outgoing connection could take it before the
# server binds.
free_port() {
	local p lo
	lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range)
	[ "$lo" -gt 21024 ] || lo=61000
	while :; do
		p=$(( 20000 + (RANDOM * 32768 + RANDOM) % (lo - 20000) ))
		if [ -z "$(ss -Hltn "sport = :$p")" ]; then
			echo "$p"
			return
		fi
	done
}

# ch_config DIR HTTP_PORT TCP_PORT SHARD_TCP_PORT...: a server's config
# in DIR, with the cluster cpa_test of one shard per SHARD_TCP_PORT; with
# CH_COMPRESSION=zstd, parts compressed with zstd instead of LZ4 (also
# used by bench/fleet).
ch_config() {
	local d=$1 http=$2 tcp=$3 p
	shift 3
	mkdir -p "$d/data"
	{
		cat <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$d/server.log</log>
    <errorlog>$d/error.log</errorlog><size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  <path>$d/data/</path>
  <tmp_path>$d/data/tmp/</tmp_path>
  <user_files_path>$d/data/user_files/</user_files_path>
  <format_schema_path>$d/data/format_schemas/</format_schema_path>
  <users_config>$d/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <timezone>UTC</timezone>
  <query_log><database>system</database><table>query_log</table>
    <flush_interval_milliseconds>1000</flush_interval_milliseconds></query_log>
EOF
		if [ -n "${CH_COMPRESSION:-}" ]; then
			echo "  <compression><case><method>$CH_COMPRESSION</method></case></compression>"
		fi
		cat <<EOF
  <remote_servers><cpa_test>
EOF
		for p in "$@"; do
			echo "    <shard><replica><host>127.0.0.1</host><port>$p</port></replica></shard>"
		done
		cat <<EOF
  </cpa_test></remote_servers>
</yandex>
EOF
	} >"$d/config.xml"
	cat >"$d/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password>
    <networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
EOF
	echo "http://127.0.0.1:$http" >"$d/url"
}

ch_up() { curl -sf "$(cat "$1/url")/ping" >/dev/null 2>&1; }

# ch_start DIR: starts the server of DIR and waits until it answers.
ch_start() {
	clickhouse-server --config-file="$1/config.xml" >"$1/stdout" 2>&1 3>&- &
	echo $! >"$1/pid"
	wait_for 60 ch_up_or_gone "$1"
	ch_up "$1" && return 0
	echo "clickhouse-server of $1 did not come up:" >&2
	tail -n 5 "$1/error.log" "$1/stdout" >&2 2>/dev/null
	return 1
}

# ch_up_or_gone DIR: the server answers, or it has exited
ch_up_or_gone() { ch_up "$1" || pid_gone "$(cat "$1/pid")"; }

# pid_gone PID: the process has exited (a zombie nobody waited for yet
# counts as gone).
pid_gone() {
	[ ! -e "/proc/$1" ] || grep -q '^[0-9]* (.*) Z ' "/proc/$1/stat" 2>/dev/null
}

# ch_stop DIR: stops the server of DIR by its pid, and waits for its end.
ch_stop() {
	local pid
	[ -f "$1/pid" ] || return 0
	pid=$(cat "$1/pid")
	kill "$pid" 2>/dev/null || true
	wait_for 60 pid_gone "$pid"
	wait "$pid" 2>/dev/null || true
	rm -f "$1/pid"
}

# ch_sql DIR SQL: the server's answer, TSV; fails on an error answer.
ch_sql() {
	curl -sS --fail-with-body "$(cat "$1/url")/" --data-binary "$2"
}

# Two shards behind the Distributed tables of cluster cpa_test, in
# $CH/s1 and $CH/s2; the schema made on each with cpa-push --init.
start_shards() {
	local h1 t1 h2 t2
	CH=$BATS_FILE_TMPDIR/ch
	h1=$(free_port) t1=$(free_port) h2=$(free_port) t2=$(free_port)
	ch_config "$CH/s1" "$h1" "$t1" "$t1" "$t2"
	ch_config "$CH/s2" "$h2" "$t2" "$t1" "$t2"
	ch_start "$CH/s1"
	ch_start "$CH/s2"
	cpa-push --clickhouse "$(cat "$CH/s1/url")" --cluster cpa_test --init
	cpa-push --clickhouse "$(cat "$CH/s2/url")" --cluster cpa_test --init
	export CH
}

# start_server DIR: one server in DIR, no cluster, its schema made by
# cpa-push --init (for suites that need a ClickHouse, not a fleet's).
start_server() {
	local h t
	h=$(free_port) t=$(free_port)
	ch_config "$1" "$h" "$t" "$t"
	ch_start "$1"
	cpa-push --clickhouse "$(cat "$1/url")" --init
}

stop_shards() {
	[ -n "${CH:-}" ] || return 0
	ch_stop "$CH/s1"
	ch_stop "$CH/s2"
}

# The folded lines ClickHouse itself makes of what it holds, for hosts
# matching the SQL condition WHERE (default: all): kind marker and comm
# as cpa-query writes them (lib/labels.h), then the stack's frames.
ch_folded() {
	ch_sql "$CH/s1" "SELECT concat(transform(kind,
		['offcpu-blocked', 'offcpu-preempted', 'offcpu-yielded',
		 'offcpu-delay', 'irqoff', 'mem-virt', 'mem-phys'],
		['off-CPU blocked;', 'scheduling delay (preempted);',
		 'scheduling delay (yielded);', 'scheduling delay;', 'IRQ off;',
		 'memory virtual;', 'memory physical;'], ''),
		if(comm = '', '[unknown]', comm), ';',
		arrayStringConcat(frames, ';')) AS line, sum(value)
	FROM cpa.samples GLOBAL ANY LEFT JOIN
		(SELECT hash AS stack, any(frames) AS frames FROM cpa.stacks
		 GROUP BY hash) USING stack
	WHERE ${1:-1} GROUP BY line FORMAT TSV" | tr '\t' ' ' | LC_ALL=C sort
}

# sum_folded FILE...: the folded lines of all FILEs, summed per line.
sum_folded() {
	cat "$@" | awk '{ n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n }
		END { for (l in s) printf "%s %d\n", l, s[l] }' | LC_ALL=C sort
}

# A host: a pipeline capturing one process into the store $F/NAME.
# host_capture NAME PID SECONDS
host_capture() {
	local F=$BATS_FILE_TMPDIR
	cpa-capture --duration "$3" --pid "$2" 2>"$F/$1.capture.err" 3>&- |
		cpa-unwind 2>"$F/$1.unwind.err" 3>&- |
		cpa-store --dir "$F/$1" --flush 500ms --grace 500ms \
			2>"$F/$1.store.err" 3>&- &
	echo $! >"$F/$1.pipe.pid"
}

# host_push NAME [OPTION...]: cpa-push of the host NAME's store into the
# cluster through shard 1, in the background; its stderr appended to
# $F/NAME.push.err.
host_push() {
	local F=$BATS_FILE_TMPDIR name=$1
	shift
	cpa-push --clickhouse "$(cat "$CH/s1/url")" --cluster cpa_test \
		--dir "$F/$name" --host "$name" --batch-wait 300ms \
		--backoff-max 1s "$@" 2>>"$F/$name.push.err" 3>&- &
	echo $! >"$F/$name.push.pid"
}

host_push_kill() {
	local F=$BATS_FILE_TMPDIR pid
	pid=$(cat "$F/$1.push.pid")
	kill "-${2:-TERM}" "$pid" 2>/dev/null || true
	wait_for 30 pid_gone "$pid"
	wait "$pid" 2>/dev/null || true
}

# The total weight ClickHouse holds of a host, and its store's.
ch_host_total() {
	ch_sql "$CH/s1" "SELECT sum(value) FROM cpa.samples WHERE host = '$1'"
}
local_total() {
	cpa-query --dir "$BATS_FILE_TMPDIR/$1" | awk '{ s += $NF } END { print s + 0 }'
}
host_caught_up() {
	[ "$(ch_host_total "$1")" = "$(local_total "$1")" ]
}
# host_progressed NAME N: more than N rows of NAME, or all of its store's.
host_progressed() {
	host_has_rows "$1" "$2" || host_caught_up "$1"
}
host_has_rows() {
	[ "$(ch_sql "$CH/s1" "SELECT count() FROM cpa.samples WHERE host = '$1'")" -gt "${2:-0}" ]
}

hex64() { od -An -N32 -tx1 /dev/urandom | tr -d ' \n'; }
cgroup2_root() { findmnt -t cgroup2 -n -o TARGET | sed -n 1p; }

# The three hosts: web-1 runs chain_fp, web-2 chain_nofp, db-1 chain_fp
# inside a Docker container's cgroup (its id in $F/container). Their
# names hash to both shards (web-1 to the first, the others to the
# second). Each captures SECONDS into its store and pushes it; mid-stream
# both shards are stopped for OUTAGE seconds, every pusher is killed with
# -9 then, and again once the shards are back. Returns once every host's
# rows in ClickHouse add up to its store's.
# fleet_scenario OUTAGE SECONDS
fleet_scenario() {
	local outage=$1 secs=$2 F=$BATS_FILE_TMPDIR h n id cg
	start_shards
	start_workload "$F/web-1.wl" "$WL/chain_fp" --seconds $((secs + 5))
	echo "$WL_PID" >"$F/web-1.wlpid"
	start_workload "$F/web-2.wl" "$WL/chain_nofp" --seconds $((secs + 5))
	echo "$WL_PID" >"$F/web-2.wlpid"
	id=$(hex64)
	echo "$id" >"$F/container"
	cg=$(cgroup2_root)/system.slice/docker-$id.scope
	mkdir -p "$cg"
	echo "$cg" >"$F/cgroup"
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --seconds "$3"' sh \
		"$cg" "$WL/chain_fp" $((secs + 5)) >"$F/db-1.wl" 2>&1 3>&- &
	wait_for 10 grep -q '^ready ' "$F/db-1.wl"
	awk '/^ready /{print $2; exit}' "$F/db-1.wl" >"$F/db-1.wlpid"
	for h in web-1 web-2 db-1; do
		host_capture "$h" "$(cat "$F/$h.wlpid")" "$secs"
	done
	for h in web-1 web-2 db-1; do host_push "$h"; done
	for h in web-1 web-2 db-1; do wait_for 60 host_has_rows "$h"; done
	# mid-stream: ClickHouse away, every pusher killed while it is
	stop_shards
	for h in web-1 web-2 db-1; do
		host_push_kill "$h" KILL
		host_push "$h"
	done
	sleep "$outage"		# the outage itself, not a wait
	ch_start "$CH/s1"
	ch_start "$CH/s2"
	# inserting again, and killed -9 a second time while catching up,
	# its cursor file lost as if the kill came between an insert and
	# the cursor's rewrite: ClickHouse's own answer must stop it from
	# sending again what it holds
	for h in web-1 web-2 db-1; do
		n=$(ch_sql "$CH/s1" "SELECT count() FROM cpa.samples WHERE host = '$h'")
		wait_for 60 host_progressed "$h" "$n"
		host_push_kill "$h" KILL
		rm -f "$F/$h/push.cursor"
		host_push "$h"
	done
	for h in web-1 web-2 db-1; do wait "$(cat "$F/$h.pipe.pid")"; done
	for h in web-1 web-2 db-1; do wait_for 120 host_caught_up "$h"; done
	for h in web-1 web-2 db-1; do host_push_kill "$h" TERM; done
}

fleet_teardown() {
	local F=$BATS_FILE_TMPDIR p h
	for h in web-1 web-2 db-1 old-1; do
		for p in "$F/$h.push.pid" "$F/$h.wlpid"; do
			[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
		done
	done
	stop_shards
	if [ -f "$F/cgroup" ]; then
		wait_for 10 rmdir "$(cat "$F/cgroup")" 2>/dev/null || true
	fi
	return 0
}

# The checks both fleet suites make after fleet_scenario.

# Each stack's total over both shards is the sum of the hosts' local
# queries, exactly.
check_fleet_totals() {
	local T=$BATS_TEST_TMPDIR F=$BATS_FILE_TMPDIR h
	ch_folded >"$T/fleet"
	for h in web-1 web-2 db-1; do
		cpa-query --dir "$F/$h" >"$T/$h"
		[ -s "$T/$h" ]
	done
	sum_folded "$T/web-1" "$T/web-2" "$T/db-1" >"$T/local"
	grep -q '^chain_fp;.*main;run;level_a;level_b;hot_leaf ' "$T/fleet"
	grep -q '^chain_nofp;' "$T/fleet"
	same_lines "$T/fleet" "$T/local"
}

# No row of a block is there twice (a block's rows are unique by their
# labels, stack and window; a block sent again repeats them all).
check_no_duplicates() {
	local out h
	out=$(ch_sql "$CH/s1" "SELECT count() FROM (SELECT host, pos, time, kind,
		comm, cgroup, env, flags, stack, count() AS c FROM cpa.samples
		GROUP BY host, pos, time, kind, comm, cgroup, env, flags, stack
		HAVING c > 1)")
	[ "$out" = 0 ]
	for h in web-1 web-2 db-1; do
		[ "$(ch_sql "$CH/s1" "SELECT uniqExact(pos) FROM cpa.samples WHERE host = '$h'")" -gt 2 ]
	done
}
