# tests/rnn_fused.mk -- the fused gated recurrences (vm/ops/rnn_fused.c, made by
# vm/passes/fuse_gated.c): tests/ops/test_kern_rnn_fused runs fused_lstm and fused_gru as single
# ops (values against a reference written from the equations, variable lengths with an empty
# sequence, reverse, initial states per sequence / shared / absent, fp64 finite-difference
# gradients of every input, fp32, bad shapes). The fusion of the stdlib layers themselves, fused
# against the loop as written, is tests/vm/test_rnn_layers (tests/rnn_layers.mk).
# tests/run/char_lm.sh: examples/char_lm.pd (a two-layer LSTM language model) with 2 epochs
# instead of 20 learns and writes its line.
check_PROGRAMS += tests/ops/test_kern_rnn_fused
tests_ops_test_kern_rnn_fused_SOURCES = tests/ops/test_kern_rnn_fused.c tests/kernels/steps_backend.h
tests_ops_test_kern_rnn_fused_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_rnn_fused
# tests/ops/test_kern_rnn_op: PaddlePaddle's rnn op (vm/ops/rnn.c), every mode, 1 and 2 layers,
# one direction and both, padded lengths or none: values against a reference from Paddle's
# equations, fp64 finite-difference gradients of Input, PreState and WeightList, fp32, errors.
check_PROGRAMS += tests/ops/test_kern_rnn_op
tests_ops_test_kern_rnn_op_SOURCES = tests/ops/test_kern_rnn_op.c tests/kernels/steps_backend.h
tests_ops_test_kern_rnn_op_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_rnn_op
# tests/ops/paddle_rnn_check.py: the same reference against paddle.nn.LSTM / GRU, by hand.
EXTRA_DIST += tests/ops/paddle_rnn_check.py
TESTS += tests/run/char_lm.sh
EXTRA_DIST += tests/run/char_lm.sh
# tests/kernels/test_rnn_seq: the whole-sequence kernels behind fused_lstm, fused_gru and the
# rnn op, the CPU backend's (kernels/cpu/rnn_seq.c) and kernels/rnn_steps.c's composition (the
# CUDA backend's, over the CPU's entries), against a reference from the equations (forward and
# backpropagation through time by hand), at hidden sizes split across three threads unevenly,
# interleaved rows, reversed, fp64 and fp32; argument checks.
check_PROGRAMS += tests/kernels/test_rnn_seq
tests_kernels_test_rnn_seq_SOURCES = tests/kernels/test_rnn_seq.c tests/kernels/kt.h \
	tests/kernels/steps_backend.h
tests_kernels_test_rnn_seq_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_rnn_seq
