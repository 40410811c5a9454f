# Shared by the cpa-serve suites: a server on a free loopback port with a
# fresh token and state directory, and curl wrappers that keep the status
# code and the body apart. Load after helper.bash.


require_serve_tools() {
	local t
	for t in curl jq; do
		command -v "$t" >/dev/null || skip_missing "$t not installed"
	done
}

# serve_start DIR [OPTIONS...]: starts cpa-serve with its token, state and
# log under DIR; sets SERVE_PID, SERVE_URL, TOKEN, SERVE_DIR.
serve_start() {
	SERVE_DIR=$1; shift
	mkdir -p "$SERVE_DIR"
	if [ ! -f "$SERVE_DIR/token" ]; then
		(umask 077; head -c 24 /dev/urandom | base64 >"$SERVE_DIR/token")
	fi
	TOKEN=$(cat "$SERVE_DIR/token")
	: >"$SERVE_DIR/serve.log"
	cpa-serve --listen 127.0.0.1:0 --token-file "$SERVE_DIR/token" \
		--state-dir "$SERVE_DIR/state" "$@" 2>>"$SERVE_DIR/serve.log" 3>&- &
	SERVE_PID=$!
	wait_for 20 grep -q 'serving on' "$SERVE_DIR/serve.log"
	local port
	port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$SERVE_DIR/serve.log" | tail -1)
	SERVE_URL=http://127.0.0.1:$port
	export SERVE_PID SERVE_URL TOKEN SERVE_DIR
}

# serve_aside: a test starts a server of its own; serve_back stops it
# and goes back to the file's (call it from teardown too).
serve_aside() {
	ASIDE_URL=$SERVE_URL ASIDE_PID=$SERVE_PID ASIDE_DIR=$SERVE_DIR
	SERVE_PID=""
}
serve_back() {
	[ -n "${ASIDE_DIR:-}" ] || return 0
	serve_stop
	SERVE_URL=$ASIDE_URL SERVE_PID=$ASIDE_PID SERVE_DIR=$ASIDE_DIR
	TOKEN=$(cat "$SERVE_DIR/token")
	ASIDE_DIR=""
}

serve_stop() {
	[ -n "${SERVE_PID:-}" ] || return 0
	kill "$SERVE_PID" 2>/dev/null || true
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=""
}

# api METHOD PATH [CURL ARGS...]: the status code on stdout, the body in
# $BODY_FILE (default $BATS_TEST_TMPDIR/body).
api() {
	local method=$1 path=$2; shift 2
	curl -sS -o "${BODY_FILE:-$BATS_TEST_TMPDIR/body}" -w '%{http_code}' \
		-X "$method" -H "Authorization: Bearer $TOKEN" "$@" "$SERVE_URL$path"
}

body() { cat "${BODY_FILE:-$BATS_TEST_TMPDIR/body}"; }

# job_body TYPE LANGUAGE MODE SCOPE DURATION [MORE FIELDS]: a create body
# for this host, in HUATUO's fields (MORE: ',"pid":N' and the like).
job_body() {
	printf '{"type":"%s","language":"%s","mode":"%s","scope":"%s","duration_seconds":%s,"hostname":"%s"%s}' \
		"$1" "$2" "$3" "$4" "$5" "$(hostname)" "${6:-}"
}

# new_job JSON: posts a job, expects 201, prints its request_id.
new_job() {
	local code
	code=$(BODY_FILE=$BATS_TEST_TMPDIR/new api POST /v1/profiling \
		-H 'Content-Type: application/json' -d "$1")
	if [ "$code" != 201 ]; then
		echo "POST /v1/profiling $1: $code $(cat "$BATS_TEST_TMPDIR/new")" >&2
		return 1
	fi
	jq -re .data.request_id "$BATS_TEST_TMPDIR/new"
}

job_record() {
	curl -sS -H "Authorization: Bearer $TOKEN" "$SERVE_URL/v1/profiling/$1"
}

job_status() { job_record "$1" | jq -r .data.status; }

job_has_status() {	# job_has_status ID STATUS
	[ "$(job_status "$1")" = "$2" ]
}

# job_attached ID: the job's capture has its BPF programs attached (it
# reports the kernel's features once it has).
job_attached() {
	grep -q 'backend ' "$SERVE_DIR/state/jobs/$1/log" 2>/dev/null
}

job_ended() { job_has_status "$1" terminal; }

# wait_job ID OUTCOME [TIMEOUT]: waits for the job to be terminal, and
# requires its outcome (the record is printed when it is not).
wait_job() {
	wait_for "${3:-40}" job_ended "$1"
	local rec
	rec=$(job_record "$1")
	if [ "$(jq -r .data.terminal.outcome <<<"$rec")" != "$2" ]; then
		echo "job $1 ended as: $rec" >&2
		cat "$SERVE_DIR/state/jobs/$1/log" >&2
		return 1
	fi
}

# raw_folded ID: the job's raw windows, every page, as folded lines
# (frames root first, the first value of each sample), one per sample.
raw_folded() {
	local off=0 more=true
	while [ "$more" = true ]; do
		BODY_FILE=$BATS_TEST_TMPDIR/rawpage api GET "/v1/profiling/$1/raw?limit=100&offset=$off" >/dev/null
		jq -r '.data.items[].profile as $p |
			($p.function | map({key: (.id | tostring), value: $p.string_table[.name]}) | from_entries) as $fn |
			($p.location | map({key: (.id | tostring), value: $fn[.line[0].function_id | tostring]}) | from_entries) as $loc |
			$p.sample[] | "\([.location_id[] | tostring | $loc[.]] | reverse | join(";")) \(.value[0])"' \
			"$BATS_TEST_TMPDIR/rawpage"
		more=$(jq -r .data.has_more "$BATS_TEST_TMPDIR/rawpage")
		off=$((off + 100))
	done
}

# pprof_flat FILE: each function's own weight (the first sample type)
# as go tool pprof reads the profile, "NAME COUNT" sorted; names whole,
# as -raw gives them (its other views shorten C++ and Python names).
pprof_flat() {
	HOME=$BATS_TEST_TMPDIR go tool pprof -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { part = "s"; getline; next }
		/^Locations/ { part = "l"; next }
		/^Mappings/ { part = "" }
		part == "s" && /:/ { split($0, kv, ":"); split(kv[1], v, " ");
			split(kv[2], ids, " "); flat[ids[1]] += v[1] }
		part == "l" && /^ *[0-9]+: / {
			id = $1; sub(/:$/, "", id)
			if (match($0, / s=0\(.*\)$/))
				name = substr($0, RSTART + 5, RLENGTH - 6)
			else { name = $0; sub(/^ *[0-9]+: [^ ]+ (M=[0-9]+ )?/, "", name); sub(/ :[0-9]+ s=0$/, "", name) }
			names[id] = name }
		END { for (id in flat) if (flat[id]) print names[id], flat[id] }' | sort
}

# folded_flat FILE: the same of folded lines.
folded_flat() {
	awk '{ n = $NF; $NF = ""; sub(/ $/, ""); k = split($0, fr, ";"); flat[fr[k]] += n }
		END { for (f in flat) if (flat[f]) print f, flat[f] }' "$1" | sort
}

# jqb ARGS...: jq on the last answer's body.
jqb() { jq "$@" "${BODY_FILE:-$BATS_TEST_TMPDIR/body}"; }

# Each test: BPF and the HTTP tools, T its directory.
serve_setup() {
	require_part libmicrohttpd
	require_bpf
	require_serve_tools
	T=$BATS_TEST_TMPDIR
}

kill_pids_in() {	# kill_pids_in FILE: the background workloads listed in FILE
	local p
	for p in $(cat "$1" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
	for p in $(cat "$1" 2>/dev/null); do wait "$p" 2>/dev/null || true; done
}
