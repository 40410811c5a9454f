# scripts/: the `cpa` wrapper, its systemd unit and default config, and the
# set-up scripts named in the README.
EXTRA_DIST += scripts/cpa scripts/quickstart scripts/check scripts/install-deps \
	scripts/install scripts/cpa.service scripts/cpa-serve.service scripts/cpa.conf

cpaconfdir = $(sysconfdir)/cpa
dist_cpaconf_DATA = scripts/cpa.conf
systemdunitdir = $(prefix)/lib/systemd/system
# The unit names the installed paths, so it is written at install time:
# `make install prefix=...` then points it at that prefix.
install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(systemdunitdir)'
	sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/scripts/cpa.service > '$(DESTDIR)$(systemdunitdir)/cpa.service'
	sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/scripts/cpa-serve.service > '$(DESTDIR)$(systemdunitdir)/cpa-serve.service'
uninstall-local:
	rm -f '$(DESTDIR)$(systemdunitdir)/cpa.service' '$(DESTDIR)$(bindir)/cpa'
	rm -f '$(DESTDIR)$(systemdunitdir)/cpa-serve.service'
# cpa is installed with configure's version written in; run from the
# source tree it asks the tools built next to it instead.
install-exec-local:
	$(MKDIR_P) '$(DESTDIR)$(bindir)'
	sed -e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' $(srcdir)/scripts/cpa \
		> '$(DESTDIR)$(bindir)/cpa.tmp'
	chmod 0755 '$(DESTDIR)$(bindir)/cpa.tmp'
	mv '$(DESTDIR)$(bindir)/cpa.tmp' '$(DESTDIR)$(bindir)/cpa'
