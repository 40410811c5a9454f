# lib/: code shared by every tool, built once into libcpa.a, and listed
# only here.
noinst_LIBRARIES += lib/libcpa.a
lib_libcpa_a_SOURCES = \
	lib/stream.c lib/stream.h \
	lib/symstream.c lib/symstream.h \
	lib/intern.c lib/intern.h \
	lib/hash.c lib/hash.h \
	lib/htab.c lib/htab.h \
	lib/buf.c lib/buf.h lib/le.h \
	lib/folded.c lib/folded.h \
	lib/labels.c lib/labels.h \
	lib/log.c lib/log.h \
	lib/options.c lib/options.h \
	lib/timeparse.c lib/timeparse.h \
	lib/cpuset.c lib/cpuset.h lib/leb128.h \
	lib/owner.c lib/owner.h \
	lib/jvmattach.c lib/jvmattach.h lib/jvmagent.h \
	lib/selfstats.c lib/selfstats.h \
	lib/store.h lib/store_format.c lib/store_write.c lib/store_read.c \
	lib/pprof.c lib/pprof.h \
	lib/topfuncs.c lib/topfuncs.h \
	lib/pyoffsets.c lib/pyoffsets.h \
	lib/procfs.c lib/procfs.h \
	lib/safeopen.c lib/safeopen.h \
	lib/name.c lib/name.h \
	lib/clickhouse.c lib/clickhouse.h
