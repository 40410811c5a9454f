load helper
count() {
	local n=$(dump | wc -l)
	echo "$n"
}
@test "t" {
	[ "$(dump | wc -l)" -eq 0 ]
	n=$(dump | wc -l)
	[ "$n" -eq 0 ]
	x="$(dump | awk '{ print $1 }')"
	run bash -c "dump | wc -l"
	run bash -c "set -o pipefail; dump | wc -l"
	dump | grep -q '^end '
	dump | head -1
	dump | tail -1 | grep -q '^end '
	dump | grep '^end ' >/dev/null
	dump | sed -n 1p
	echo "$(date)" "$(dump || true)"
}
