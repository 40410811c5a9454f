# cpa-query: see docs/man/cpa-query.1
bin_PROGRAMS += cpa-query/cpa-query
cpa_query_cpa_query_SOURCES = \
	cpa-query/main.c \
	cpa-query/opts.c cpa-query/opts.h \
	cpa-query/scan.c cpa-query/scan.h \
	cpa-query/filter.c cpa-query/filter.h \
	cpa-query/map.c cpa-query/map.h \
	cpa-query/output.c cpa-query/output.h \
	cpa-query/prune.c \
	cpa-query/list.c cpa-query/list.h \
	cpa-query/follow.c cpa-query/follow.h
cpa_query_cpa_query_LDADD = lib/libcpa.a $(ZSTD_LIBS) -lz $(M_LIBS) -lpthread
dist_man1_MANS += docs/man/cpa-query.1

TESTS += tests/bats/query.bats tests/bats/mem-query.bats
