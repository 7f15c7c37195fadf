# tests/attention.mk -- the attention layers of stdlib/layers.pd and what they need of the
# language:
#   tests/golden/run/fold_math.pd, tests/golden/check/fold_math_errors.pd,
#     tests/golden/check/fail.pd: sqrt/exp/log/abs of a number at compile time, and fail().
PD_ATTENTION_GOLDEN = tests/golden/run/fold_math.pd tests/golden/check/fold_math_errors.pd \
	tests/golden/check/fail.pd
TESTS += $(PD_ATTENTION_GOLDEN)
EXTRA_DIST += $(PD_ATTENTION_GOLDEN) tests/golden/run/fold_math.out \
	tests/golden/check/fold_math_errors.err tests/golden/check/fail.err
