load helper
@test "t" {
	cat >f <<'END'
! grep x f
[ a ] && [ b ]
END
	awk '
		$1 == "x" && $2 == "y" { n++ }
		END { exit !n }' f
	# ! this is prose, [ a ] && [ b ] too
	echo "! not a command; [ a ] && [ b ]"
	got=$(awk '$1 == "a" && $2 == "b"' f | wc -l)
	[ "$got" -eq 0 ]
}
