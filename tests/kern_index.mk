# tests/kern_index.mk -- kernel tests of the shape and indexing ops (vm/ops/shape.c: flatten,
# squeeze2, unsqueeze2, stack, shape; vm/ops/index.c: slice, expand_v2, tile, gather, where,
# clip), forward values computed in the test and fp64 finite-difference gradients.
KERN_INDEX_TESTS = tests/ops/test_kern_index
check_PROGRAMS += $(KERN_INDEX_TESTS)
TESTS += $(KERN_INDEX_TESTS)

tests_ops_test_kern_index_SOURCES = tests/ops/test_kern_index.c
tests_ops_test_kern_index_LDADD = libpdlang-internal.la $(PD_LIBS)
