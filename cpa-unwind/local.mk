# cpa-unwind: see docs/man/cpa-unwind.1 and docs/unwinding.md
bin_PROGRAMS += cpa-unwind/cpa-unwind
cpa_unwind_cpa_unwind_SOURCES = \
	cpa-unwind/main.c cpa-unwind/unwind.h \
	cpa-unwind/run.c \
	cpa-unwind/sample.c \
	cpa-unwind/allocs.c cpa-unwind/allocs.h \
	cpa-unwind/cgroups.c cpa-unwind/cgroups.h \
	cpa-unwind/bestof.c \
	cpa-unwind/walk.c cpa-unwind/walk.h cpa-unwind/splice.c \
	cpa-unwind/cfi.c cpa-unwind/cfi.h \
	cpa-unwind/cfi_exec.c cpa-unwind/cfi_exec.h \
	cpa-unwind/frames.c \
	cpa-unwind/proc.c cpa-unwind/proc.h \
	cpa-unwind/elfcache.c cpa-unwind/elfcache.h \
	cpa-unwind/elfobj.c cpa-unwind/elfobj.h \
	cpa-unwind/dbgfetch.c cpa-unwind/dbgfetch.h \
	cpa-unwind/symtab.c cpa-unwind/symtab.h \
	cpa-unwind/kallsyms.c cpa-unwind/kallsyms.h \
	cpa-unwind/perfmap.c cpa-unwind/perfmap.h \
	cpa-unwind/jvm.c cpa-unwind/jvm.h \
	cpa-unwind/jvminterp.c cpa-unwind/jvminterp.h \
	cpa-unwind/pycode.c cpa-unwind/pycode.h \
	cpa-unwind/python.c cpa-unwind/python.h \
	cpa-unwind/demangle.c cpa-unwind/demangle.h \
	cpa-unwind/inline.c cpa-unwind/inline.h \
	cpa-unwind/output.c cpa-unwind/output.h \
	cpa-unwind/stats.c
cpa_unwind_cpa_unwind_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) \
	$(DEBUGINFOD_CFLAGS)
cpa_unwind_cpa_unwind_LDADD = lib/libcpa.a $(LIBDW_LIBS) $(LIBELF_LIBS) \
	$(DEBUGINFOD_LIBS) $(IBERTY_LIBS) $(M_LIBS)

dist_man1_MANS += docs/man/cpa-unwind.1
EXTRA_DIST += docs/unwinding.md

# Workloads: selfsnap writes raw samples of its own stack (no BPF needed);
# the others are spinners with known chains built without frame pointers.
check_PROGRAMS += tests/workloads/selfsnap tests/workloads/qsort_chain \
	tests/workloads/vdso_chain tests/workloads/anon_exec
tests_workloads_selfsnap_SOURCES = tests/workloads/selfsnap.c
tests_workloads_selfsnap_CFLAGS = $(WL_NOFP_CFLAGS)
tests_workloads_selfsnap_LDADD = lib/libcpa.a
tests_workloads_qsort_chain_SOURCES = tests/workloads/qsort_chain.c
tests_workloads_qsort_chain_CFLAGS = $(WL_NOFP_CFLAGS)
tests_workloads_vdso_chain_SOURCES = tests/workloads/vdso_chain.c
tests_workloads_vdso_chain_CFLAGS = $(WL_NOFP_CFLAGS)
# Code in anonymous memory named by prctl (debuginfo.bats).
tests_workloads_anon_exec_SOURCES = tests/workloads/anon_exec.c
tests_workloads_anon_exec_LDADD = lib/libcpa.a
# Built by tests/bats/unwind-capture.bats with the language's own compiler
# (g++, rustc, go) or run by node; skipped where that is missing.
EXTRA_DIST += tests/workloads/cxx_chain.cc tests/workloads/rust_chain.rs \
	tests/workloads/go_chain.go tests/workloads/js_chain.js \
	tests/workloads/inline_chain.c

# Java: JVMs asked for their perf maps; the workload is compiled by the
# suite with the JDK's javac.
TESTS += tests/bats/java.bats
EXTRA_DIST += tests/bats/java.bats tests/workloads/JavaChain.java \
	bench/java-cost docs/img/java-chain.png

# Hostile objects (tests/hostile/): hostile-elf writes ELF files that cost
# as much as a small file can, hostile-spin maps one and spins in it.
check_PROGRAMS += tests/hostile/hostile-elf tests/hostile/hostile-spin
tests_hostile_hostile_elf_SOURCES = tests/hostile/hostile-elf.c \
	tests/hostile/hostile.h
tests_hostile_hostile_elf_LDADD = lib/libcpa.a $(ZLIB_LIBS)
tests_hostile_hostile_spin_SOURCES = tests/hostile/hostile-spin.c \
	tests/hostile/hostile.h
tests_hostile_hostile_spin_CFLAGS = $(WL_NOFP_CFLAGS)

TESTS += tests/bats/unwind.bats tests/bats/unwind-capture.bats \
	tests/bats/unwind-inline.bats tests/bats/unwind-hostile-objects.bats \
	tests/bats/unwind-hostile-files.bats tests/bats/debuginfo.bats
# The soak test runs by hand (see its header); the bench is bench/.
EXTRA_DIST += tests/bats/unwind.bats tests/bats/unwind-capture.bats \
	tests/bats/unwind-inline.bats tests/bats/unwind-hostile-objects.bats \
	tests/bats/unwind-soak.bats bench/unwind-bench
# Hostile processes and files, built by the suite that uses them.
EXTRA_DIST += tests/bats/unwind-hostile-files.bats tests/bats/debuginfo.bats \
	tests/hostile/swap_mapper.c tests/hostile/swap_lib.c

# Fuzz targets for the parsers cpa-unwind adds: ELF headers, symbols and
# CFI compilation (unwind_elf), JIT perf maps (unwind_perfmap), and the
# whole record loop on arbitrary streams (unwind_stream). `make check`
# replays their corpora (tests/bats/unwind.bats); `make fuzz` runs them
# under libFuzzer with the other targets.
UNWIND_FUZZ_TARGETS = unwind_elf unwind_perfmap unwind_stream
UNWIND_FUZZ_SRCS_unwind_elf = cpa-unwind/elfobj.c \
	cpa-unwind/symtab.c \
	cpa-unwind/cfi.c cpa-unwind/cfi_exec.c
UNWIND_FUZZ_SRCS_unwind_perfmap = cpa-unwind/perfmap.c \
	cpa-unwind/symtab.c
UNWIND_CORE_SRCS = cpa-unwind/run.c cpa-unwind/sample.c cpa-unwind/bestof.c \
	cpa-unwind/allocs.c \
	cpa-unwind/cgroups.c \
	cpa-unwind/walk.c cpa-unwind/splice.c cpa-unwind/cfi.c \
	cpa-unwind/cfi_exec.c \
	cpa-unwind/frames.c cpa-unwind/proc.c cpa-unwind/elfcache.c \
	cpa-unwind/elfobj.c cpa-unwind/dbgfetch.c \
	cpa-unwind/symtab.c cpa-unwind/kallsyms.c \
	cpa-unwind/perfmap.c cpa-unwind/jvm.c cpa-unwind/jvminterp.c \
	cpa-unwind/demangle.c cpa-unwind/inline.c cpa-unwind/output.c \
	cpa-unwind/pycode.c cpa-unwind/python.c cpa-unwind/stats.c
check_PROGRAMS += tests/fuzz/unwind_elf_replay tests/fuzz/unwind_perfmap_replay \
	tests/fuzz/unwind_stream_replay
tests_fuzz_unwind_stream_replay_SOURCES = tests/fuzz/unwind_stream_fuzz.c \
	tests/fuzz/replay.c $(UNWIND_CORE_SRCS)
tests_fuzz_unwind_stream_replay_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_fuzz_unwind_stream_replay_LDADD = lib/libcpa.a $(LIBDW_LIBS) \
	$(LIBELF_LIBS) $(DEBUGINFOD_LIBS) $(IBERTY_LIBS) $(M_LIBS)
tests_fuzz_unwind_elf_replay_SOURCES = tests/fuzz/unwind_elf_fuzz.c \
	tests/fuzz/replay.c $(UNWIND_FUZZ_SRCS_unwind_elf)
tests_fuzz_unwind_elf_replay_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_fuzz_unwind_elf_replay_LDADD = lib/libcpa.a $(LIBDW_LIBS) $(LIBELF_LIBS)
tests_fuzz_unwind_perfmap_replay_SOURCES = tests/fuzz/unwind_perfmap_fuzz.c \
	tests/fuzz/replay.c $(UNWIND_FUZZ_SRCS_unwind_perfmap)
tests_fuzz_unwind_perfmap_replay_LDADD = lib/libcpa.a $(LIBELF_LIBS)

FUZZ_TARGETS += $(UNWIND_FUZZ_TARGETS)
FUZZ_EXTRA_unwind_elf = $(UNWIND_FUZZ_SRCS_unwind_elf)
FUZZ_EXTRA_unwind_perfmap = $(UNWIND_FUZZ_SRCS_unwind_perfmap)
FUZZ_EXTRA_unwind_stream = $(UNWIND_CORE_SRCS)
FUZZ_CFLAGS_unwind_elf = $(LIBDW_CFLAGS)
FUZZ_CFLAGS_unwind_perfmap = $(LIBDW_CFLAGS)
FUZZ_CFLAGS_unwind_stream = $(LIBDW_CFLAGS)
FUZZ_LIBS_unwind_stream = $(DEBUGINFOD_LIBS)
# A Python process's code objects: line tables and str objects
FUZZ_TARGETS += pycode
FUZZ_EXTRA_pycode = cpa-unwind/pycode.c
FUZZ_CFLAGS_pycode = $(LIBDW_CFLAGS)
check_PROGRAMS += tests/fuzz/pycode_replay
tests_fuzz_pycode_replay_SOURCES = tests/fuzz/pycode_fuzz.c \
	tests/fuzz/replay.c cpa-unwind/pycode.c
tests_fuzz_pycode_replay_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_fuzz_pycode_replay_LDADD = lib/libcpa.a

# Unit tests: the walker on hand-made tables and stacks, symbol lookup,
# perf maps and display names.
check_PROGRAMS += tests/unit/unwind_test
tests_unit_unwind_test_SOURCES = tests/unit/unwind_test.c tests/unit/unit.h \
	cpa-unwind/walk.c cpa-unwind/splice.c cpa-unwind/proc.c \
	cpa-unwind/elfcache.c cpa-unwind/elfobj.c cpa-unwind/dbgfetch.c \
	cpa-unwind/symtab.c cpa-unwind/cfi.c cpa-unwind/cfi_exec.c \
	cpa-unwind/perfmap.c cpa-unwind/jvm.c cpa-unwind/jvminterp.c \
	cpa-unwind/demangle.c cpa-unwind/inline.c cpa-unwind/pycode.c cpa-unwind/output.c
tests_unit_unwind_test_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
tests_unit_unwind_test_LDADD = lib/libcpa.a $(LIBDW_LIBS) $(LIBELF_LIBS) \
	$(DEBUGINFOD_LIBS) $(IBERTY_LIBS) $(M_LIBS)
TESTS += tests/unit/unwind_test

# Hostile processes (tests/hostile/): forged_pycode lays out forged
# Python code objects in its memory and writes the stream naming them.
TESTS += tests/bats/unwind-hostile-procs.bats
EXTRA_DIST += tests/bats/unwind-hostile-procs.bats
check_PROGRAMS += tests/hostile/forged_pycode
tests_hostile_forged_pycode_SOURCES = tests/hostile/forged_pycode.c
tests_hostile_forged_pycode_LDADD = lib/libcpa.a
