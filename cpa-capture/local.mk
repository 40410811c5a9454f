# cpa-capture: see docs/man/cpa-capture.1 and docs/capture.md
# Everything but main() is one library, which the program, its unit tests
# and its fuzz targets link: a new file is listed here once.
noinst_LIBRARIES += cpa-capture/libcapture.a
cpa_capture_libcapture_a_SOURCES = \
	cpa-capture/cpa-capture.h \
	cpa-capture/options.c \
	cpa-capture/features.c \
	cpa-capture/kernel.c \
	cpa-capture/kstack.c \
	cpa-capture/filters.c \
	cpa-capture/output.c \
	cpa-capture/procscan.c \
	cpa-capture/perf_ring.c cpa-capture/perf_ring.h \
	cpa-capture/tracking.c \
	cpa-capture/addons.c \
	cpa-capture/python.c \
	cpa-capture/fpframes.c \
	cpa-capture/bpf_shared.c \
	cpa-capture/bpf_backend.c \
	cpa-capture/probes.c \
	cpa-capture/memory.c \
	cpa-capture/heap.c \
	cpa-capture/java.c \
	cpa-capture/perf_backend.c
CAPTURE_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/cpa-capture \
	-DCPA_PKGLIBDIR='"$(pkglibdir)"'
CAPTURE_CFLAGS = $(AM_CFLAGS) $(LIBBPF_CFLAGS) $(LIBDW_CFLAGS)
CAPTURE_LIBS = cpa-capture/libcapture.a $(LIBCPA_FORMAT) $(LIBCPA_RUNTIME) \
	$(LIBBPF_LIBS) \
	$(LIBDW_LIBS) $(LIBELF_LIBS) $(M_LIBS)
cpa_capture_libcapture_a_CPPFLAGS = $(CAPTURE_CPPFLAGS)
cpa_capture_libcapture_a_CFLAGS = $(CAPTURE_CFLAGS)
# the loaders embed the BPF objects through their skeletons
cpa-capture/libcapture_a-bpf_backend.$(OBJEXT): bpf/capture.skel.h
cpa-capture/libcapture_a-memory.$(OBJEXT): bpf/mem.skel.h
cpa-capture/libcapture_a-heap.$(OBJEXT): bpf/heap.skel.h

bin_PROGRAMS += cpa-capture/cpa-capture
cpa_capture_cpa_capture_SOURCES = cpa-capture/main.c
cpa_capture_cpa_capture_CPPFLAGS = $(CAPTURE_CPPFLAGS)
cpa_capture_cpa_capture_CFLAGS = $(CAPTURE_CFLAGS)
cpa_capture_cpa_capture_LDADD = $(CAPTURE_LIBS)
EXTRA_DIST += docs/capture.md docs/img/mem-usage.png
dist_man1_MANS += docs/man/cpa-capture.1

# Tests: real BPF capture against workloads with known behaviour.
dist_check_DATA += tests/bats/capture_helper.bash
TESTS += tests/bats/capture-options.bats tests/bats/capture.bats \
	tests/bats/capture-offcpu.bats tests/bats/offcpu-callers.bats
EXTRA_DIST += tests/bats/capture-options.bats tests/bats/capture.bats \
	tests/bats/capture-offcpu.bats tests/bats/offcpu-callers.bats
check_PROGRAMS += tests/workloads/sleeper tests/workloads/writer \
	tests/workloads/blocker
tests_workloads_sleeper_SOURCES = tests/workloads/sleeper.c \
	tests/workloads/start.h
tests_workloads_sleeper_CFLAGS = $(WL_FP_CFLAGS)
tests_workloads_sleeper_LDADD = -lpthread
tests_workloads_writer_SOURCES = tests/workloads/writer.c \
	tests/workloads/start.h
tests_workloads_writer_CFLAGS = $(WL_FP_CFLAGS)
tests_workloads_blocker_SOURCES = tests/workloads/blocker.c \
	tests/workloads/start.h
tests_workloads_blocker_CFLAGS = $(WL_FP_CFLAGS)
tests_workloads_blocker_LDADD = -lpthread

# Unit tests of the parts that need no kernel: release checks, probe specs
# and the time-ordered output queue.
check_PROGRAMS += tests/unit/capture_test
tests_unit_capture_test_SOURCES = tests/unit/capture_test.c tests/unit/unit.h
tests_unit_capture_test_CPPFLAGS = $(CAPTURE_CPPFLAGS)
tests_unit_capture_test_CFLAGS = $(CAPTURE_CFLAGS)
tests_unit_capture_test_LDADD = $(CAPTURE_LIBS)
TESTS += tests/unit/capture_test

# Fuzz target: what a JVM's agent sends (java.c's reader of lib/runtime/jvmagent.h
# records); `make check` replays its corpus (tests/bats/fuzz.bats).
FUZZ_TARGETS += capture_java
FUZZ_TOOL_capture_java = capture
FUZZ_CFLAGS_capture = -I$(srcdir)/cpa-capture \
	-DCPA_PKGLIBDIR='"$(pkglibdir)"' $(LIBBPF_CFLAGS)
check_PROGRAMS += tests/fuzz/capture_java_replay
tests_fuzz_capture_java_replay_SOURCES = tests/fuzz/capture_java_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_capture_java_replay_CPPFLAGS = $(CAPTURE_CPPFLAGS)
tests_fuzz_capture_java_replay_LDADD = $(CAPTURE_LIBS)

# --mem: memory by allocating stack, against a workload that maps and
# touches known numbers of bytes from known functions.
TESTS += tests/bats/mem-capture.bats tests/bats/btf.bats
EXTRA_DIST += tests/bats/mem-capture.bats
check_PROGRAMS += tests/workloads/memory
tests_workloads_memory_SOURCES = tests/workloads/memory.c \
	tests/workloads/start.h
tests_workloads_memory_CFLAGS = $(WL_FP_CFLAGS)

# --mem malloc: sampled heap profiling against known malloc totals
TESTS += tests/bats/heap.bats
EXTRA_DIST += tests/bats/heap.bats
check_PROGRAMS += tests/workloads/heap
tests_workloads_heap_SOURCES = tests/workloads/heap.c tests/workloads/start.h
tests_workloads_heap_CFLAGS = $(WL_FP_CFLAGS)

# Hostile processes against the capture (tests/hostile/): fifo_python
# puts a FIFO where a python3.8 mapping was.
TESTS += tests/bats/capture-hostile.bats
EXTRA_DIST += tests/bats/capture-hostile.bats
check_PROGRAMS += tests/hostile/fifo_python
tests_hostile_fifo_python_SOURCES = tests/hostile/fifo_python.c
tests_hostile_fifo_python_CFLAGS = $(WL_FP_CFLAGS)
