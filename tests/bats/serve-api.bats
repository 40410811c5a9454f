#!/usr/bin/env bats
# docs/api.md documents every route with a curl example: this suite runs
# those examples, in order, against a real server, so the document
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

@test "api: every route of docs/api.md has a curl example" {
	# a command's continued lines joined into one
	examples | sed -e ':a' -e '/\\$/N' -e 's/\\\n//' -e 'ta' >"$T/examples.sh"
	awk -F'`' '/^\| `(GET|POST) \/v1\// { print $2 }' "$DOC" >"$T/routes"
	[ "$(wc -l <"$T/routes")" -ge 15 ]
	while read -r method path; do
		# the path as the examples write it: a variable or a literal
		# for each {name}, no query
		p=${path%%\?*}
		re=$(sed 's/{[a-z_]*}/[^\/"]+/g' <<<"$p")
		echo "$method $p"
		grep -E -- "\\\$\{API_BASE\}$re([?\"]|$)" "$T/examples.sh" >"$T/uses"
		if [ "$method" = POST ]; then grep -qE -- '-X POST|-d ' "$T/uses"; fi
	done <"$T/routes"
}

@test "api: the examples of docs/api.md run against a real server" {
	start_workload "$T/wl.out" "$WL/chain_fp" --seconds 40
	cpa-capture --duration 2 2>"$T/cap.err" | cpa-unwind 2>"$T/unw.err" |
		cpa-store --dir "$T/store" 2>"$T/store.err"
	serve_start "$T/serve" --dir "$T/store"
	examples >"$T/examples.sh"
	cd "$T"
	API_BASE=$SERVE_URL API_TOKEN=$TOKEN run bash -euo pipefail "$T/examples.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" =~ "Job ID: id-" ]]
	jq -e '.data.items | length >= 1' profile-raw.json
	jq -e '.data.items[0].profile.sample | length >= 1' profile-raw.json
	xmllint --noout profile.svg
	gzip -t profile.pb.gz
	jq -e '."$schema" | test("speedscope")' profile.speedscope.json
	xmllint --noout last5m.svg
	grep -q '<title>hot_leaf (' last5m.svg
	[[ "$output" =~ stopping ]]
	[[ "$output" =~ service_unavailable ]]
	[[ "$output" =~ '"cpa-serve"' ]]
	[[ "$output" =~ 204 ]]
}
