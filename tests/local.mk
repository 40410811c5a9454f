# Tests: C unit tests for lib/ and bats suites that drive the real tools.
# Both report through the TAP driver so each check counts on its own: a C
# test program (TESTS without an extension) prints TAP (tests/unit/unit.h).
TEST_EXTENSIONS = .bats
# Each program runs under tests/timed, which ends its log with the seconds
# and CPU seconds it took: bench/test-times prints them, heaviest first.
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/timed
BATS_LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
BATS_LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/timed $(BATS)
AM_BATS_LOG_FLAGS = --tap
AM_TESTS_ENVIRONMENT = \
	CPA_SRCDIR='$(abs_top_srcdir)' CPA_BUILDDIR='$(abs_top_builddir)' \
	CPA_WITHOUT='$(CPA_WITHOUT)' \
	PATH='$(abs_top_builddir)/cpa-supervise:$(abs_top_builddir)/cpa-push:$(abs_top_builddir)/cpa-serve:$(abs_top_builddir)/cpa-capture:$(abs_top_builddir)/cpa-unwind:$(abs_top_builddir)/cpa-store:$(abs_top_builddir)/cpa-query:$(abs_top_builddir)/cpa-render:$(abs_top_srcdir)/scripts:'"$$PATH"; \
	export CPA_SRCDIR CPA_BUILDDIR CPA_WITHOUT PATH;

UNIT_LDADD = $(LIBCPA) $(ZLIB_LIBS) $(M_LIBS)
check_PROGRAMS += tests/unit/stream_test tests/unit/lib_test
tests_unit_stream_test_SOURCES = tests/unit/stream_test.c tests/unit/unit.h
tests_unit_stream_test_LDADD = $(UNIT_LDADD)
tests_unit_lib_test_SOURCES = tests/unit/lib_test.c tests/unit/unit.h
tests_unit_lib_test_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/stream_test tests/unit/lib_test
# Files of monitored processes: the JVM attach trigger
# (lib/runtime/jvmattach.c) and the rules every such file is opened by
# (lib/base/safeopen.c)
check_PROGRAMS += tests/unit/jvmattach_test tests/unit/safeopen_test
tests_unit_jvmattach_test_SOURCES = tests/unit/jvmattach_test.c tests/unit/unit.h
tests_unit_jvmattach_test_LDADD = $(UNIT_LDADD)
tests_unit_safeopen_test_SOURCES = tests/unit/safeopen_test.c tests/unit/unit.h
tests_unit_safeopen_test_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/jvmattach_test tests/unit/safeopen_test
# Children with bounds, and bounded patterns (lib/child.c, lib/regbound.c)
check_PROGRAMS += tests/unit/child_test
tests_unit_child_test_SOURCES = tests/unit/child_test.c tests/unit/unit.h
tests_unit_child_test_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/child_test

# Workload programs with known call chains, built with and without frame
# pointers. Tools add their own workloads in their local.mk.
WL_FP_CFLAGS = -O1 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline -fno-optimize-sibling-calls
WL_NOFP_CFLAGS = -O2 -g -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls
# A sanitized build's CFLAGS (scripts/check --sanitize) keep frame
# pointers, and automake puts CFLAGS after a program's own flags: the
# workloads built without frame pointers get the last word, or the
# tests that count on their having none would test frame-pointer code.
WL_NOFP_BINARIES = tests/workloads/chain_nofp$(EXEEXT) \
	tests/workloads/selfsnap$(EXEEXT) tests/workloads/qsort_chain$(EXEEXT) \
	tests/workloads/vdso_chain$(EXEEXT) tests/hostile/hostile_spin$(EXEEXT)
$(WL_NOFP_BINARIES): CFLAGS += -fomit-frame-pointer
check_PROGRAMS += tests/workloads/chain_fp tests/workloads/chain_nofp \
	tests/workloads/python_unsupported
tests_workloads_python_unsupported_SOURCES = tests/workloads/python_unsupported.c \
	tests/workloads/start.h
tests_workloads_python_unsupported_CFLAGS = $(WL_FP_CFLAGS)
tests_workloads_python_unsupported_LDFLAGS = -rdynamic
tests_workloads_chain_fp_SOURCES = tests/workloads/chain.c
tests_workloads_chain_fp_CFLAGS = $(WL_FP_CFLAGS)
tests_workloads_chain_fp_LDADD = -lpthread
tests_workloads_chain_nofp_SOURCES = tests/workloads/chain.c
tests_workloads_chain_nofp_CFLAGS = $(WL_NOFP_CFLAGS)
tests_workloads_chain_nofp_LDADD = -lpthread

# cpa-dump prints a stream as text, one line per record, for assertions.
check_PROGRAMS += tests/tools/cpa-dump
tests_tools_cpa_dump_SOURCES = tests/tools/cpa-dump.c
tests_tools_cpa_dump_LDADD = $(UNIT_LDADD)

# gen-cpastore writes stores as CPA writes them, for cpa-query's CPA reader.
check_PROGRAMS += tests/tools/gen-cpastore
tests_tools_gen_cpastore_SOURCES = tests/tools/gen-cpastore.c
tests_tools_gen_cpastore_LDADD = $(UNIT_LDADD) $(ZSTD_LIBS)

# mkstream writes a symbolized stream from a text description of samples.
check_PROGRAMS += tests/tools/mkstream
tests_tools_mkstream_SOURCES = tests/tools/mkstream.c
tests_tools_mkstream_LDADD = $(UNIT_LDADD)

dist_check_DATA += tests/bats/helper.bash tests/bats/monitor_helper.bash
EXTRA_DIST += tests/timed bench/test-times

# The bats lint: rejects shapes of test code that can never fail a test
# (tests/lint-bats says which); its test runs it on bad examples and on
# the whole suite.
TESTS += tests/bats/lint.bats
EXTRA_DIST += tests/lint-bats tests/bats/lint.bats tests/data/lint

# Fuzz targets (tests/fuzz/NAME_fuzz.c). `make check` replays each corpus
# under tests/fuzz/corpus/NAME/ through a plain driver; `make fuzz` builds
# libFuzzer binaries with clang and runs each for FUZZ_SECONDS.
# A tool adds a target with FUZZ_TARGETS += NAME and, when the target needs
# more than lib/, FUZZ_TOOL_NAME = the tool whose library it links (TOOL
# for TOOL/libTOOL.a: capture, unwind, render, serve, ...), whose build
# flags are FUZZ_CFLAGS_TOOL and FUZZ_LIBS_TOOL.
FUZZ_TARGETS += stream text
FUZZ_SECONDS = 60
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer,address,undefined \
	-include $(top_builddir)/config.h -I$(top_builddir) $(LIBCPA_CPPFLAGS) \
	-I$(top_builddir)/bpf \
	-I$(top_srcdir)/bpf
check_PROGRAMS += tests/fuzz/stream_replay tests/fuzz/text_replay
tests_fuzz_stream_replay_SOURCES = tests/fuzz/stream_fuzz.c tests/fuzz/replay.c
tests_fuzz_stream_replay_LDADD = $(UNIT_LDADD)
tests_fuzz_text_replay_SOURCES = tests/fuzz/text_fuzz.c tests/fuzz/replay.c
tests_fuzz_text_replay_LDADD = $(UNIT_LDADD)
# lib/runtime/pyoffsets.c: 3.13's _Py_DebugOffsets, read from the interpreter
FUZZ_TARGETS += pyoffsets
check_PROGRAMS += tests/fuzz/pyoffsets_replay
tests_fuzz_pyoffsets_replay_SOURCES = tests/fuzz/pyoffsets_fuzz.c tests/fuzz/replay.c
tests_fuzz_pyoffsets_replay_LDADD = $(UNIT_LDADD)
# lib/format/clickhouse.c: ClickHouse's HTTP answers and RowBinary
FUZZ_TARGETS += clickhouse
check_PROGRAMS += tests/fuzz/clickhouse_replay
tests_fuzz_clickhouse_replay_SOURCES = tests/fuzz/clickhouse_fuzz.c tests/fuzz/replay.c
tests_fuzz_clickhouse_replay_LDADD = $(UNIT_LDADD)
# lib/format/cpastore.c: the stores CPA wrote
FUZZ_TARGETS += cpastore
check_PROGRAMS += tests/fuzz/cpastore_replay
tests_fuzz_cpastore_replay_SOURCES = tests/fuzz/cpastore_fuzz.c tests/fuzz/replay.c
tests_fuzz_cpastore_replay_LDADD = $(UNIT_LDADD) $(ZSTD_LIBS)
# lib/format/protobuf.c: protobuf's wire format, as Pyroscope's queries
# come (cpa-serve --fleet)
FUZZ_TARGETS += protobuf
check_PROGRAMS += tests/fuzz/protobuf_replay
tests_fuzz_protobuf_replay_SOURCES = tests/fuzz/protobuf_fuzz.c tests/fuzz/replay.c
tests_fuzz_protobuf_replay_LDADD = $(UNIT_LDADD)
EXTRA_DIST += tests/fuzz/corpus
TESTS += tests/bats/fuzz.bats tests/bats/stream.bats tests/bats/pipeline.bats \
	tests/bats/monitor.bats tests/bats/install.bats tests/bats/owners.bats \
	tests/bats/cpa-show.bats tests/bats/cpa-compat.bats \
	tests/bats/cpa-options.bats tests/bats/profile.bats
# Hostile names, store floods and loss markers (tests/hostile/)
TESTS += tests/bats/hostile-names.bats tests/bats/store-hostile.bats
EXTRA_DIST += tests/bats/hostile-names.bats tests/hostile/hostile_names.py \
	tests/hostile/names_clean.py tests/bats/store-hostile.bats \
	tests/hostile/py_flood.py
# Python frames: every CPython on the machine (tests/workloads/py_chain.py)
TESTS += tests/bats/python.bats
EXTRA_DIST += tests/workloads/py_chain.py

FUZZ_TOOLS = $(sort $(foreach t,$(FUZZ_TARGETS),$(FUZZ_TOOL_$(t))))
# $(call fuzz_ar,ARCHIVE,CFLAGS,SOURCES): the sources built for libFuzzer
# into ARCHIVE, so that a target links what it uses, as the replays do.
fuzz_ar = rm -rf $(1) $(1).d; mkdir -p $(1).d; \
	for s in $(3); do $(CLANG) $(FUZZ_CFLAGS) $(2) -c $$s \
		-o $(1).d/$$(echo $$s | tr /. __).o; done; \
	$(AR) cr $(1) $(1).d/*.o;
fuzz: $(BUILT_SOURCES)
	@set -e; \
	echo "  FUZZ-AR  lib"; \
	$(call fuzz_ar,tests/fuzz/libcpa.a,,$(addprefix $(srcdir)/,$(LIBCPA_SRCS))) \
	$(foreach l,$(FUZZ_TOOLS), echo "  FUZZ-AR  $(l)"; \
		$(call fuzz_ar,tests/fuzz/lib$(l).a,$(FUZZ_CFLAGS_$(l)),$(addprefix \
			$(srcdir)/,$(filter %.c,$(cpa_$(l)_lib$(l)_a_SOURCES))) \
			$(nodist_cpa_$(l)_lib$(l)_a_SOURCES))) \
	$(foreach t,$(FUZZ_TARGETS), \
		echo "  FUZZ     $(t) ($(FUZZ_SECONDS)s)"; \
		$(CLANG) $(FUZZ_CFLAGS) $(FUZZ_CFLAGS_$(FUZZ_TOOL_$(t))) \
			$(srcdir)/tests/fuzz/$(t)_fuzz.c \
			$(if $(FUZZ_TOOL_$(t)),tests/fuzz/lib$(FUZZ_TOOL_$(t)).a) \
			tests/fuzz/libcpa.a \
			$(LIBS_FOR_FUZZ) $(FUZZ_LIBS_$(FUZZ_TOOL_$(t))) \
			-o tests/fuzz/$(t)_fuzz; \
		mkdir -p tests/fuzz/new-$(t); \
		tests/fuzz/$(t)_fuzz -max_total_time=$(FUZZ_SECONDS) \
			tests/fuzz/new-$(t) $(srcdir)/tests/fuzz/corpus/$(t);)
LIBS_FOR_FUZZ = $(LIBBPF_LIBS) $(LIBELF_LIBS) $(LIBDW_LIBS) $(ZSTD_LIBS) $(IBERTY_LIBS) $(M_LIBS) $(ZLIB_LIBS)
.PHONY: fuzz
CLEANFILES += tests/fuzz/*_fuzz tests/fuzz/lib*.a
clean-local: clean-fuzz
clean-fuzz:
	rm -rf tests/fuzz/lib*.a.d
.PHONY: clean-fuzz

# Soak and long fault tests: minutes each, so not in `make check`.
LONG_TESTS = tests/bats/unwind-soak.bats tests/bats/store-soak.bats \
	tests/bats/monitor-soak.bats tests/bats/monitor-faults.bats \
	tests/bats/serve-load-long.bats tests/bats/serve-restart.bats
EXTRA_DIST += tests/bats/monitor-soak.bats tests/bats/monitor-faults.bats
check-long: all $(check_PROGRAMS)
	$(AM_TESTS_ENVIRONMENT) $(BATS) $(addprefix $(srcdir)/,$(LONG_TESTS))
.PHONY: check-long

# The tests a tarball must pass on its own, with neither root nor BPF: every
# C unit test, the fuzz corpus replays and the bats lint. CI runs
# `make distcheck-unit`; a new tests/unit/ program joins by being in TESTS.
UNIT_TESTS = $(filter tests/unit/% tests/bats/fuzz.bats \
	tests/bats/lint.bats,$(TESTS))
distcheck-unit:
	$(MAKE) $(AM_MAKEFLAGS) distcheck TESTS='$(UNIT_TESTS)'
.PHONY: distcheck-unit
# Every bats suite in TESTS, so that the tarball carries what it runs.
EXTRA_DIST += $(filter %.bats,$(TESTS))
EXTRA_DIST += tests/skip-allowed
