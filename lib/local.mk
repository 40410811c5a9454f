# lib/: code shared by the tools, in four layers, each its own archive.
# A layer uses only the layers below it, and the build holds it to that:
# its sources see only their own and the lower layers' headers, and each
# archive is linked after the ones that use it.
#
#   analysis   topfuncs                          (uses format, base)
#   format     stream, symstream, store, folded,  (uses base)
#              labels, owner, pprof, clickhouse,
#              cpastore (stores CPA wrote)
#   runtime    jvmattach, jvmagent, pyoffsets     (uses base)
#   base       log, buf, hash, htab, intern, name, clock, io, time,
#              procfs, safeopen, cpuset, options, selfstats, child,
#              regbound, outfile, promtext (libc only)
#
# A tool links the layers it needs, highest first: $(LIBCPA_FORMAT) and the
# others below name an archive with every layer it needs after it. New
# code goes in the lowest layer whose headers are all it needs.
LIB_CPPFLAGS = -include $(top_builddir)/config.h
LIBCPA_BASE = lib/base/libcpa-base.a
LIBCPA_FORMAT = lib/format/libcpa-format.a $(LIBCPA_BASE)
LIBCPA_RUNTIME = lib/runtime/libcpa-runtime.a $(LIBCPA_BASE)
LIBCPA_ANALYSIS = lib/analysis/libcpa-analysis.a $(LIBCPA_FORMAT)
# every layer, for the tools and tests that use all of them
LIBCPA = lib/analysis/libcpa-analysis.a lib/format/libcpa-format.a \
	lib/runtime/libcpa-runtime.a $(LIBCPA_BASE)
# the include path of code above lib/: every layer's headers
LIBCPA_CPPFLAGS = -I$(top_srcdir)/lib/analysis -I$(top_srcdir)/lib/format \
	-I$(top_srcdir)/lib/runtime -I$(top_srcdir)/lib/base

noinst_LIBRARIES += lib/base/libcpa-base.a
lib_base_libcpa_base_a_CPPFLAGS = $(LIB_CPPFLAGS) -I$(top_srcdir)/lib/base
lib_base_libcpa_base_a_SOURCES = \
	lib/base/log.c lib/base/log.h \
	lib/base/buf.c lib/base/buf.h \
	lib/base/le.h lib/base/leb128.h \
	lib/base/hash.c lib/base/hash.h \
	lib/base/htab.c lib/base/htab.h \
	lib/base/intern.c lib/base/intern.h \
	lib/base/clock.h \
	lib/base/io.c lib/base/io.h \
	lib/base/timeparse.c lib/base/timeparse.h \
	lib/base/cpuset.c lib/base/cpuset.h \
	lib/base/procfs.c lib/base/procfs.h \
	lib/base/safeopen.c lib/base/safeopen.h \
	lib/base/name.c lib/base/name.h \
	lib/base/options.c lib/base/options.h \
	lib/base/selfstats.c lib/base/selfstats.h \
	lib/base/child.c lib/base/child.h \
	lib/base/regbound.c lib/base/regbound.h \
	lib/base/outfile.c lib/base/outfile.h \
	lib/base/promtext.c lib/base/promtext.h

noinst_LIBRARIES += lib/format/libcpa-format.a
lib_format_libcpa_format_a_CPPFLAGS = $(LIB_CPPFLAGS) \
	-I$(top_srcdir)/lib/format -I$(top_srcdir)/lib/base
lib_format_libcpa_format_a_SOURCES = \
	lib/format/stream.c lib/format/stream.h \
	lib/format/symstream.c lib/format/symstream.h \
	lib/format/store.h lib/format/store_format.c \
	lib/format/store_write.c lib/format/store_read.c \
	lib/format/cpastore.c lib/format/cpastore.h \
	lib/format/folded.c lib/format/folded.h \
	lib/format/httpc.c lib/format/httpc.h \
	lib/format/protobuf.c lib/format/protobuf.h \
	lib/format/owner.c lib/format/owner.h \
	lib/format/labels.c lib/format/labels.h \
	lib/format/pprof.c lib/format/pprof.h \
	lib/format/clickhouse.c lib/format/clickhouse.h

noinst_LIBRARIES += lib/runtime/libcpa-runtime.a
# pyoffsets fills the BPF program's offset table (bpf/pyframes.h)
lib_runtime_libcpa_runtime_a_CPPFLAGS = $(LIB_CPPFLAGS) \
	-I$(top_srcdir)/lib/runtime -I$(top_srcdir)/lib/base -I$(top_srcdir)/bpf
lib_runtime_libcpa_runtime_a_SOURCES = \
	lib/runtime/jvmagent.h \
	lib/runtime/jvmattach.c lib/runtime/jvmattach.h \
	lib/runtime/pyoffsets.c lib/runtime/pyoffsets.h

noinst_LIBRARIES += lib/analysis/libcpa-analysis.a
lib_analysis_libcpa_analysis_a_CPPFLAGS = $(LIB_CPPFLAGS) \
	-I$(top_srcdir)/lib/analysis -I$(top_srcdir)/lib/format \
	-I$(top_srcdir)/lib/base
lib_analysis_libcpa_analysis_a_SOURCES = \
	lib/analysis/topfuncs.c lib/analysis/topfuncs.h

# Every source of every layer, for builds outside automake's (make fuzz).
LIBCPA_SRCS = $(filter %.c,$(lib_base_libcpa_base_a_SOURCES) \
	$(lib_format_libcpa_format_a_SOURCES) \
	$(lib_runtime_libcpa_runtime_a_SOURCES) \
	$(lib_analysis_libcpa_analysis_a_SOURCES))

# Each layer linked whole with only the layers below it: a layer that
# calls up fails `make check` at link time (tests/unit/layer_test.c).
layer_whole = -Wl,--whole-archive,$(1),--no-whole-archive
check_PROGRAMS += tests/unit/layer_base tests/unit/layer_format \
	tests/unit/layer_runtime tests/unit/layer_analysis
tests_unit_layer_base_SOURCES = tests/unit/layer_test.c
tests_unit_layer_base_CPPFLAGS = -DLAYER='"base"'
tests_unit_layer_base_LDFLAGS = $(call layer_whole,lib/base/libcpa-base.a)
tests_unit_layer_base_LDADD = $(M_LIBS)
EXTRA_tests_unit_layer_base_DEPENDENCIES = $(LIBCPA_BASE)
tests_unit_layer_format_SOURCES = tests/unit/layer_test.c
tests_unit_layer_format_CPPFLAGS = -DLAYER='"format"'
tests_unit_layer_format_LDFLAGS = \
	$(call layer_whole,lib/format/libcpa-format.a)
tests_unit_layer_format_LDADD = $(LIBCPA_BASE) $(ZSTD_LIBS) $(ZLIB_LIBS) \
	$(M_LIBS)
EXTRA_tests_unit_layer_format_DEPENDENCIES = $(LIBCPA_FORMAT)
tests_unit_layer_runtime_SOURCES = tests/unit/layer_test.c
tests_unit_layer_runtime_CPPFLAGS = -DLAYER='"runtime"'
tests_unit_layer_runtime_LDFLAGS = \
	$(call layer_whole,lib/runtime/libcpa-runtime.a)
tests_unit_layer_runtime_LDADD = $(LIBCPA_BASE) $(M_LIBS)
EXTRA_tests_unit_layer_runtime_DEPENDENCIES = $(LIBCPA_RUNTIME)
tests_unit_layer_analysis_SOURCES = tests/unit/layer_test.c
tests_unit_layer_analysis_CPPFLAGS = -DLAYER='"analysis"'
tests_unit_layer_analysis_LDFLAGS = \
	$(call layer_whole,lib/analysis/libcpa-analysis.a)
tests_unit_layer_analysis_LDADD = $(LIBCPA_FORMAT) $(ZSTD_LIBS) $(ZLIB_LIBS) \
	$(M_LIBS)
EXTRA_tests_unit_layer_analysis_DEPENDENCIES = $(LIBCPA_ANALYSIS)
TESTS += tests/unit/layer_base tests/unit/layer_format \
	tests/unit/layer_runtime tests/unit/layer_analysis
