# cpa-unwind: see docs/man/cpa-unwind.1 and docs/unwinding.md
# Everything but main() is one library, which the program, its unit tests
# and its fuzz targets link: a new file is listed here once.
noinst_LIBRARIES += cpa-unwind/libunwind.a
cpa_unwind_libunwind_a_SOURCES = \
	cpa-unwind/unwind.h \
	cpa-unwind/run.c \
	cpa-unwind/sample.c \
	cpa-unwind/allocs.c cpa-unwind/allocs.h \
	cpa-unwind/cgroups.c cpa-unwind/cgroups.h \
	cpa-unwind/bestof.c cpa-unwind/roottail.c \
	cpa-unwind/walk.c cpa-unwind/walk.h cpa-unwind/splice.c \
	cpa-unwind/cfi.c cpa-unwind/cfi.h \
	cpa-unwind/cfi_exec.c cpa-unwind/cfi_exec.h \
	cpa-unwind/frames.c \
	cpa-unwind/proc.c cpa-unwind/proc.h \
	cpa-unwind/elfcache.c cpa-unwind/elfcache.h \
	cpa-unwind/elfobj.c cpa-unwind/elfobj.h \
	cpa-unwind/filepages.c cpa-unwind/filepages.h \
	cpa-unwind/dbgfetch.c cpa-unwind/dbgfetch.h \
	cpa-unwind/symtab.c cpa-unwind/symtab.h \
	cpa-unwind/kallsyms.c cpa-unwind/kallsyms.h \
	cpa-unwind/perfmap.c cpa-unwind/perfmap.h cpa-unwind/perfmap_load.c \
	cpa-unwind/budget.h cpa-unwind/node.c cpa-unwind/node.h \
	cpa-unwind/jvm.c cpa-unwind/jvm.h \
	cpa-unwind/jvminterp.c cpa-unwind/jvminterp.h \
	cpa-unwind/jvmstructs.c cpa-unwind/jvmstructs.h \
	cpa-unwind/jvmcode.c cpa-unwind/jvmcode.h \
	cpa-unwind/jvmwalk.c cpa-unwind/jvmwalk.h \
	cpa-unwind/pycode.c cpa-unwind/pycode.h \
	cpa-unwind/python.c cpa-unwind/python.h \
	cpa-unwind/demangle.c cpa-unwind/demangle.h \
	cpa-unwind/inline.c cpa-unwind/inline.h \
	cpa-unwind/output.c cpa-unwind/output.h \
	cpa-unwind/stats.c
UNWIND_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/cpa-unwind
UNWIND_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) \
	$(DEBUGINFOD_CFLAGS)
UNWIND_LIBS = cpa-unwind/libunwind.a $(LIBCPA_FORMAT) $(LIBCPA_RUNTIME) \
	$(LIBDW_LIBS) $(LIBELF_LIBS) \
	$(DEBUGINFOD_LIBS) $(IBERTY_LIBS) $(M_LIBS)
cpa_unwind_libunwind_a_CPPFLAGS = $(UNWIND_CPPFLAGS)
cpa_unwind_libunwind_a_CFLAGS = $(UNWIND_CFLAGS)

bin_PROGRAMS += cpa-unwind/cpa-unwind
cpa_unwind_cpa_unwind_SOURCES = cpa-unwind/main.c
cpa_unwind_cpa_unwind_CPPFLAGS = $(UNWIND_CPPFLAGS)
cpa_unwind_cpa_unwind_CFLAGS = $(UNWIND_CFLAGS)
cpa_unwind_cpa_unwind_LDADD = $(UNWIND_LIBS)

dist_man1_MANS += docs/man/cpa-unwind.1
EXTRA_DIST += docs/unwinding.md

# Workloads: selfsnap writes raw samples of its own stack (no BPF needed);
# the others are spinners with known chains built without frame pointers,
# and qsort_chain_fp the chain through libc built with them.
check_PROGRAMS += tests/workloads/selfsnap tests/workloads/qsort_chain \
	tests/workloads/qsort_chain_fp \
	tests/workloads/vdso_chain tests/workloads/anon_exec
tests_workloads_selfsnap_SOURCES = tests/workloads/selfsnap.c
tests_workloads_selfsnap_CFLAGS = $(WL_NOFP_CFLAGS)
tests_workloads_selfsnap_LDADD = $(LIBCPA_FORMAT)
tests_workloads_qsort_chain_SOURCES = tests/workloads/qsort_chain.c
tests_workloads_qsort_chain_CFLAGS = $(WL_NOFP_CFLAGS)
tests_workloads_qsort_chain_fp_SOURCES = tests/workloads/qsort_chain.c
tests_workloads_qsort_chain_fp_CFLAGS = $(WL_FP_CFLAGS)
tests_workloads_vdso_chain_SOURCES = tests/workloads/vdso_chain.c
tests_workloads_vdso_chain_CFLAGS = $(WL_NOFP_CFLAGS)
# Code in anonymous memory named by prctl (debuginfo.bats).
tests_workloads_anon_exec_SOURCES = tests/workloads/anon_exec.c
tests_workloads_anon_exec_LDADD = $(LIBCPA_FORMAT)
# Built by tests/bats/unwind-capture.bats with the language's own compiler
# (g++, rustc, go) or run by node; skipped where that is missing.
EXTRA_DIST += tests/workloads/cxx_chain.cc tests/workloads/rust_chain.rs \
	tests/workloads/go_chain.go tests/workloads/js_chain.js \
	tests/workloads/js_churn.js \
	tests/workloads/inline_chain.c

# Java: JVMs asked for their perf maps; the workload is compiled by the
# suite with the JDK's javac.
TESTS += tests/bats/java.bats tests/bats/java-jfr.bats \
	tests/bats/java-hostile.bats
EXTRA_DIST += tests/bats/java.bats tests/workloads/JavaChain.java \
	tests/bats/java-jfr.bats tests/workloads/JavaInline.java \
	tests/workloads/JavaDeopt.java \
	tests/bats/java-hostile.bats tests/hostile/fake_jvm.c \
	tests/tools/java-shares bench/java-shares \
	bench/java-cost docs/img/java-chain.png

# Hostile objects (tests/hostile/): hostile-elf writes ELF files that cost
# as much as a small file can, hostile-spin maps one and spins in it.
check_PROGRAMS += tests/hostile/hostile-elf tests/hostile/hostile-spin
tests_hostile_hostile_elf_SOURCES = tests/hostile/hostile-elf.c \
	tests/hostile/hostile.h
tests_hostile_hostile_elf_LDADD = $(LIBCPA_BASE) $(ZLIB_LIBS)
tests_hostile_hostile_spin_SOURCES = tests/hostile/hostile-spin.c \
	tests/hostile/hostile.h
tests_hostile_hostile_spin_CFLAGS = $(WL_NOFP_CFLAGS)

TESTS += tests/bats/unwind.bats tests/bats/unwind-capture.bats \
	tests/bats/unwind-inline.bats tests/bats/unwind-hostile-objects.bats \
	tests/bats/unwind-hostile-files.bats tests/bats/debuginfo.bats
# The soak test runs by hand (see its header); the bench is bench/.
EXTRA_DIST += tests/bats/unwind.bats tests/bats/unwind-capture.bats \
	tests/bats/unwind-inline.bats tests/bats/unwind-hostile-objects.bats \
	tests/bats/unwind-soak.bats bench/unwind-bench bench/inline-cost \
	bench/chain-shares
# Hostile processes and files, built by the suite that uses them.
EXTRA_DIST += tests/bats/unwind-hostile-files.bats tests/bats/debuginfo.bats \
	tests/hostile/swap_mapper.c tests/hostile/swap_lib.c

# Fuzz targets for the parsers cpa-unwind adds: ELF headers, symbols, CFI
# compilation and the DWARF of inlined instances (unwind_elf), JIT perf
# maps (unwind_perfmap), a Python process's code objects (pycode), a
# JVM's nmethod debug information
# (jvm_scopes), and the whole record loop on arbitrary streams
# (unwind_stream). `make check` replays their corpora
# (tests/bats/unwind.bats); `make fuzz` runs them under libFuzzer with the
# other targets.
UNWIND_FUZZ_TARGETS = unwind_elf unwind_perfmap unwind_stream pycode \
	jvm_scopes
FUZZ_TARGETS += $(UNWIND_FUZZ_TARGETS)
FUZZ_TOOL_unwind_elf = unwind
FUZZ_TOOL_unwind_perfmap = unwind
FUZZ_TOOL_unwind_stream = unwind
FUZZ_TOOL_pycode = unwind
FUZZ_TOOL_jvm_scopes = unwind
FUZZ_CFLAGS_unwind = -I$(srcdir)/cpa-unwind $(LIBDW_CFLAGS) $(DEBUGINFOD_CFLAGS)
FUZZ_LIBS_unwind = $(DEBUGINFOD_LIBS)
check_PROGRAMS += tests/fuzz/unwind_elf_replay tests/fuzz/unwind_perfmap_replay \
	tests/fuzz/unwind_stream_replay tests/fuzz/pycode_replay \
	tests/fuzz/jvm_scopes_replay
tests_fuzz_unwind_elf_replay_SOURCES = tests/fuzz/unwind_elf_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_unwind_perfmap_replay_SOURCES = tests/fuzz/unwind_perfmap_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_unwind_stream_replay_SOURCES = tests/fuzz/unwind_stream_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_pycode_replay_SOURCES = tests/fuzz/pycode_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_jvm_scopes_replay_SOURCES = tests/fuzz/jvm_scopes_fuzz.c \
	tests/fuzz/replay.c
tests_fuzz_jvm_scopes_replay_CPPFLAGS = $(UNWIND_CPPFLAGS)
tests_fuzz_jvm_scopes_replay_CFLAGS = $(UNWIND_CFLAGS)
tests_fuzz_jvm_scopes_replay_LDADD = $(UNWIND_LIBS)
tests_fuzz_unwind_elf_replay_CPPFLAGS = $(UNWIND_CPPFLAGS)
tests_fuzz_unwind_perfmap_replay_CPPFLAGS = $(UNWIND_CPPFLAGS)
tests_fuzz_unwind_stream_replay_CPPFLAGS = $(UNWIND_CPPFLAGS)
tests_fuzz_pycode_replay_CPPFLAGS = $(UNWIND_CPPFLAGS)
tests_fuzz_unwind_elf_replay_CFLAGS = $(UNWIND_CFLAGS)
tests_fuzz_unwind_perfmap_replay_CFLAGS = $(UNWIND_CFLAGS)
tests_fuzz_unwind_stream_replay_CFLAGS = $(UNWIND_CFLAGS)
tests_fuzz_pycode_replay_CFLAGS = $(UNWIND_CFLAGS)
tests_fuzz_unwind_elf_replay_LDADD = $(UNWIND_LIBS)
tests_fuzz_unwind_perfmap_replay_LDADD = $(UNWIND_LIBS)
tests_fuzz_unwind_stream_replay_LDADD = $(UNWIND_LIBS)
tests_fuzz_pycode_replay_LDADD = $(UNWIND_LIBS)

# Unit tests: the walker on hand-made tables and stacks, symbol lookup,
# perf maps and display names.
check_PROGRAMS += tests/unit/unwind_test
tests_unit_unwind_test_SOURCES = tests/unit/unwind_test.c tests/unit/unit.h
tests_unit_unwind_test_CPPFLAGS = $(UNWIND_CPPFLAGS)
tests_unit_unwind_test_CFLAGS = $(UNWIND_CFLAGS)
tests_unit_unwind_test_LDADD = $(UNWIND_LIBS)
TESTS += tests/unit/unwind_test

# Hostile processes (tests/hostile/): forged_pycode lays out forged
# Python code objects in its memory and writes the stream naming them;
# perfmap_flood runs JIT code with a perf map that works against us.
TESTS += tests/bats/unwind-hostile-procs.bats
EXTRA_DIST += tests/bats/unwind-hostile-procs.bats
check_PROGRAMS += tests/hostile/forged_pycode tests/hostile/perfmap_flood
tests_hostile_forged_pycode_SOURCES = tests/hostile/forged_pycode.c
tests_hostile_forged_pycode_LDADD = $(LIBCPA_FORMAT) $(LIBCPA_RUNTIME)
tests_hostile_perfmap_flood_SOURCES = tests/hostile/perfmap_flood.c
tests_hostile_perfmap_flood_CFLAGS = $(WL_FP_CFLAGS)
