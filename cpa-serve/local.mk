# cpa-serve: see docs/man/cpa-serve.1 and docs/api.md
bin_PROGRAMS += cpa-serve/cpa-serve
cpa_serve_cpa_serve_SOURCES = \
	cpa-serve/main.c \
	cpa-serve/opts.c cpa-serve/opts.h \
	cpa-serve/http.c cpa-serve/http.h \
	cpa-serve/auth.c cpa-serve/auth.h \
	cpa-serve/spec.c cpa-serve/spec.h \
	cpa-serve/jobs.c cpa-serve/jobs.h \
	cpa-serve/state.c cpa-serve/state.h \
	cpa-serve/quotas.c cpa-serve/quotas.h \
	cpa-serve/results.c cpa-serve/results.h \
	cpa-serve/history.c cpa-serve/history.h \
	cpa-serve/capabilities.c cpa-serve/capabilities.h \
	cpa-serve/launcher.c cpa-serve/launcher.h \
	cpa-serve/privs.c cpa-serve/privs.h \
	cpa-serve/run.c cpa-serve/run.h
cpa_serve_cpa_serve_CFLAGS = $(AM_CFLAGS) $(MHD_CFLAGS) $(JSONC_CFLAGS) -pthread
cpa_serve_cpa_serve_LDADD = lib/libcpa.a $(MHD_LIBS) $(JSONC_LIBS) -lpthread
dist_man1_MANS += docs/man/cpa-serve.1

# Jobs, errors, history and the API document's examples, over HTTP with
# curl and jq, real BPF as root. The load test (serve-load-long) and the
# restart tests (serve-restart: the server killed and started again) are
# in check-long: they would not fit make check's budget.
TESTS += tests/bats/serve.bats tests/bats/serve-errors.bats \
	tests/bats/serve-history.bats tests/bats/serve-api.bats
dist_check_DATA += tests/bats/serve_helper.bash tests/bats/serve_load.bash
EXTRA_DIST += tests/bats/serve-load-long.bats tests/bats/serve-restart.bats
EXTRA_DIST += docs/api.md

# Fuzz target: the job body parser (tests/fuzz/serve_spec_fuzz.c).
check_PROGRAMS += tests/fuzz/serve_spec_replay
tests_fuzz_serve_spec_replay_SOURCES = tests/fuzz/serve_spec_fuzz.c \
	tests/fuzz/replay.c cpa-serve/spec.c
tests_fuzz_serve_spec_replay_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/cpa-serve
tests_fuzz_serve_spec_replay_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS)
tests_fuzz_serve_spec_replay_LDADD = lib/libcpa.a $(JSONC_LIBS)
FUZZ_TARGETS += serve_spec
FUZZ_EXTRA_serve_spec = cpa-serve/spec.c
FUZZ_CFLAGS_serve_spec = -I$(srcdir)/cpa-serve $(JSONC_CFLAGS)
FUZZ_LIBS_serve_spec = $(JSONC_LIBS)
EXTRA_DIST += tests/fuzz/serve_spec_fuzz.c
