#!/usr/bin/env bats
# `make install` under a prefix: the tools, cpa, man pages, the default
# config and a systemd unit that systemd-analyze accepts.
load helper

@test "make install puts everything under the prefix; systemd-analyze verifies the unit" {
	P=$BATS_TEST_TMPDIR/prefix
	make -s -C "$CPA_BUILDDIR" install prefix="$P" sysconfdir="$P/etc" >/dev/null
	for t in cpa cpa-capture cpa-unwind cpa-store cpa-query cpa-render; do
		[ -x "$P/bin/$t" ]
		[ -f "$P/share/man/man1/$t.1" ]
	done
	grep -q '^freq = 49$' "$P/etc/cpa/cpa.conf"
	unit=$P/lib/systemd/system/cpa.service
	grep -qx "ExecStart=$P/bin/cpa monitor --config $P/etc/cpa/cpa.conf" "$unit"
	if ! command -v systemd-analyze >/dev/null; then
		skip "no systemd-analyze on this host"
	fi
	MANPATH=$P/share/man run systemd-analyze verify "$unit"
	echo "$output"
	[ "$status" -eq 0 ]
	# The installed wrapper finds the installed tools and reads the config.
	run env CPA_CONFIG="$P/etc/cpa/cpa.conf" "$P/bin/cpa" show --dir "$BATS_TEST_TMPDIR/none" --list
	[[ "$output" != *"not found"* ]]
	make -s -C "$CPA_BUILDDIR" uninstall prefix="$P" sysconfdir="$P/etc" >/dev/null
	[ -z "$(find "$P" -type f)" ]
}
