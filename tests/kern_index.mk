# tests/kern_index.mk -- tests of the shape and indexing ops (vm/ops/shape.c: flatten,
# squeeze2, unsqueeze2, stack, shape; vm/ops/index.c: slice, expand_v2, tile, gather, where,
# clip), forward values computed in the test and fp64 finite-difference gradients.
KERN_INDEX_TESTS = tests/ops/test_kern_index
check_PROGRAMS += $(KERN_INDEX_TESTS)
TESTS += $(KERN_INDEX_TESTS)

tests_ops_test_kern_index_SOURCES = tests/ops/test_kern_index.c
tests_ops_test_kern_index_LDADD = libpdlang-internal.la $(PD_LIBS)

# The ops from .pd (tensor subscripts and the builtins), values and one SGD step computed by hand
# in the script, and an out-of-range subscript's error at its line.
PD_INDEX_RUN_TESTS = tests/golden/run/shape_index_ops.pd tests/golden/run/shape_index_bad.pd
TESTS += $(PD_INDEX_RUN_TESTS)
EXTRA_DIST += $(PD_INDEX_RUN_TESTS) tests/golden/run/shape_index_ops.out \
	tests/golden/run/shape_index_ops.csv tests/golden/run/shape_index_bad.err

# `pdlang check`: bad tensor subscripts and a bad squeeze, each at its line.
PD_INDEX_CHECK_TESTS = tests/golden/check/tensor_subscripts.pd
TESTS += $(PD_INDEX_CHECK_TESTS)
EXTRA_DIST += $(PD_INDEX_CHECK_TESTS) tests/golden/check/tensor_subscripts.err
