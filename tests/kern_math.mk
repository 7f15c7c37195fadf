# tests/kern_math.mk -- kernel tests of the arithmetic, reduction, loss and comparison ops
# (vm/ops/elementwise.c, matmul.c, reduce.c, loss.c), forward and gradient: each op runs through the real executor
# (tests/ops/runop.h) against values computed in the test, and every differentiable one passes
# a finite-difference gradient check (tests/ops/gradcheck.h).
#   test_kern_math         unary ops, scale, cast, sum, mean
#   test_kern_math_matmul  mul, matmul_v2
#   test_kern_elementwise  elementwise_*, comparisons, logical ops
#   test_kern_reduce       reduce_*, arg_max, top_k
#   test_kern_loss         softmax, log_softmax, cross_entropy, softmax_with_cross_entropy,
#                          accuracy
check_PROGRAMS += tests/ops/test_kern_math tests/ops/test_kern_math_matmul \
	tests/ops/test_kern_elementwise tests/ops/test_kern_reduce tests/ops/test_kern_loss
TESTS += tests/ops/test_kern_math tests/ops/test_kern_math_matmul \
	tests/ops/test_kern_elementwise tests/ops/test_kern_reduce tests/ops/test_kern_loss

tests_ops_test_kern_math_SOURCES = tests/ops/test_kern_math.c tests/ops/test_kern_math.h
tests_ops_test_kern_math_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_kern_math_matmul_SOURCES = tests/ops/test_kern_math_matmul.c tests/ops/test_kern_math.h
tests_ops_test_kern_math_matmul_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_kern_elementwise_SOURCES = tests/ops/test_kern_elementwise.c tests/ops/test_kern_math.h
tests_ops_test_kern_elementwise_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_kern_reduce_SOURCES = tests/ops/test_kern_reduce.c tests/ops/test_kern_math.h
tests_ops_test_kern_reduce_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_kern_loss_SOURCES = tests/ops/test_kern_loss.c tests/ops/test_kern_math.h
tests_ops_test_kern_loss_LDADD = libpdlang-internal.la $(PD_LIBS)
