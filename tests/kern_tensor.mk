# tests/kern_tensor.mk -- kernel tests of the tensor, random, embedding, sequence, conv/pool and optimizer ops (vm/ops/create.c, shape.c, nn.c, sequence.c, optim.c), forward and gradient.
# Each test builds one op with tests/ops/runop.h, runs it through the executor, and compares the
# outputs with values computed in the test; tests/ops/gradcheck.h checks every gradient kernel
# against finite differences.
KERN_TENSOR_TESTS = tests/ops/test_kern_tensor tests/ops/test_kern_nn tests/ops/test_kern_optim
check_PROGRAMS += $(KERN_TENSOR_TESTS)
TESTS += tests/ops/test_kern_tensor tests/ops/test_kern_nn tests/ops/test_kern_optim

tests_ops_test_kern_tensor_SOURCES = tests/ops/test_kern_tensor.c
tests_ops_test_kern_tensor_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_kern_nn_SOURCES = tests/ops/test_kern_nn.c
tests_ops_test_kern_nn_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_kern_optim_SOURCES = tests/ops/test_kern_optim.c
tests_ops_test_kern_optim_LDADD = libpdlang-internal.la $(PD_LIBS)
