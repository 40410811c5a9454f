# Shared by apiserver*.bats: one ClickHouse server of the suite's own
# (fleet_helper.bash), real nodes (cpa-serve --hostname NAME --publish
# URL on loopback ports of their own), misbehaving ones (tests/tools/
# fake-node), and the apiserver (cpa-serve --fleet) driving them through
# --nodes. Load after helper, store_helper, fleet_helper, serve_helper.

# The misbehaving nodes, as host names f-MODE.
FAKE_MODES="garbage silent slow pending lost regress capacity invalid badcode mismatch unauth"

# api_fleet_clickhouse: the server in $CH/s1, the fleet's schema in it;
# sets CH_URL.
api_fleet_clickhouse() {
	local h t
	CH=$BATS_FILE_TMPDIR/ch
	h=$(free_port) t=$(free_port)
	ch_config "$CH/s1" "$h" "$t" "$t"
	ch_start "$CH/s1"
	CH_URL=$(cat "$CH/s1/url")
	cpa-push --clickhouse "$CH_URL" --init
	export CH CH_URL
}

# node_port NAME: the loopback port node NAME serves on.
node_port() {
	sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$BATS_FILE_TMPDIR/$1.log" | tail -1
}

# node_start NAME [OPTION...]: a real node, its state in $F/NAME, its
# token the apiserver's administrator's.
node_start() {
	local F=$BATS_FILE_TMPDIR name=$1
	shift
	: >"$F/$name.log"
	cpa-serve --listen 127.0.0.1:0 --token-file "$F/api/token" \
		--state-dir "$F/$name" --hostname "$name" --publish "$CH_URL" \
		--max-jobs-per-target 4 "$@" 2>>"$F/$name.log" 3>&- &
	echo $! >"$F/$name.pid"
	wait_for 20 grep -q 'serving on' "$F/$name.log"
}

node_stop() {
	local pid
	pid=$(cat "$BATS_FILE_TMPDIR/$1.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# fake_nodes: one tests/tools/fake-node per mode, host name f-MODE.
fake_nodes() {
	local F=$BATS_FILE_TMPDIR m
	# shellcheck disable=SC2086
	python3 "$CPA_SRCDIR/tests/tools/fake-node" "$F" $FAKE_MODES \
		2>"$F/fake-node.log" 3>&- &
	echo $! >"$F/fake-node.pid"
	for m in $FAKE_MODES; do wait_for 20 test -s "$F/f-$m.port"; done
}

# nodes_file NAME...: the --nodes file of the real nodes NAME and the
# fake ones.
nodes_file() {
	local F=$BATS_FILE_TMPDIR n m
	: >"$F/nodes"
	for n in "$@"; do echo "$n 127.0.0.1:$(node_port "$n")" >>"$F/nodes"; done
	for m in $FAKE_MODES; do
		[ -s "$F/f-$m.port" ] && echo "f-$m 127.0.0.1:$(cat "$F/f-$m.port")" >>"$F/nodes"
	done
	return 0
}

# The apiserver's own options: fast polls and short windows, so that
# the decision table's deadlines pass within a test.
API_OPTS=(--fleet --nodes "$BATS_FILE_TMPDIR/nodes" --node-poll 200ms
	--node-timeout 2s --node-unavailable 3 --pending-timeout 3
	--stop-timeout 5 --max-jobs-per-target 3)

# api_start [OPTION...]: the apiserver, with serve_start (SERVE_URL,
# TOKEN; its state in $F/api), stopped by api_fleet_teardown.
api_start() {
	serve_start "$BATS_FILE_TMPDIR/api" --clickhouse "$CH_URL" \
		"${API_OPTS[@]}" "$@"
	# for api_fleet_teardown: one a test starts is not the file's
	echo "$SERVE_PID" >"$BATS_FILE_TMPDIR/apiserver.pid"
}

# fleet_job HOST TYPE MODE DURATION [MORE]: a job on HOST through the
# apiserver, scope pid $WLPID unless MORE says otherwise; its id.
fleet_job() {
	new_job "$(printf '{"type":"%s","language":"c","mode":"%s","scope":"pid","pid":%s,"duration_seconds":%s,"hostname":"%s"%s}' \
		"$2" "$3" "${WLPID:-1}" "$4" "$1" "${5:-}")"
}

# raw_of ID: the job's raw windows as folded lines, summed per stack.
raw_of() {
	raw_folded "$1" | awk '{ n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n }
		END { for (l in s) printf "%s %d\n", l, s[l] }' | LC_ALL=C sort
}

# node_windows NAME ID: the same of the node's own windows of the job
# (the files its local raw pages send).
node_windows() {
	local f
	for f in "$BATS_FILE_TMPDIR/$1/jobs/$2/windows/"*.json; do
		jq -r '.profile as $p |
			($p.function | map({key: (.id | tostring), value: $p.string_table[.name]}) | from_entries) as $fn |
			($p.location | map({key: (.id | tostring), value: $fn[.line[0].function_id | tostring]}) | from_entries) as $loc |
			$p.sample[] | "\([.location_id[] | tostring | $loc[.]] | reverse | join(";")) \(.value[0])"' "$f"
	done | awk '{ n = $NF; sub(/ [0-9]+$/, ""); s[$0] += n }
		END { for (l in s) printf "%s %d\n", l, s[l] }' | LC_ALL=C sort
}

api_fleet_teardown() {
	local F=$BATS_FILE_TMPDIR p
	serve_stop
	for p in "$F"/*.pid; do
		[ -f "$p" ] || continue
		case "$p" in */pid) continue ;; esac
		kill "$(cat "$p")" 2>/dev/null || true
	done
	for p in "$F"/*.pid; do
		[ -f "$p" ] && wait "$(cat "$p")" 2>/dev/null
	done
	[ -n "${CH:-}" ] && ch_stop "$CH/s1"
	return 0
}

# syn_hosts: three hosts' continuous history in ClickHouse, syn-1 to
# syn-3, each two minutes of a synthetic store (gen-stream, a tenth
# off-CPU) pushed by cpa-push --once; the range in $F/syn.range
# ("FROM_S TO_S").
syn_hosts() {
	local F=$BATS_FILE_TMPDIR i t0
	t0=$(( $(date +%s) / 60 * 60 - 600 ))
	for i in 1 2 3; do
		"$CPA_BUILDDIR/tests/tools/gen-stream" --start "$t0" --duration 120 \
			--rate 100 --stacks 200 --procs 4 --offcpu 10 --seed "$i" |
			cpa-store --dir "$F/syn-$i" 2>/dev/null
		cpa-push --clickhouse "$CH_URL" --dir "$F/syn-$i" --host "syn-$i" \
			--once
	done
	echo "$t0 $((t0 + 120))" >"$F/syn.range"
}

# pyq METHOD ARG...: tests/tools/pyroscope-query against the apiserver.
pyq() {
	/usr/bin/python3 "$CPA_SRCDIR/tests/tools/pyroscope-query" "$SERVE_URL" "$@"
}

# require_protobuf: protoc and Debian's python3-protobuf.
require_protobuf() {
	command -v protoc >/dev/null || skip_missing "protoc (Debian package protobuf-compiler)"
	/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null ||
		skip_missing "python3-protobuf"
}

# pb_body FILE PYTHON: the bytes a Python expression makes of the test's
# messages (pb, tests/data/pyroscope.proto), into FILE.
pb_body() {
	local out=$BATS_TEST_TMPDIR/pb
	mkdir -p "$out"
	protoc -I "$CPA_SRCDIR/tests/data" --python_out "$out" \
		"$CPA_SRCDIR/tests/data/pyroscope.proto"
	PYTHONPATH=$out /usr/bin/python3 -c "
import sys, pyroscope_pb2 as pb
def tag(n, w): return bytes([n << 3 | w])
def ld(n, b):
    l, v = b'', len(b)
    while True:
        l += bytes([(v & 0x7f) | (0x80 if v > 0x7f else 0)])
        v >>= 7
        if not v: break
    return tag(n, 2) + l + b
sys.stdout.buffer.write($2)" >"$1"
}

# querier_post METHOD FILE [TOKEN]: the status of a POST of FILE's bytes
# to the apiserver's HUATUO path; the body in $BATS_TEST_TMPDIR/body.
querier_post() {
	curl -sS -o "$BATS_TEST_TMPDIR/body" -w '%{http_code}' \
		-H "Authorization: Bearer ${3:-$TOKEN}" \
		-H 'Content-Type: application/proto' --data-binary "@$2" \
		"$SERVE_URL/v1/profiling/flamegraph/querier.v1.QuerierService/$1"
}
