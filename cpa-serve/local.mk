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

# Jobs, errors, restarts, history and the API document's examples, over
# HTTP with curl and jq, real BPF as root.
TESTS += tests/bats/serve.bats tests/bats/serve-errors.bats \
	tests/bats/serve-restart.bats tests/bats/serve-history.bats \
	tests/bats/serve-api.bats
dist_check_DATA += tests/bats/serve_helper.bash
EXTRA_DIST += docs/api.md
