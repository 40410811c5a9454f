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

# new_job JSON: posts a job, expects 201, prints its id.
new_job() {
	local code
	code=$(BODY_FILE=$BATS_TEST_TMPDIR/new api POST /v1/profiling \
		-H 'Content-Type: application/json' -d "$1")
	if [ "$code" != 201 ]; then
		echo "POST /v1/profiling $1: $code $(cat "$BATS_TEST_TMPDIR/new")" >&2
		return 1
	fi
	jq -re .id "$BATS_TEST_TMPDIR/new"
}

job_status() {
	curl -sS -H "Authorization: Bearer $TOKEN" "$SERVE_URL/v1/profiling/$1" | jq -r .status
}

job_has_status() {	# job_has_status ID STATUS
	[ "$(job_status "$1")" = "$2" ]
}

# job_attached ID: the job's capture has its BPF programs attached (it
# reports the kernel's features once it has).
job_attached() {
	grep -q 'backend ' "$SERVE_DIR/state/jobs/$1/log" 2>/dev/null
}

# wait_job ID STATUS [TIMEOUT]: waits for the job to end, and requires it
# to have ended as STATUS (the record is printed when it did not).
wait_job() {
	wait_for "${3:-40}" job_ended "$1"
	local rec
	rec=$(curl -sS -H "Authorization: Bearer $TOKEN" "$SERVE_URL/v1/profiling/$1")
	if [ "$(jq -r .status <<<"$rec")" != "$2" ]; then
		echo "job $1 ended as: $rec" >&2
		cat "$SERVE_DIR/state/jobs/$1/log" >&2
		return 1
	fi
}

job_ended() {
	case "$(job_status "$1")" in
	completed|failed|stopped) return 0 ;;
	esac
	return 1
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
