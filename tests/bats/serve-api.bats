#!/usr/bin/env bats
# docs/api.md documents every endpoint with a curl example: this suite
# runs those examples, in order, against a real server, so the document
# cannot drift from the API.
load helper
load serve_helper

setup() {
	serve_setup
	DOC=$CPA_SRCDIR/docs/api.md
}

teardown() {
	serve_stop
	kill_workloads
}

examples() {	# the ```sh blocks of docs/api.md, in order
	awk '/^```sh$/ { on = 1; next } /^```$/ { on = 0 } on' "$DOC"
}

@test "api: every endpoint of docs/api.md has a curl example" {
	examples >"$T/examples.sh"
	awk -F'`' '/^\| `(GET|POST) \/v1\// { print $2 }' "$DOC" >"$T/endpoints"
	[ "$(wc -l <"$T/endpoints")" -ge 10 ]
	while read -r method path; do
		# the path as the examples write it: ids as $ID, no query
		p=${path%%\?*}
		p=${p//\{id\}/\$ID}
		echo "$method $p"
		grep -F "\$CPA$p" "$T/examples.sh" >"$T/uses"
		if [ "$method" = POST ]; then grep -qE -- '-X POST|-d ' "$T/uses"; fi
	done <"$T/endpoints"
}

@test "api: the examples of docs/api.md run against a real server" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 30
	cpa-capture --duration 2 2>"$T/cap.err" | cpa-unwind 2>"$T/unw.err" |
		cpa-store --dir "$T/store" 2>"$T/store.err"
	serve_start "$T/serve" --dir "$T/store"
	examples >"$T/examples.sh"
	cd "$T"
	CPA=$SERVE_URL TOKEN=$TOKEN run bash -euo pipefail "$T/examples.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	xmllint --noout "$T/profile.svg"
	grep -q '<title>hot_leaf (' "$T/profile.svg"
	gzip -t "$T/profile.pb.gz"
	jq -e '."$schema" | test("speedscope")' "$T/profile.speedscope.json"
	xmllint --noout "$T/last5m.svg"
	grep -q '<title>hot_leaf (' "$T/last5m.svg"
	# the raw example printed the total, then lines of the chain
	[[ "$output" =~ chain_fp\;.*hot_leaf\ [0-9]+ ]]
	[ "$(api GET /v1/profiling?status=stopped)" = 200 ]
	v=$(jqb '.jobs | length')
	[ "$v" = 1 ]
}
