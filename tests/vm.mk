# tests/vm.mk -- unit tests of kernels/ (each kernel against a naive reference, gradients by
# finite differences) and of vm/ tensors and scopes.
EXTRA_DIST += tests/kernels/kt.h

check_PROGRAMS += tests/kernels/test_elementwise
tests_kernels_test_elementwise_SOURCES = tests/kernels/test_elementwise.c tests/kernels/kt.h
tests_kernels_test_elementwise_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_elementwise

check_PROGRAMS += tests/kernels/test_reduce
tests_kernels_test_reduce_SOURCES = tests/kernels/test_reduce.c tests/kernels/kt.h
tests_kernels_test_reduce_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_reduce

check_PROGRAMS += tests/kernels/test_conv
tests_kernels_test_conv_SOURCES = tests/kernels/test_conv.c tests/kernels/kt.h
tests_kernels_test_conv_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_conv

check_PROGRAMS += tests/kernels/test_pool
tests_kernels_test_pool_SOURCES = tests/kernels/test_pool.c tests/kernels/kt.h
tests_kernels_test_pool_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_pool

check_PROGRAMS += tests/kernels/test_index
tests_kernels_test_index_SOURCES = tests/kernels/test_index.c tests/kernels/kt.h
tests_kernels_test_index_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_index

# The optimizer updates' vector instances (kernels/cpu/optim_t.h) against the formulas' bits.
check_PROGRAMS += tests/kernels/test_optim
tests_kernels_test_optim_SOURCES = tests/kernels/test_optim.c tests/kernels/kt.h
tests_kernels_test_optim_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_optim

# fastmath.h's vector e^x, tanh and logistic function (the fp32 kernels') against libm, in ulp.
check_PROGRAMS += tests/kernels/test_fastmath
tests_kernels_test_fastmath_SOURCES = tests/kernels/test_fastmath.c
tests_kernels_test_fastmath_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_fastmath

# The CUDA backend against the CPU backend, entry by entry; built in every build: skipped
# without a GPU, and in a build without CUDA it checks that the device API says so.
check_PROGRAMS += tests/kernels/test_cuda_backend
tests_kernels_test_cuda_backend_SOURCES = tests/kernels/test_cuda_backend.c tests/kernels/kt.h \
	tests/kernels/cuda_cmp.h
tests_kernels_test_cuda_backend_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/kernels/test_cuda_backend

check_PROGRAMS += tests/vm/test_tensor
tests_vm_test_tensor_SOURCES = tests/vm/test_tensor.c
tests_vm_test_tensor_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_tensor

check_PROGRAMS += tests/vm/test_scope
tests_vm_test_scope_SOURCES = tests/vm/test_scope.c
tests_vm_test_scope_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_scope

# tests/vm/test_hoist: the loop hoisting pass (vm/passes/hoist.h): what moves, same cost, gradients
# against the unhoisted program and finite differences (fp64).
check_PROGRAMS += tests/vm/test_hoist
tests_vm_test_hoist_SOURCES = tests/vm/test_hoist.c tests/vm/fp64.h
tests_vm_test_hoist_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_hoist

# tests/vm/test_step_memory: live-byte accounting of the host allocator; a training step of an
# RNN gives back every byte it allocated once its scope tree is gone, and peaks below what the
# whole tree holds (the executor releases temporaries after their last use).
check_PROGRAMS += tests/vm/test_step_memory
tests_vm_test_step_memory_SOURCES = tests/vm/test_step_memory.c
tests_vm_test_step_memory_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/vm/test_step_memory
