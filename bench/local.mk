# bench/local.mk -- micro-benchmarks (not tests; no timings belong in tests). `make bench`
# builds and runs them.
noinst_PROGRAMS += bench/bench_kernels
bench_bench_kernels_SOURCES = bench/bench_kernels.c
bench_bench_kernels_LDADD = libpdlang.a $(PD_LIBS)
noinst_PROGRAMS += bench/bench_exec
bench_bench_exec_SOURCES = bench/bench_exec.c
bench_bench_exec_LDADD = libpdlang.a $(PD_LIBS)

bench: bench/bench_kernels$(EXEEXT) bench/bench_exec$(EXEEXT)
	./bench/bench_kernels$(EXEEXT)
	./bench/bench_exec$(EXEEXT)
.PHONY: bench
