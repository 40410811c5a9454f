# libcpa-jvmti.so: the JVMTI agent cpa-capture loads into a running JVM
# (--java-alloc, --java-live); see docs/capture.md, "Java allocations".
# A shared object built as a program (the build uses no libtool), and left
# out by configure --without-jvmti. It links no lib/ archive (they are not
# built -fPIC): the few lib/base parts it uses are compiled into it.
jvmtidir = $(pkglibdir)
if WITH_JVMTI
jvmti_PROGRAMS = cpa-jvmti/libcpa-jvmti.so
endif
cpa_jvmti_libcpa_jvmti_so_SOURCES = cpa-jvmti/agent.c cpa-jvmti/agent.h \
	cpa-jvmti/events.c cpa-jvmti/names.c cpa-jvmti/queue.c \
	lib/base/io.c
cpa_jvmti_libcpa_jvmti_so_CPPFLAGS = -include $(top_builddir)/config.h \
	-I$(top_srcdir)/lib/runtime -I$(top_srcdir)/lib/base $(JVMTI_CPPFLAGS)
cpa_jvmti_libcpa_jvmti_so_CFLAGS = $(AM_CFLAGS) -fPIC -fvisibility=hidden \
	-pthread
cpa_jvmti_libcpa_jvmti_so_LDFLAGS = -shared -Wl,-z,defs -pthread
# It runs inside a JVM, which does not load the sanitizer runtimes first:
# a sanitized build builds it without its -fsanitize flags.
$(cpa_jvmti_libcpa_jvmti_so_OBJECTS) cpa-jvmti/libcpa-jvmti.so: \
	override CFLAGS := $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS))

# Tests: real captures of a JVM's allocations and live objects.
TESTS += tests/bats/java-alloc.bats
EXTRA_DIST += tests/bats/java-alloc.bats tests/workloads/JavaAlloc.java
