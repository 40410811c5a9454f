#!/usr/bin/env bats
# Inlined frames of C and C++ (cpa-unwind --inline) on real capture,
# against addr2line -i: tests/workloads/inline_chain.c built as C and as
# C++ at -O2 -g (the compilers' defaults otherwise: no frame pointers),
# where run holds handle, parse and computeHot/computeCold inlined. One
# capture of both serves every test (and a live one beside it).
#
# The truth is per sampled address: the recording is unwound once named
# and once with the workloads' binaries replaced by stripped copies of
# themselves (same build id, same CFI, no symbols or DWARF), whose frames
# come out as module+0xADDR; each of those addresses, put through
# addr2line -i -f -C on the unstripped binary, must give the frames the
# named run gave, sample for sample.
load helper

setup_file() {
	require_bpf
	F=$BATS_FILE_TMPDIR
	local src=$CPA_SRCDIR/tests/workloads/inline_chain.c
	gcc -O2 -g -o "$F/inline_c" "$src"
	if command -v g++ >/dev/null; then
		g++ -x c++ -O2 -g -o "$F/inline_cxx" "$src"
	fi
	local pids=() w
	for w in inline_c inline_cxx; do
		[ -x "$F/$w" ] || continue
		start_workload "$F/$w.out" "$F/$w" 5
		pids+=(--pid "$WL_PID")
	done
	# and live, at the same time, through cpa-unwind's defaults
	cpa-capture "${pids[@]}" --freq 499 --duration 3 2>"$F/live.cap.err" |
		cpa-unwind --folded --stats >"$F/live.folded" 2>"$F/live.stats" &
	cpa-capture "${pids[@]}" --freq 499 --duration 2 >"$F/rec.cpa" 2>"$F/cap.err"
	wait
	cpa-unwind --folded --inline --stats "$F/rec.cpa" >"$F/named.folded" \
		2>"$F/named.stats"
	# the same recording with the workloads' symbols and DWARF gone,
	# written into the same file (the recorded inode), which cpa-unwind
	# takes for the mapped one by its build id
	for w in inline_c inline_cxx; do
		[ -x "$F/$w" ] || continue
		cp "$F/$w" "$F/$w.full"
		strip -s -o "$F/$w.stripped" "$F/$w"
		cat "$F/$w.stripped" >"$F/$w"
	done
	cpa-unwind --folded --inline "$F/rec.cpa" >"$F/addrs.folded"
}

setup() {
	F=$BATS_FILE_TMPDIR
}

# by_addr2line NAME: addrs.folded's lines of workload NAME with each
# NAME+0xADDR frame replaced by what addr2line -i says is at ADDR, the
# outermost function first and the functions inlined into it as NAME_[i]
by_addr2line() {
	local w=$1
	grep "^$w;" "$F/addrs.folded" >"$F/$w.addrs"
	grep -o "$w+0x[0-9a-f]*" "$F/$w.addrs" | sed "s/^$w+//" | sort -u >"$F/$w.pcs"
	# LLVM's addr2line: binutils' names a C++ static function inlined
	# into a method (inline_chain.c's now() in svc::run) by the method
	llvm-addr2line -a -i -f -C -e "$F/$w.full" <"$F/$w.pcs" >"$F/$w.a2l"
	awk -v w="$w" '
		FNR == NR {
			# 0xADDR, then function and file:line pairs, innermost first
			if ($0 ~ /^0x[0-9a-f]+$/) { a = $0; sub(/^0x0*/, "0x", a); n[a] = 0; k = 0; next }
			if (k++ % 2 == 0) fn[a, n[a]++] = $0
			next
		}
		{
			count = $NF
			sub(/ [0-9]+$/, "")
			m = split($0, fr, ";")
			out = ""
			for (i = 1; i <= m; i++) {
				f = fr[i]
				if (index(f, w "+0x") == 1) {
					a = substr(f, length(w) + 2)
					f = fn[a, n[a] - 1]
					for (j = n[a] - 2; j >= 0; j--)
						f = f ";" fn[a, j] "_[i]"
				}
				out = out (i > 1 ? ";" : "") f
			}
			print out " " count
		}' "$F/$w.a2l" "$F/$w.addrs"
}

# ending_in CHAIN FILE: total weight of the stacks whose leaf end is CHAIN
ending_in() {
	awk -v c=";$1" '{
		s = $0; sub(/ [0-9]+$/, "", s)
		if (length(s) >= length(c) && substr(s, length(s) - length(c) + 1) == c)
			n += $NF
	} END { print n + 0 }' "$2"
}

# same_as_addr2line NAME HOT COLD: NAME's named stacks are addr2line's,
# sample for sample; the chains HOT and COLD are both there, HOT (3
# requests of 4, the same work each) the more often
same_as_addr2line() {
	local w=$1 hot cold
	grep "^$w;" "$F/named.folded" | sort >"$F/$w.named"
	by_addr2line "$w" | sort >"$F/$w.truth"
	uniq -c "$F/$w.named"
	[ "$(wc -l <"$F/$w.named")" -ge 40 ]
	diff "$F/$w.truth" "$F/$w.named"
	hot=$(ending_in "$2" "$F/$w.named")
	cold=$(ending_in "$3" "$F/$w.named")
	echo "hot $hot cold $cold; the workload's own: $(tail -1 "$F/$w.out")"
	[ "$cold" -gt 0 ]
	[ "$hot" -gt "$cold" ]
}

@test "C --inline: the whole inlined chain, as addr2line -i gives it at every sampled address" {
	same_as_addr2line inline_c 'main;run;handle_[i];parse_[i];computeHot_[i]' \
		'main;run;handle_[i];parse_[i];computeCold_[i]'
}

@test "C++ --inline: the whole inlined chain, demangled, as addr2line -i -C gives it" {
	[ -x "$F/inline_cxx" ] || skip_missing "g++ not installed: inline_cxx not built"
	same_as_addr2line inline_cxx \
		'main;svc::run(double);svc::handle(long)_[i];svc::parse(long)_[i];svc::computeHot(long)_[i]' \
		'main;svc::run(double);svc::handle(long)_[i];svc::parse(long)_[i];svc::computeCold(long)_[i]'
}

@test "live: an object's inlined frames come once it has named 50 frames, read off the sample path" {
	cat "$F/live.stats"
	grep -q 'inline tables  objects=[1-9]' "$F/live.stats"
	local w total full
	for w in inline_c inline_cxx; do
		[ -x "$F/$w.full" ] || continue
		total=$(awk -v w="^$w;" '$0 ~ w { n += $NF } END { print n + 0 }' "$F/live.folded")
		full=$(awk -v w="^$w;" '$0 ~ w && /;(svc::)?parse(\(long\))?_\[i\];(svc::)?compute(Hot|Cold)(\(long\))?_\[i\]( |;)/ { n += $NF } END { print n + 0 }' "$F/live.folded")
		echo "$w: $full of $total samples with the inlined chain"
		[ "$total" -ge 40 ]
		# the samples before the program named 50 frames (10 of
		# these stacks) and while its table was read go without; the
		# rest have the chain (on a loaded host the reads, libc's
		# debug file among them, took up to a second of the three)
		[ $(( full * 100 / total )) -ge 25 ]
	done
}
