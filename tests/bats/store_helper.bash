# Shared by store*.bats and query*.bats: generating known streams and
# computing what a query of them must return, independently of cpa-query.

GEN="$CPA_BUILDDIR/tests/tools/gen-stream"
DUMP="$CPA_BUILDDIR/tests/tools/cpa-dump"
# 2025-11-30 10:00:00 UTC: a whole hour, so minute and hour segments align.
T0=1764496800

# expect TRUTH FROM_S TO_S INTERVAL_S LABELS: the folded lines cpa-query
# must print for the windows overlapping [FROM_S, TO_S), from the truth
# file gen-stream wrote (one tab-separated line per sample:
# SEC NSEC KIND PID TID CPU CGROUP COMM THREAD CONTAINER ENV STACK WEIGHT).
# Labels are formatted as lib/format/labels.h documents them.
expect() {
	awk -F'\t' -v from="$2" -v to="$3" -v iv="$4" -v labels="$5" '
		BEGIN { nl = labels == "none" ? 0 : split(labels, L, ",") }
		{
			ws = $1 - $1 % iv
			if (!(ws < to && ws + iv > from)) next
			line = ""
			if ($3 == 1) line = "off-CPU blocked"
			for (i = 1; i <= nl; i++) {
				v = ""
				if (L[i] == "comm") v = $8 == "" ? "[unknown]" : $8
				else if (L[i] == "pid") v = "[pid " $4 "]"
				else if (L[i] == "tid") v = "[tid " $5 "]"
				else if (L[i] == "cpu") v = "[cpu " $6 "]"
				else if (L[i] == "thread" && $9 != "") v = "[thread " $9 "]"
				else if (L[i] == "container" && $10 != "") v = "[container " $10 "]"
				else if (L[i] == "env" && $11 != "") v = "[env " $11 "]"
				if (v != "") line = line == "" ? v : line ";" v
			}
			line = line == "" ? $12 : line ";" $12
			sum[line] += $13
		}
		END { for (l in sum) printf "%s %d\n", l, sum[l] }' "$1" | LC_ALL=C sort
}

# same_lines A B: the two files hold the same lines, order aside; on a
# difference, shows the first lines that differ.
same_lines() {
	if ! diff <(LC_ALL=C sort "$1") <(LC_ALL=C sort "$2") >"$BATS_TEST_TMPDIR/diff"; then
		echo "outputs differ ($1 vs $2):" >&2
		head -20 "$BATS_TEST_TMPDIR/diff" >&2
		return 1
	fi
}

# total FILE: the sum of the last column of folded lines.
total() {
	awk '{ s += $NF } END { printf "%d\n", s }' "$1"
}

# store_from_gen DIR TRUTH [cpa-store options] -- [gen-stream options]
store_from_gen() {
	local dir=$1 truth=$2; shift 2
	local sopts=() gopts=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do sopts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	gopts=("$@")
	"$GEN" --truth "$truth" "${gopts[@]}" | cpa-store --dir "$dir" "${sopts[@]}"
}
