# tests/ops.mk -- unit tests of the op registry (vm/ops/ops.h): the table itself, op checking and
# defaults, and shape inference family by family. tests/ops/fixture.h builds the programs.
OPS_TESTS = tests/ops/test_opdefs tests/ops/test_opcheck tests/ops/test_infer_elementwise \
	tests/ops/test_infer_math tests/ops/test_infer_tensor tests/ops/test_infer_nn \
	tests/ops/test_infer_control
check_PROGRAMS += $(OPS_TESTS)
TESTS += $(OPS_TESTS)
EXTRA_DIST += tests/ops/fixture.h tests/ops/runop.h tests/ops/gradcheck.h

tests_ops_test_opdefs_SOURCES = tests/ops/test_opdefs.c
tests_ops_test_opdefs_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_opcheck_SOURCES = tests/ops/test_opcheck.c
tests_ops_test_opcheck_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_infer_elementwise_SOURCES = tests/ops/test_infer_elementwise.c
tests_ops_test_infer_elementwise_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_infer_math_SOURCES = tests/ops/test_infer_math.c
tests_ops_test_infer_math_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_infer_tensor_SOURCES = tests/ops/test_infer_tensor.c
tests_ops_test_infer_tensor_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_infer_nn_SOURCES = tests/ops/test_infer_nn.c
tests_ops_test_infer_nn_LDADD = libpdlang-internal.la $(PD_LIBS)
tests_ops_test_infer_control_SOURCES = tests/ops/test_infer_control.c
tests_ops_test_infer_control_LDADD = libpdlang-internal.la $(PD_LIBS)

# Every differentiable op has a passing fp64 finite-difference gradient test (it reruns the
# gradient tests, which record the ops they checked).
TESTS += tests/ops/grad_coverage.sh
EXTRA_DIST += tests/ops/grad_coverage.sh
