# cpa-query: see docs/man/cpa-query.1
# Everything but main() is one library, linked by the program and its tests.
noinst_LIBRARIES += cpa-query/libquery.a
cpa_query_libquery_a_SOURCES = \
	cpa-query/opts.c cpa-query/opts.h \
	cpa-query/scan.c cpa-query/scan.h \
	cpa-query/filter.c cpa-query/filter.h \
	cpa-query/map.c cpa-query/map.h \
	cpa-query/output.c cpa-query/output.h \
	cpa-query/prune.c \
	cpa-query/list.c cpa-query/list.h \
	cpa-query/follow.c cpa-query/follow.h \
	cpa-query/fleet.c cpa-query/fleet.h
QUERY_LIBS = cpa-query/libquery.a $(LIBCPA_ANALYSIS) $(ZSTD_LIBS) $(ZLIB_LIBS) \
	$(M_LIBS) -lpthread
bin_PROGRAMS += cpa-query/cpa-query
cpa_query_cpa_query_SOURCES = cpa-query/main.c
cpa_query_cpa_query_LDADD = $(QUERY_LIBS)
dist_man1_MANS += docs/man/cpa-query.1

TESTS += tests/bats/query.bats tests/bats/mem-query.bats \
	tests/bats/cpa-stores.bats
