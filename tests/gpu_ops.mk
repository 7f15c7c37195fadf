# tests/gpu_ops.mk -- the CUDA kernels of issue 29's ops against the CPU backend's (each skips
# its comparison without a GPU; the argument checks both backends share run everywhere):
#   tests/kernels/test_cuda_ops: the element-wise losses (sigmoid_xent, smooth_l1, huber,
#     kldiv and their gradients), fp32 and fp64, odd sizes, every attribute, the GPU's sums
#     the same bits twice; dropout and its gradient, copy_rows, adaptive pooling and its
#     gradient bit for bit.
check_PROGRAMS += tests/kernels/test_cuda_ops
tests_kernels_test_cuda_ops_SOURCES = tests/kernels/test_cuda_ops.c tests/kernels/cuda_cmp.h \
	tests/kernels/kt.h
tests_kernels_test_cuda_ops_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_cuda_ops

#   tests/golden/run/gpu_ops.pd: the losses' gradients, lookup_table, split, concat and dropout
#     in one SGD step against gradients worked out by hand; tests/run/device.sh runs it on a
#     GPU too and compares what it prints with the CPU's (dropout's mask included).
TESTS += tests/golden/run/gpu_ops.pd
EXTRA_DIST += tests/golden/run/gpu_ops.pd tests/golden/run/gpu_ops.out
