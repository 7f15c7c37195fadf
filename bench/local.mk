# bench/local.mk -- micro-benchmarks (not tests; no timings belong in tests). `make bench`
# builds and runs them.
noinst_PROGRAMS += bench/bench_kernels
bench_bench_kernels_SOURCES = bench/bench_kernels.c bench/bench_util.h
bench_bench_kernels_LDADD = libpdlang-internal.la $(PD_LIBS)
noinst_PROGRAMS += bench/bench_exec
bench_bench_exec_SOURCES = bench/bench_exec.c
bench_bench_exec_LDADD = libpdlang-internal.la $(PD_LIBS)
noinst_PROGRAMS += bench/bench_train
bench_bench_train_SOURCES = bench/bench_train.c
bench_bench_train_LDADD = libpdlang-internal.la $(PD_LIBS)
noinst_PROGRAMS += bench/bench_rnn
bench_bench_rnn_SOURCES = bench/bench_rnn.c
bench_bench_rnn_LDADD = libpdlang-internal.la $(PD_LIBS)
noinst_PROGRAMS += bench/bench_rnn_op
bench_bench_rnn_op_SOURCES = bench/bench_rnn_op.c
bench_bench_rnn_op_LDADD = libpdlang-internal.la $(PD_LIBS)
noinst_PROGRAMS += bench/bench_norm
bench_bench_norm_SOURCES = bench/bench_norm.c bench/bench_util.h
bench_bench_norm_LDADD = libpdlang-internal.la $(PD_LIBS)
EXTRA_DIST += bench/torch_resnet.py bench/torch_train.py bench/torch_conv.py bench/torch_rnn.py bench/bench_rnn.sh \
	bench/README
EXTRA_DIST += bench/bench_attention.sh bench/torch_attention.py bench/infer_compare.py
EXTRA_DIST += bench/bench_gated.sh bench/torch_gated.py bench/torch_char_lm.py bench/bench_device.sh \
	bench/torch_lstm_classify.py bench/torch_util.py

bench: bench/bench_kernels$(EXEEXT) bench/bench_exec$(EXEEXT)
	./bench/bench_kernels$(EXEEXT)
	./bench/bench_exec$(EXEEXT)
	./bench/bench_norm$(EXEEXT)
	./bench/bench_train$(EXEEXT)
	./bench/bench_rnn_op$(EXEEXT)
	$(SHELL) $(srcdir)/bench/bench_rnn.sh ./pdlang$(EXEEXT)
	$(SHELL) $(srcdir)/bench/bench_gated.sh ./pdlang$(EXEEXT)
	./bench/bench_rnn$(EXEEXT) mem
	$(SHELL) $(srcdir)/bench/bench_attention.sh ./pdlang$(EXEEXT)
bench: bench/bench_train$(EXEEXT) bench/bench_rnn$(EXEEXT) bench/bench_norm$(EXEEXT) pdlang$(EXEEXT)
.PHONY: bench
# Data-parallel training (bench/bench_mpi.sh runs them; with --with-mpi only): the gradient
# buckets against MPI_Allreduce.
if PD_HAVE_MPI
noinst_PROGRAMS += bench/bench_allreduce
bench_bench_allreduce_SOURCES = bench/bench_allreduce.c
bench_bench_allreduce_LDADD = libpdlang-internal.la $(PD_LIBS)
endif
EXTRA_DIST += bench/bench_mpi.sh bench/bench_allreduce.c bench/bench_overlap.sh bench/mpi_nets.sh
