# cpa-store: see docs/man/cpa-store.1
# Everything but main() is one library, linked by the program and its tests.
noinst_LIBRARIES += cpa-store/libstore.a
cpa_store_libstore_a_SOURCES = \
	cpa-store/opts.c cpa-store/opts.h \
	cpa-store/input.c cpa-store/input.h \
	cpa-store/windows.c cpa-store/windows.h \
	cpa-store/segments.c cpa-store/segments.h
STORE_LIBS = cpa-store/libstore.a $(LIBCPA_FORMAT) $(ZSTD_LIBS) $(M_LIBS)
bin_PROGRAMS += cpa-store/cpa-store
cpa_store_cpa_store_SOURCES = cpa-store/main.c
cpa_store_cpa_store_LDADD = $(STORE_LIBS)
dist_man1_MANS += docs/man/cpa-store.1
EXTRA_DIST += docs/store-format.md bench/store-bench tests/bats/store-soak.bats

# Tests. gen-stream writes a symbolized stream with known times, labels
# and stacks (and the truth the suites check cpa-query against).
check_PROGRAMS += tests/tools/gen-stream tests/unit/store_test
tests_tools_gen_stream_SOURCES = tests/tools/gen-stream.c
tests_tools_gen_stream_LDADD = $(LIBCPA_FORMAT) $(M_LIBS)
tests_unit_store_test_SOURCES = tests/unit/store_test.c tests/unit/unit.h
tests_unit_store_test_LDADD = $(STORE_LIBS)
dist_check_DATA += tests/bats/store_helper.bash
TESTS += tests/unit/store_test tests/bats/store.bats \
	tests/bats/store-robust.bats tests/bats/store-live.bats

# Fuzz target for the store readers (meta, index, dictionary and data
# blocks): `make check` replays its corpus (tests/bats/store-robust.bats);
# `make fuzz` runs it under libFuzzer with the other targets.
check_PROGRAMS += tests/fuzz/store_replay
tests_fuzz_store_replay_SOURCES = tests/fuzz/store_fuzz.c tests/fuzz/replay.c
tests_fuzz_store_replay_LDADD = $(STORE_LIBS)
FUZZ_TARGETS += store
