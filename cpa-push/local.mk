# cpa-push: see docs/man/cpa-push.1
# Everything but main() is one library, linked by the program (and by
# any unit test or fuzz target of its parts).
noinst_LIBRARIES += cpa-push/libpush.a
cpa_push_libpush_a_SOURCES = \
	cpa-push/opts.c cpa-push/opts.h \
	cpa-push/cursor.c cpa-push/cursor.h \
	cpa-push/schema.c cpa-push/schema.h \
	cpa-push/batch.c cpa-push/batch.h \
	cpa-push/source.c cpa-push/source.h
PUSH_LIBS = cpa-push/libpush.a $(LIBCPA_FORMAT) $(ZSTD_LIBS) $(M_LIBS)
bin_PROGRAMS += cpa-push/cpa-push
cpa_push_cpa_push_SOURCES = cpa-push/main.c
cpa_push_cpa_push_LDADD = $(PUSH_LIBS)
dist_man1_MANS += docs/man/cpa-push.1

# Two ClickHouse shards of the suite's own, three capturing hosts pushing,
# an outage and kills mid-stream (tests/bats/fleet_helper.bash). The
# 60-second outage is fleet-outage.bats: not in make check's budget, run by
# .ci/run.
TESTS += tests/bats/fleet.bats
dist_check_DATA += tests/bats/fleet_helper.bash
EXTRA_DIST += tests/bats/fleet-outage.bats
