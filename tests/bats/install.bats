#!/usr/bin/env bats
# `make install` under a prefix: the tools, cpa, man pages, the default
# config and a systemd unit that systemd-analyze accepts.
load helper

setup() {
	P=$BATS_TEST_TMPDIR/prefix
	make -s -C "$CPA_BUILDDIR" install prefix="$P" sysconfdir="$P/etc" >/dev/null
}

@test "make install puts everything under the prefix, and uninstall removes it" {
	for t in cpa cpa-capture cpa-unwind cpa-store cpa-query cpa-render cpa-serve cpa-push; do
		# left out by configure --without-libmicrohttpd
		[ "$t" != cpa-serve ] || part_built libmicrohttpd || continue
		[ -x "$P/bin/$t" ]
		[ -f "$P/share/man/man1/$t.1" ]
	done
	grep -q '^freq = 49$' "$P/etc/cpa/cpa.conf"
	unit=$P/lib/systemd/system/cpa.service
	grep -qx "ExecStart=$P/bin/cpa monitor --config $P/etc/cpa/cpa.conf" "$unit"
	grep -qx "ExecStart=$P/bin/cpa serve --config $P/etc/cpa/cpa.conf" \
		"$P/lib/systemd/system/cpa-serve.service"
	# The installed wrapper finds the installed tools (no build directory
	# on its PATH) and accepts the installed config, monitor keys and all.
	mkdir "$BATS_TEST_TMPDIR/empty"
	run env PATH=/usr/bin:/bin CPA_CONFIG="$P/etc/cpa/cpa.conf" \
		"$P/bin/cpa" show --dir "$BATS_TEST_TMPDIR/empty" --list
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "range empty" ]
	make -s -C "$CPA_BUILDDIR" uninstall prefix="$P" sysconfdir="$P/etc" >/dev/null
	left=$(find "$P" -type f)
	echo "left after uninstall: $left"
	[ -z "$left" ]
}

@test "systemd-analyze verifies the installed unit" {
	# systemd is no build dependency: a host without it may skip this one
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze on this host"
	MANPATH=$P/share/man run systemd-analyze verify "$P/lib/systemd/system/cpa.service"
	echo "$output"
	[ "$status" -eq 0 ]
	MANPATH=$P/share/man run systemd-analyze verify "$P/lib/systemd/system/cpa-serve.service"
	echo "$output"
	[ "$status" -eq 0 ]
}
