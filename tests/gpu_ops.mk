# tests/gpu_ops.mk -- the CUDA kernels of issue 29's ops against the CPU backend's (each skips
# its comparison without a GPU; the argument checks both backends share run everywhere):
#   tests/kernels/test_cuda_ops: the element-wise losses (sigmoid_xent, smooth_l1, huber,
#     kldiv and their gradients), fp32 and fp64, odd sizes, every attribute, the GPU's sums
#     the same bits twice; dropout and its gradient bit for bit.
check_PROGRAMS += tests/kernels/test_cuda_ops
tests_kernels_test_cuda_ops_SOURCES = tests/kernels/test_cuda_ops.c tests/kernels/cuda_cmp.h \
	tests/kernels/kt.h
tests_kernels_test_cuda_ops_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_cuda_ops
