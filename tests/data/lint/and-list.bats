load helper
@test "t" {
	[ "$n" -ge 1 ] && [ "$n" -le 3 ]
	[[ $a == x ]] && [[ $b == y ]]
	test -n "$a" && test -n "$b"
	grep -q x f && [ -s f ]
	[[ $a == x && $b == y ]]
	[ -n "${PID:-}" ] && kill "$PID"
	[ -n "$a" ] && [ -n "$b" ] || { echo missing >&2; false; }
	if [ -n "$a" ] && [ -n "$b" ]; then true; fi
	case $a in
	x) [ "$b" = 1 ] && [ "$c" = 2 ] ;;
	esac
}
both() { [ -n "$1" ] && [ -n "$2" ]; }
