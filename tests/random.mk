# tests/random.mk -- the random ops of the language and the compile-time for over actions
# (issue 27).
#   tests/ops/test_kern_random: sampling_id's classes against the given probabilities (chi-square
#     with fixed seeds), Fluid's rule for rows that do not sum to 1, seeds, errors;
#   tests/golden/run/random_moments.pd: uniform_random, gaussian_random and sample from a script,
#     their moments and frequencies against the formulas (tolerances of a few standard errors,
#     seeded);
#   tests/golden/check/random_errors.pd: the errors of the random functions and of str.
#   tests/golden/check/for_*.pd: the errors of a for over a compile-time list (an option, an
#     iterable that is neither a list nor sequences, an error in the body reported once);
#   tests/golden/run/for_stages.pd: training staged in a compile-time for, the weight after each
#     stage against a hand computation; tests/golden/summary/for_layers.pd: layers called in
#     the loop make parameters on each pass;
#   tests/run/for_unroll.sh: the unrolled loop prints what the explicit calls print;
#   tests/run/char_rnn.sh: examples/char_rnn.pd in a short form samples a line of text.
check_PROGRAMS += tests/ops/test_kern_random
tests_ops_test_kern_random_SOURCES = tests/ops/test_kern_random.c
tests_ops_test_kern_random_LDADD = libpdlang-internal.la $(PD_LIBS)
TESTS += tests/ops/test_kern_random
PD_RANDOM_GOLDEN_TESTS = tests/golden/check/random_errors.pd
TESTS += $(PD_RANDOM_GOLDEN_TESTS) tests/golden/run/random_moments.pd
EXTRA_DIST += $(PD_RANDOM_GOLDEN_TESTS) $(PD_RANDOM_GOLDEN_TESTS:.pd=.err) \
	tests/golden/run/random_moments.pd
PD_FOR_GOLDEN_TESTS = tests/golden/check/for_list_option.pd tests/golden/check/for_not_list.pd \
	tests/golden/check/for_unrolled_error.pd
TESTS += $(PD_FOR_GOLDEN_TESTS) tests/golden/run/for_stages.pd \
	tests/golden/summary/for_layers.pd tests/run/for_unroll.sh
EXTRA_DIST += $(PD_FOR_GOLDEN_TESTS) $(PD_FOR_GOLDEN_TESTS:.pd=.err) \
	tests/golden/run/for_stages.pd tests/golden/run/for_stages.out \
	tests/golden/summary/for_layers.pd tests/golden/summary/for_layers.out tests/run/for_unroll.sh
TESTS += tests/run/char_rnn.sh
EXTRA_DIST += tests/run/char_rnn.sh
