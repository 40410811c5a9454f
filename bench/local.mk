# bench/: benchmarks, run by hand or by bench/run; never part of make check.
