#!/usr/bin/env bash
# A client of HUATUO's profiling API written from HUATUO's own document
# alone (its Profiling API section: create, poll, raw, stop), as a
# HUATUO user would write it; serve-seed.bats runs it unchanged against
# cpa-serve. API_BASE and API_TOKEN as the document sets them.
set -euo pipefail
: "${API_BASE:?}" "${API_TOKEN:?}"
AUTH="Authorization: Bearer ${API_TOKEN}"

fail() { echo "client: $*" >&2; exit 1; }

create() {	# create BODY: prints the job ID, from the 201 answer
	local out code
	out=$(curl -sS -i -X POST -H "$AUTH" -H "Content-Type: application/json" \
		-d "$1" "${API_BASE}/v1/profiling")
	code=$(head -n 1 <<<"$out" | awk '{ print $2 }')
	[ "$code" = 201 ] || fail "create: HTTP $code: $(tail -n 1 <<<"$out")"
	grep -qi '^Location: /v1/profiling/' <<<"$out" || fail "create: no Location"
	tail -n 1 <<<"$out" | jq -er .data.request_id
}

job() { curl -sS -H "$AUTH" "${API_BASE}/v1/profiling/$1"; }

HOSTNAME=$(hostname)
JOB_ID=$(create "{\"type\": \"cpu\", \"language\": \"c\", \"mode\": \"oncpu\",
	\"scope\": \"host\", \"duration_seconds\": ${DURATION:-3},
	\"hostname\": \"${HOSTNAME}\"}")
echo "Job ID: $JOB_ID"

# poll: pending, running, stopping are active; terminal is final
for _ in $(seq 1 120); do
	status=$(job "$JOB_ID" | jq -r .data.status)
	case "$status" in
	pending|running|stopping) sleep 1 ;;
	terminal) break ;;
	*) fail "unknown status $status" ;;
	esac
done
[ "$status" = terminal ] || fail "job $JOB_ID still $status"
outcome=$(job "$JOB_ID" | jq -r .data.terminal.outcome)
echo "outcome: $outcome"
case "$outcome" in
completed|unknown) ;;
*) fail "job $JOB_ID: $(job "$JOB_ID" | jq -c .data.terminal)" ;;
esac

# raw: page by page while has_more, branching on error.code only
offset=0 windows=0
while :; do
	curl -sS -H "$AUTH" -o profile-raw.json \
		"${API_BASE}/v1/profiling/${JOB_ID}/raw?limit=100&offset=${offset}"
	code=$(jq -r '.error.code // empty' profile-raw.json)
	case "$code" in
	"") ;;
	result_too_large) fail "page too large at offset $offset" ;;
	*) fail "raw: $code" ;;
	esac
	n=$(jq '.data.items | length' profile-raw.json)
	jq -e '.data.items | all(has("uploaded_timestamp") and has("started_timestamp")
		and has("profile_type") and (.profile | type == "object"))' profile-raw.json >/dev/null ||
		fail "raw: an item without its fields"
	windows=$((windows + n))
	[ "$(jq -r .data.has_more profile-raw.json)" = true ] || break
	offset=$((offset + 100))
done
echo "windows: $windows"

# stop: accepted while active, 409 once terminal
LONG=$(create "{\"type\": \"cpu\", \"language\": \"go\", \"mode\": \"oncpu\",
	\"scope\": \"host\", \"duration_seconds\": 60, \"hostname\": \"${HOSTNAME}\"}")
stopped=$(curl -sS -X POST -H "$AUTH" "${API_BASE}/v1/profiling/${LONG}/stop" | jq -r .data.status)
echo "stop: $stopped"
for _ in $(seq 1 60); do
	[ "$(job "$LONG" | jq -r .data.status)" = terminal ] && break
	sleep 1
done
echo "stopped outcome: $(job "$LONG" | jq -r .data.terminal.outcome)"
code=$(curl -sS -X POST -H "$AUTH" "${API_BASE}/v1/profiling/${LONG}/stop" | jq -r .error.code)
echo "stop again: $code"
code=$(curl -sS -H "$AUTH" "${API_BASE}/v1/profiling/${LONG}/raw" | jq -r .error.code)
echo "raw of stopped: $code"
