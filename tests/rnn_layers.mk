# tests/rnn_layers.mk -- the recurrent layers of stdlib/layers.pd and what they need:
#   tests/golden/run/rnn_reverse.pd, tests/golden/check/for_option.pd: what the layers need of
#     the language, `for (t in x, reverse = ...)` (values by hand, the option's errors) and a
#     tensor compared with none (decided when compiling).
PD_RNN_LAYERS_GOLDEN = tests/golden/run/rnn_reverse.pd tests/golden/check/for_option.pd
TESTS += $(PD_RNN_LAYERS_GOLDEN)
EXTRA_DIST += $(PD_RNN_LAYERS_GOLDEN) tests/golden/run/rnn_reverse.out \
	tests/golden/check/for_option.err
