# cpa-serve: see docs/man/cpa-serve.1 and docs/api.md
# Everything but main() is one library, linked by the program and its
# fuzz target; configure --without-libmicrohttpd leaves all three out.
if WITH_LIBMICROHTTPD
noinst_LIBRARIES += cpa-serve/libserve.a
bin_PROGRAMS += cpa-serve/cpa-serve
check_PROGRAMS += tests/fuzz/serve_spec_replay
FUZZ_TARGETS += serve_spec
check_PROGRAMS += tests/fuzz/serve_querier_replay
FUZZ_TARGETS += serve_querier
endif
cpa_serve_libserve_a_SOURCES = \
	cpa-serve/opts.c cpa-serve/opts.h \
	cpa-serve/http.c cpa-serve/http.h \
	cpa-serve/api.c cpa-serve/api.h \
	cpa-serve/errors.c cpa-serve/errors.h \
	cpa-serve/users.c cpa-serve/users.h \
	cpa-serve/windows.c cpa-serve/windows.h \
	cpa-serve/targets.c cpa-serve/targets.h \
	cpa-serve/gate.c cpa-serve/gate.h \
	cpa-serve/offload.c cpa-serve/offload.h \
	cpa-serve/auth.c cpa-serve/auth.h \
	cpa-serve/spec.c cpa-serve/spec.h \
	cpa-serve/jobs.c cpa-serve/jobs.h \
	cpa-serve/state.c cpa-serve/state.h \
	cpa-serve/quotas.c cpa-serve/quotas.h \
	cpa-serve/results.c cpa-serve/results.h \
	cpa-serve/publish.c cpa-serve/publish.h \
	cpa-serve/nodes.c cpa-serve/nodes.h \
	cpa-serve/nodeapi.c cpa-serve/nodeapi.h \
	cpa-serve/fleet.c cpa-serve/fleet.h \
	cpa-serve/fleetraw.c cpa-serve/fleetraw.h \
	cpa-serve/flame.c cpa-serve/flame.h \
	cpa-serve/querier.c cpa-serve/querier.h \
	cpa-serve/history.c cpa-serve/history.h \
	cpa-serve/metrics.c cpa-serve/metrics.h \
	cpa-serve/ui.c cpa-serve/ui.h \
	cpa-serve/capabilities.c cpa-serve/capabilities.h \
	cpa-serve/launcher.c cpa-serve/launcher.h \
	cpa-serve/privs.c cpa-serve/privs.h \
	cpa-serve/run.c cpa-serve/run.h
# The fleet page is kept as plain HTML and built into the program as a C
# string, as cpa-render's scripts are (with the same script).
nodist_cpa_serve_libserve_a_SOURCES = cpa-serve/ui_page.c
cpa-serve/ui_page.c: cpa-serve/ui.html cpa-render/js2c.sh
	$(AM_V_GEN)$(MKDIR_P) cpa-serve && \
	$(SHELL) $(srcdir)/cpa-render/js2c.sh \
		cpa_serve_ui_html $(srcdir)/cpa-serve/ui.html > $@-t && mv $@-t $@
BUILT_SOURCES += cpa-serve/ui_page.c
CLEANFILES += cpa-serve/ui_page.c
EXTRA_DIST += cpa-serve/ui.html
SERVE_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/cpa-serve
SERVE_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JSONC_CFLAGS) -pthread
SERVE_LIBS = cpa-serve/libserve.a $(LIBCPA_FORMAT) $(MHD_LIBS) $(JSONC_LIBS) \
	-lpthread
cpa_serve_libserve_a_CPPFLAGS = $(SERVE_CPPFLAGS)
cpa_serve_libserve_a_CFLAGS = $(SERVE_CFLAGS)
cpa_serve_cpa_serve_SOURCES = cpa-serve/main.c
cpa_serve_cpa_serve_CPPFLAGS = $(SERVE_CPPFLAGS)
cpa_serve_cpa_serve_CFLAGS = $(SERVE_CFLAGS)
cpa_serve_cpa_serve_LDADD = $(SERVE_LIBS)
dist_man1_MANS += docs/man/cpa-serve.1

# Jobs, errors, history and the API document's examples, over HTTP with
# curl and jq, real BPF as root. The load test (serve-load-long) and the
# restart tests (serve-restart: the server killed and started again) are
# in check-long: they would not fit make check's budget.
TESTS += tests/bats/serve.bats tests/bats/serve-errors.bats \
	tests/bats/serve-history.bats tests/bats/serve-api.bats \
	tests/bats/serve-hostile.bats tests/bats/serve-seed.bats \
	tests/bats/serve-languages.bats
dist_check_DATA += tests/bats/serve_helper.bash tests/bats/serve_load.bash
EXTRA_DIST += tests/bats/serve-load-long.bats tests/bats/serve-restart.bats
EXTRA_DIST += docs/api.md tests/data/huatuo-client.sh

# The apiserver (cpa-serve --fleet): real nodes and misbehaving ones on
# loopback, a ClickHouse server of the suite's own.
TESTS += tests/bats/apiserver.bats
dist_check_DATA += tests/bats/apiserver_helper.bash
EXTRA_DIST += tests/tools/fake-node tests/tools/pyroscope-query \
	tests/data/pyroscope.proto

# The fleet page in headless Chromium, over ClickHouse and over a store.
TESTS += tests/bats/serve-ui.bats
EXTRA_DIST += tests/browser/ui.test.js docs/img/serve-ui.png

# Fuzz target: the job body parser (tests/fuzz/serve_spec_fuzz.c).
tests_fuzz_serve_spec_replay_SOURCES = tests/fuzz/serve_spec_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_serve_spec_replay_CPPFLAGS = $(SERVE_CPPFLAGS)
tests_fuzz_serve_spec_replay_CFLAGS = $(SERVE_CFLAGS)
tests_fuzz_serve_spec_replay_LDADD = $(SERVE_LIBS)
FUZZ_TOOL_serve_spec = serve
# Fuzz target: the Pyroscope query bodies (tests/fuzz/serve_querier_fuzz.c).
tests_fuzz_serve_querier_replay_SOURCES = tests/fuzz/serve_querier_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_serve_querier_replay_CPPFLAGS = $(SERVE_CPPFLAGS)
tests_fuzz_serve_querier_replay_CFLAGS = $(SERVE_CFLAGS)
tests_fuzz_serve_querier_replay_LDADD = $(SERVE_LIBS)
FUZZ_TOOL_serve_querier = serve
EXTRA_DIST += tests/fuzz/serve_querier_fuzz.c
FUZZ_CFLAGS_serve = -I$(srcdir)/cpa-serve $(JSONC_CFLAGS) $(MHD_CFLAGS)
FUZZ_LIBS_serve = $(JSONC_LIBS) $(MHD_LIBS)
EXTRA_DIST += tests/fuzz/serve_spec_fuzz.c

# The slowloris client of serve-hostile.bats (loopback only).
check_PROGRAMS += tests/tools/slowloris
tests_tools_slowloris_SOURCES = tests/tools/slowloris.c
