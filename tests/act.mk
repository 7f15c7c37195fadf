# tests/act.mk -- kernel tests of the activations with parameters (vm/ops/activation.c: gelu,
# leaky_relu, elu, silu, swish, softplus, relu6, hard_swish, log_sigmoid): values against the
# formulas, large |x|, attributes, bad input, the backend's checks and finite-difference
# gradients (tests/ops/gradcheck.h).
check_PROGRAMS += tests/ops/test_kern_act
TESTS += tests/ops/test_kern_act
tests_ops_test_kern_act_SOURCES = tests/ops/test_kern_act.c tests/ops/test_kern_math.h
tests_ops_test_kern_act_LDADD = libpdlang-internal.la $(PD_LIBS)

# tests/golden/run/activations.pd: the activations as functions and as `act = ...` of the
# stdlib layers, against values computed with Python's math module (the script is in the file).
TESTS += tests/golden/run/activations.pd
EXTRA_DIST += tests/golden/run/activations.pd tests/golden/run/activations.out
