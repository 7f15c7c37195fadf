# tests/attention.mk -- the attention layers of stdlib/layers.pd (multi_head_attention,
# transformer_encoder_layer, causal_mask, positional_embedding, linear), the example
# transformer_classify.pd and what they need of the language:
#   tests/vm/test_attention: values against a reference written from paddle.nn's formulas
#     (padding and causal masks, bool and float, self- and cross-attention, pre- and post-norm),
#     and fp64 finite-difference gradients of every parameter;
#   tests/run/attention_errors.sh: bad arguments stop at the caller's .pd line;
#   tests/run/transformer_classify.sh: examples/transformer_classify.pd with 4 epochs learns;
#   tests/golden/run/fold_math.pd, tests/golden/check/fold_math_errors.pd,
#     tests/golden/check/fail.pd: sqrt/exp/log/abs of a number at compile time, and fail().
check_PROGRAMS += tests/vm/test_attention
tests_vm_test_attention_SOURCES = tests/vm/test_attention.c tests/vm/fp64.h tests/vm/fp64_grad.h
tests_vm_test_attention_LDADD = libpdlang-internal.la $(PD_LIBS)
PD_ATTENTION_GOLDEN = tests/golden/run/fold_math.pd tests/golden/check/fold_math_errors.pd \
	tests/golden/check/fail.pd
TESTS += tests/vm/test_attention tests/run/attention_errors.sh $(PD_ATTENTION_GOLDEN)
EXTRA_DIST += tests/run/attention_errors.sh $(PD_ATTENTION_GOLDEN) tests/golden/run/fold_math.out \
	tests/golden/check/fold_math_errors.err tests/golden/check/fail.err
TESTS += tests/run/transformer_classify.sh
EXTRA_DIST += tests/run/transformer_classify.sh examples/transformer_classify.pd \
	bench/torch_transformer_classify.py
