# scripts/: the `cpa` wrapper, its systemd unit and default config, and the
# set-up scripts named in the README.
dist_bin_SCRIPTS += scripts/cpa
EXTRA_DIST += scripts/quickstart scripts/check scripts/install-deps \
	scripts/install scripts/cpa.service scripts/cpa.conf

cpaconfdir = $(sysconfdir)/cpa
dist_cpaconf_DATA = scripts/cpa.conf
systemdunitdir = $(prefix)/lib/systemd/system
systemdunit_DATA = scripts/gen/cpa.service
scripts/gen/cpa.service: scripts/cpa.service Makefile
	$(AM_V_GEN)$(MKDIR_P) scripts/gen && \
	sed -e 's|@bindir[@]|$(bindir)|g' -e 's|@sysconfdir[@]|$(sysconfdir)|g' \
		$(srcdir)/scripts/cpa.service > $@
CLEANFILES += scripts/gen/cpa.service
