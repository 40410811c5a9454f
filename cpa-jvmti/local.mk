# libcpa-jvmti.so: the JVMTI agent cpa-capture loads into a running JVM
# (--java-alloc, --java-live); see docs/capture.md, "Java allocations".
# Built without the sanitizers of a sanitized build: it runs inside a JVM,
# which does not load the sanitizer runtimes first.
JVMTI_SRCS = cpa-jvmti/agent.c cpa-jvmti/events.c cpa-jvmti/names.c \
	cpa-jvmti/queue.c
JVMTI_CFLAGS = $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS))
agentdir = $(pkglibdir)
agent_DATA = cpa-jvmti/libcpa-jvmti.so
cpa-jvmti/libcpa-jvmti.so: $(JVMTI_SRCS) cpa-jvmti/agent.h lib/jvmagent.h
	@$(MKDIR_P) cpa-jvmti
	$(AM_V_CC)$(CC) -std=gnu11 -D_GNU_SOURCE $(WARN_CFLAGS) $(JVMTI_CFLAGS) \
		-fPIC -shared -fvisibility=hidden -pthread $(JVMTI_CPPFLAGS) \
		-I$(top_srcdir)/lib -Wl,-z,defs -o $@ \
		$(addprefix $(srcdir)/,$(JVMTI_SRCS))
CLEANFILES += cpa-jvmti/libcpa-jvmti.so
EXTRA_DIST += $(JVMTI_SRCS) cpa-jvmti/agent.h

# Tests: real captures of a JVM's allocations and live objects.
TESTS += tests/bats/java-alloc.bats
EXTRA_DIST += tests/bats/java-alloc.bats tests/workloads/JavaAlloc.java
