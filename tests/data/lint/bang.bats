load helper
gone() { ! kill -0 "$1" 2>/dev/null; }
@test "t" {
	! grep -q x "$T/f"
	run ! grep -q x "$T/f"
	must_fail grep -q x "$T/f"
	if ! grep -q x "$T/f"; then true; fi
	true; ! false
	for f in a; do ! grep "$f" x; done
}
settled() {
	! kill -0 1
	true
}
