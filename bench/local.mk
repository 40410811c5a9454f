# bench/: benchmarks, run by hand or by bench/run; never part of make check.
# Their programs are built on demand (make bench-programs).
EXTRA_PROGRAMS += bench/workload_fp bench/workload_nofp
bench_workload_fp_SOURCES = bench/workload.c
bench_workload_fp_CFLAGS = -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-inline
bench_workload_fp_LDADD = -lpthread
bench_workload_nofp_SOURCES = bench/workload.c
bench_workload_nofp_CFLAGS = -O2 -g -fomit-frame-pointer -fno-inline
bench_workload_nofp_LDADD = -lpthread
bench-programs: bench/workload_fp bench/workload_nofp
.PHONY: bench-programs
CLEANFILES += bench/workload_fp bench/workload_nofp
EXTRA_DIST += bench/run
EXTRA_DIST += bench/offcpu-cost
EXTRA_DIST += bench/heap-cost
EXTRA_DIST += bench/mem-cost
EXTRA_DIST += bench/python-cost
EXTRA_DIST += bench/bpf-cost bench/rss-hour bench/oneshot-cost bench/scale
EXTRA_DIST += bench/fleet
EXTRA_DIST += bench/apiserver bench/job-driver
