# scripts/: the `cpa` wrapper, its systemd unit and default config, and the
# set-up scripts named in the README.
dist_bin_SCRIPTS += scripts/cpa
EXTRA_DIST += scripts/quickstart scripts/check scripts/install-deps \
	scripts/install scripts/cpa.service scripts/cpa.conf

cpaconfdir = $(sysconfdir)/cpa
dist_cpaconf_DATA = scripts/cpa.conf
systemdunitdir = $(prefix)/lib/systemd/system
# The unit names the installed paths, so it is written at install time:
# `make install prefix=...` then points it at that prefix.
install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(systemdunitdir)'
	sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/scripts/cpa.service > '$(DESTDIR)$(systemdunitdir)/cpa.service'
uninstall-local:
	rm -f '$(DESTDIR)$(systemdunitdir)/cpa.service'
