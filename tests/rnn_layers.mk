# tests/rnn_layers.mk -- the recurrent layers of stdlib/layers.pd and what they need:
#   tests/vm/test_rnn_layers: values against a reference written from the equations (lengths
#     1, 4, 2; reverse; initial states per sequence, shared or none), the input projection
#     hoisted out of the loop (and made an fc op by train's passes), and fp64 finite-difference
#     gradients as written, hoisted and as train rewrites it (also inside a loop over sequences
#     of sequences);
#   tests/golden/run/rnn_layers.pd: hidden 2, length 3, fixed weights, against plain Python
#     (the script is in the file);
#   tests/golden/run/rnn_reverse.pd, tests/golden/check/for_option.pd: what the layers need of
#     the language, `for (t in x, reverse = ...)` (values by hand, the option's errors) and a
#     tensor compared with none (decided when compiling);
#   tests/run/lstm_classify.sh: examples/lstm_classify.pd with 6 epochs instead of 20 learns.
check_PROGRAMS += tests/vm/test_rnn_layers
tests_vm_test_rnn_layers_SOURCES = tests/vm/test_rnn_layers.c tests/vm/fp64.h
tests_vm_test_rnn_layers_LDADD = libpdlang-internal.la $(PD_LIBS)
PD_RNN_LAYERS_GOLDEN = tests/golden/run/rnn_layers.pd tests/golden/run/rnn_reverse.pd \
	tests/golden/check/for_option.pd
TESTS += tests/vm/test_rnn_layers $(PD_RNN_LAYERS_GOLDEN) tests/run/lstm_classify.sh
EXTRA_DIST += $(PD_RNN_LAYERS_GOLDEN) tests/run/lstm_classify.sh \
	tests/golden/run/rnn_layers.out tests/golden/run/rnn_reverse.out \
	tests/golden/check/for_option.err
