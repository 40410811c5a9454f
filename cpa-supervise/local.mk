# cpa-supervise: see docs/man/cpa-supervise.1
# Everything but main() is one library, linked by the program and its tests.
noinst_LIBRARIES += cpa-supervise/libsupervise.a
cpa_supervise_libsupervise_a_SOURCES = \
	cpa-supervise/stages.c cpa-supervise/stages.h \
	cpa-supervise/supervise.c cpa-supervise/supervise.h \
	cpa-supervise/watchdog.c cpa-supervise/watchdog.h \
	cpa-supervise/statsfile.c cpa-supervise/statsfile.h \
	cpa-supervise/status.c cpa-supervise/status.h \
	cpa-supervise/metrics.c cpa-supervise/metrics.h
SUPERVISE_LIBS = cpa-supervise/libsupervise.a $(LIBCPA_BASE)
bin_PROGRAMS += cpa-supervise/cpa-supervise
cpa_supervise_cpa_supervise_SOURCES = cpa-supervise/main.c
cpa_supervise_cpa_supervise_LDADD = $(SUPERVISE_LIBS)
dist_man1_MANS += docs/man/cpa-supervise.1

# The stage table against running stages, docs/security.md and the units;
# option checks, --duration and the watchdog; one-shot profiles (Ctrl-C,
# whole files) and the config file against the command line.
TESTS += tests/bats/supervise.bats tests/bats/oneshot.bats tests/bats/config.bats

# cpa monitor's metrics textfile and cpa-serve's /metrics, scraped by a
# prometheus of the suite's own (through node_exporter's textfile
# collector for the monitor), with a push stage into its own ClickHouse.
TESTS += tests/bats/metrics.bats

# Fuzz target: the statistics files a stage of another user writes and
# the supervisor reads as root (tests/fuzz/supervise_stats_fuzz.c).
check_PROGRAMS += tests/fuzz/supervise_stats_replay
tests_fuzz_supervise_stats_replay_SOURCES = \
	tests/fuzz/supervise_stats_fuzz.c tests/fuzz/replay.c
tests_fuzz_supervise_stats_replay_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/cpa-supervise
tests_fuzz_supervise_stats_replay_LDADD = $(SUPERVISE_LIBS)
FUZZ_TARGETS += supervise_stats
FUZZ_TOOL_supervise_stats = supervise
FUZZ_CFLAGS_supervise = -I$(srcdir)/cpa-supervise
EXTRA_DIST += tests/fuzz/supervise_stats_fuzz.c
