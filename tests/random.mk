# tests/random.mk -- the random ops of the language (issue 27).
#   tests/ops/test_kern_random: sampling_id's classes against the given probabilities (chi-square
#     with fixed seeds), Fluid's rule for rows that do not sum to 1, seeds, errors;
#   tests/golden/run/random_moments.pd: uniform_random, gaussian_random and sample from a script,
#     their moments and frequencies against the formulas (tolerances of a few standard errors,
#     seeded);
#   tests/golden/check/random_errors.pd: the errors of the random functions and of str.
check_PROGRAMS += tests/ops/test_kern_random
tests_ops_test_kern_random_SOURCES = tests/ops/test_kern_random.c
tests_ops_test_kern_random_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_random
PD_RANDOM_GOLDEN_TESTS = tests/golden/check/random_errors.pd
TESTS += $(PD_RANDOM_GOLDEN_TESTS) tests/golden/run/random_moments.pd
EXTRA_DIST += $(PD_RANDOM_GOLDEN_TESTS) $(PD_RANDOM_GOLDEN_TESTS:.pd=.err) \
	tests/golden/run/random_moments.pd
