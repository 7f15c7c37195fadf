# tests/norm.mk -- the normalisation ops (vm/ops/norm.c, kernels/cpu/norm.c):
#   tests/ops/test_kern_norm: batch_norm and layer_norm against their formulas, their gradients
#     against finite differences, bad input.
check_PROGRAMS += tests/ops/test_kern_norm
tests_ops_test_kern_norm_SOURCES = tests/ops/test_kern_norm.c
tests_ops_test_kern_norm_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_norm

