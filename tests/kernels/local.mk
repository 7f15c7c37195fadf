# tests/kernels/local.mk -- the tests of kernels/: each entry of the CPU backend against a naive
# reference written in the test (kt.h: what they share), the CUDA backend against the CPU's.
#   test_elementwise, test_reduce, test_conv, test_pool, test_index: the entries of their names;
#   test_interp: interp2d and its gradient (the resize ops' entries), the GPU's against the CPU's
#     where a GPU opens;
#   test_detection: box_coder and yolo_box (the detection ops' entries) against references from
#     kernels.h's definitions, the GPU's against the CPU's where a GPU opens;
#   test_optim: the optimizer updates' vector instances (kernels/cpu/optim_t.h) against the
#     formulas' bits; unscale (fp16 loss scaling) exactly, its flag, its checks;
#   test_fastmath: fastmath.h's vector e^x, tanh and logistic function (the fp32 kernels') against
#     libm, in ulp;
#   test_rnn_seq: the whole-sequence kernels behind fused_lstm, fused_gru and the rnn op, the CPU
#     backend's (kernels/cpu/rnn_seq.c) and kernels/rnn_steps.c's composition (the CUDA backend's,
#     over the CPU's entries: steps_backend.h), against a reference from the equations (forward
#     and backpropagation through time by hand), at hidden sizes split across three threads
#     unevenly, interleaved rows, reversed, fp64 and fp32; argument checks;
#   test_gemm_lp: the low-precision products of mixed precision (gemm_lp: AMX and the fallback)
#     against products of the rounded operands and fp32's, and the bf16/fp16 conversions against
#     the CPU's instructions;
#   test_cuda_backend, test_cuda_ops: the CUDA backend against the CPU backend, entry by entry
#     (fp32 to 1e-5 and fp64 to 1e-12 of the largest value; the bit-exact entries bit for bit;
#     cuda_cmp.h); built in every build: they skip their comparisons without a GPU, and in a
#     build without CUDA check that the device API says so. The ops on the GPU are checked op
#     by op by tests/vm/ops/test_optable.
KERNELS_TESTS = tests/kernels/test_elementwise tests/kernels/test_reduce tests/kernels/test_conv \
	tests/kernels/test_pool tests/kernels/test_index tests/kernels/test_optim \
	tests/kernels/test_fastmath tests/kernels/test_rnn_seq tests/kernels/test_cuda_backend \
	tests/kernels/test_cuda_ops tests/kernels/test_interp tests/kernels/test_gemm_lp \
	tests/kernels/test_detection
check_PROGRAMS += $(KERNELS_TESTS)
TESTS += $(KERNELS_TESTS)
EXTRA_DIST += tests/kernels/kt.h tests/kernels/cuda_cmp.h tests/kernels/steps_backend.h
